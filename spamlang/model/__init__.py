"""The Transformer LM: config and presets, the decoder with three heads, cached generation.

    from spamlang.model import ModelConfig, Transformer, generate
    config = ModelConfig.preset("tiny", vocab_size=256, head="mos:4")
    model = Transformer(config, rngs=nnx.Rngs(0))
    logp_BxLxV = model(tokens_BxL)
"""

from spamlang.model.config import PRESETS, ModelConfig, count_params, parse_head
from spamlang.model.decode import generate
from spamlang.model.transformer import Transformer

__all__ = ["PRESETS", "ModelConfig", "Transformer", "count_params", "generate", "parse_head"]
