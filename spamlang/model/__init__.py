"""The Transformer LM: config and presets, the decoder with four heads, cached generation,
Llama-family Hugging Face checkpoints.

    from spamlang.model import ModelConfig, Transformer, generate, load_hf
    config = ModelConfig.preset("tiny", vocab_size=256, head="mos:4")
    model = Transformer(config, rngs=nnx.Rngs(0))
    logp_BxLxV = model(tokens_BxL)
    model = load_hf("SmolLM2-135M", vocab_size=4096)   # a Llama checkpoint directory (model.hf)
"""

from spamlang.model.config import PRESETS, ModelConfig, count_params, parse_head
from spamlang.model.decode import generate
from spamlang.model.hf import load_hf
from spamlang.model.transformer import Transformer

__all__ = ["PRESETS", "ModelConfig", "Transformer", "count_params", "generate", "load_hf",
           "parse_head"]
