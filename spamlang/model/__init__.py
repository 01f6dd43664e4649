"""The Transformer LM: config and presets, the decoder with four heads, cached generation,
Llama-family Hugging Face checkpoints (names imported lazily).

    from spamlang.model import ModelConfig, Transformer, load_hf
    model = Transformer(ModelConfig.preset("tiny", vocab_size=256, head="mos:4"), rngs=nnx.Rngs(0))
    model = load_hf("SmolLM2-135M", vocab_size=4096)  # a Llama checkpoint directory
"""

import importlib

_EXPORTS = {
    "PRESETS": "config",
    "ModelConfig": "config",
    "count_params": "config",
    "parse_head": "config",
    "generate": "transformer",
    "load_hf": "hf_checkpoint",
    "Transformer": "transformer",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"spamlang.model.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'spamlang.model' has no attribute {name!r}")
