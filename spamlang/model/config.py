"""`ModelConfig`, the named presets and the analytic parameter count.

Pure Python (no JAX import), so the CLI and the sweep code build and validate one cheaply.
Width family `<base>-w<D>` (base `tiny`, `small` or `medium`; e.g. `tiny-w64`): the base preset
at d_model = D with only the width moved (`preset_fields`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from fractions import Fraction
from typing import Any

from spamlang import fields
from spamlang.errors import UserError

_DTYPES = ("float32", "bfloat16")
# The head specs (R: rank or hidden width, K: mixture components), as `--help` lists them.
HEAD_FORMS = ("softmax", "lowrank:R", "mos:K", "mlp:R")
KERNELS = ("xla", "cpu")  # spamlang.model.kernels', named where no JAX is imported

# The base presets (`preset_fields`); vocab_size, tying, head and the rest are the run's.
PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(
        d_model=16, n_layers=2, n_heads=2, n_kv_heads=1, d_ff=64, max_seq_len=2048, init_std=0.25
    ),
    # Laptop-CPU sweeps: head_dim 16, grouped-query attention kept (4 query / 2 KV heads).
    "small": dict(
        d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, d_ff=256, max_seq_len=2048, init_std=0.125
    ),
    "medium": dict(
        d_model=128,
        n_layers=4,
        n_heads=4,
        n_kv_heads=2,
        d_ff=512,
        max_seq_len=2048,
        init_std=1 / math.sqrt(128),
    ),
    # The paper's model: the SmolLM2-135M shape, 106,203,456 non-embedding parameters.
    "smollm2-106m": dict(
        d_model=576,
        n_layers=30,
        n_heads=9,
        n_kv_heads=3,
        d_ff=1536,
        norm_eps=1e-5,
        rope_theta=100_000.0,
        max_seq_len=8192,
        init_std=1 / math.sqrt(576),
    ),
}

# Bases of the width family `<base>-w<D>`; smollm2-106m is a fixed shape to reproduce.
WIDTH_BASES = ("tiny", "small", "medium")
# The base takes the last "-w", so that a malformed width ("tiny-w-16") reads as one.
_WIDTH_NAME = re.compile(r"^(?P<base>.+)-w(?P<width>.*)$")


def preset_names() -> str:
    steps = ", ".join(str(_width_step(base)) for base in WIDTH_BASES)
    return (
        f"{', '.join(PRESETS)}, and <base>-w<D> for base {', '.join(WIDTH_BASES)} "
        f"(the width family; D a multiple of {steps} respectively)"
    )


def preset_fields(name: str) -> dict[str, Any]:
    """The ModelConfig fields of preset `name`, a base or `<base>-w<D>`: every lookup goes here."""
    if isinstance(name, str) and name in PRESETS:
        return dict(PRESETS[name])
    match = _WIDTH_NAME.match(name) if isinstance(name, str) else None
    if match is None or match["base"] not in PRESETS:
        raise UserError(f"unknown model preset {name!r}; known presets: {preset_names()}")
    base, width = match["base"], match["width"]
    if base not in WIDTH_BASES:
        raise UserError(
            f"preset {name!r}: {base} has no width family (a fixed shape); "
            f"width families: {', '.join(f'{b}-w<D>' for b in WIDTH_BASES)}"
        )
    if not re.fullmatch(r"[1-9][0-9]*", width):
        raise UserError(
            f"preset {name!r}: the width after '-w' must be a positive integer "
            f"like 64; {_valid_widths(base)}"
        )
    # Only the width moves (head_dim, KV ratio, d_ff / D kept); 1 / sqrt(D) keeps rows' norms.
    fields, d_model = dict(PRESETS[base]), int(width)
    head_dim = fields["d_model"] // fields["n_heads"]
    kv_ratio = Fraction(fields["n_kv_heads"], fields["n_heads"])  # KV heads per query head
    if d_model % head_dim:
        raise UserError(
            f"preset {name!r}: D={d_model} is not a positive multiple of {base}'s "
            f"head_dim {head_dim}; {_valid_widths(base)}"
        )
    n_heads = d_model // head_dim
    if n_heads % kv_ratio.denominator:
        raise UserError(
            f"preset {name!r}: {n_heads} heads cannot keep {base}'s "
            f"{kv_ratio.denominator} query heads per KV head; {_valid_widths(base)}"
        )
    d_ff = Fraction(d_model * fields["d_ff"], fields["d_model"])
    if d_ff.denominator != 1:  # no base has such a ratio today; never round it silently
        raise UserError(f"preset {name!r}: d_ff = {d_ff} is not an integer")
    fields.update(
        d_model=d_model,
        n_heads=n_heads,
        n_kv_heads=int(n_heads * kv_ratio),
        d_ff=int(d_ff),
        init_std=1 / math.sqrt(d_model),
    )
    return fields


def model_field(config: dict, name: str) -> Any:
    """A model field as a config.json saw it: override, preset, default."""
    try:  # a width-family name (tiny-w64) resolves to its own d_model, not the base's
        preset = preset_fields(config.get("preset"))
    except UserError:  # a preset this version does not know: fall back to the defaults
        preset = {}
    defaults = {f.name: f.default for f in dataclasses.fields(ModelConfig)}
    model = config.get("model", config.get("model_overrides"))  # its name before 2026-12
    return {**defaults, **preset, **(model or {})}.get(name)


def _width_step(base: str) -> int:
    """The smallest width of `base`'s family: head_dim x query heads per KV head."""
    fields = PRESETS[base]
    ratio = Fraction(fields["n_kv_heads"], fields["n_heads"])
    return fields["d_model"] // fields["n_heads"] * ratio.denominator


def _valid_widths(base: str) -> str:
    step = _width_step(base)
    return f"{base}-w<D> takes D = {step}, {2 * step}, {3 * step}, ... (multiples of {step})"


_HEAD_ARGS = {"lowrank": "rank r", "mos": "number of mixture components k", "mlp": "hidden width r"}


def parse_head(head: str) -> tuple[str, int]:
    """ "softmax" -> ("softmax", 0), "mos:4" -> ("mos", 4)."""
    if not isinstance(head, str):
        raise UserError(
            f"head must be a string like 'softmax', 'lowrank:64', 'mos:4' or "
            f"'mlp:256', got {head!r}"
        )
    kind, sep, arg = head.partition(":")
    if kind == "softmax" and not sep:
        return "softmax", 0
    if kind in _HEAD_ARGS and sep:
        if not re.fullmatch(r"[1-9][0-9]*", arg.strip()):
            raise UserError(f"head {head!r}: the {_HEAD_ARGS[kind]} must be an integer >= 1")
        return kind, int(arg)
    raise UserError(
        f"head must be 'softmax', 'lowrank:R', 'mos:K' or 'mlp:R' (R, K >= 1), got {head!r}"
    )


def rank_of_head(head: str, d_model: int, vocab_size: int) -> int:
    """Independent logit vectors the head makes: lowrank min(r, D), mlp min(r, V)."""
    kind, r = parse_head(head)
    width = {"lowrank": min(r, d_model), "mlp": r}.get(kind, d_model)
    return min(width, vocab_size)


_UNTIED = {
    "lowrank": "W = A B",
    "mlp": "its output matrix A is V x R, not the V x d_model embedding",
}

# Limits of single fields (`fields.check`); checks across fields are in `__post_init__`.
_COUNTS = "d_model embed_dim n_layers n_heads n_kv_heads d_ff max_seq_len"
_LIMITS: dict[str, dict] = {
    "vocab_size": dict(ge=2),
    **{name: dict(ge=1) for name in _COUNTS.split()},
    **{name: dict(gt=0) for name in ("rope_theta", "norm_eps", "init_std")},
    **{name: dict(choices=_DTYPES) for name in ("dtype", "param_dtype")},
    "kernels": dict(choices=KERNELS),
}


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """A Llama-style decoder: pre-norm RMSNorm, RoPE, grouped-query attention, SwiGLU, no biases."""

    vocab_size: int  # V: number of token ids; no default, it is a run parameter
    d_model: int = 64  # D: width of the residual stream and of the hidden states the head sees
    embed_dim: int | None = None  # e: width of the input embedding (None: d_model); another
    #   width projects E up by a learned `embed_proj`, varying input capacity apart from D
    n_layers: int = 2  # number of Transformer blocks
    n_heads: int = 4  # query heads; head_dim = d_model // n_heads (must be even for RoPE)
    n_kv_heads: int = 2  # key/value heads (grouped-query attention); must divide n_heads
    d_ff: int = 256  # hidden width of the SwiGLU MLP
    rope_theta: float = 10_000.0  # RoPE base frequency (Llama 2 uses 1e4, SmolLM2 1e5)
    norm_eps: float = 1e-5  # RMSNorm epsilon, added to the mean square before the rsqrt
    max_seq_len: int = 2048  # longest sequence (training or decoding) the model accepts
    init_std: float = 0.02  # std of the normal init; the factored heads and embed_proj derive
    #   theirs from it, so that logits and stream start at the plain model's scale
    tie_embeddings: bool = False  # output matrix W = input embedding E (softmax and mos heads)
    head: str = "softmax"  # "softmax", "lowrank:R", "mos:K" or "mlp:R" (spamlang.model.heads)
    residual: bool = True  # False: each sublayer's output replaces the stream (see Transformer)
    dtype: str = "float32"  # compute dtype of the matmuls; norms, softmax and loss stay float32
    param_dtype: str = "float32"  # storage dtype of the parameters
    kernels: str = "xla"  # "xla": backend-neutral; "cpu": layouts tuned for XLA:CPU

    def __post_init__(self):
        fields.check_dataclass(self, limits=_LIMITS)
        if self.d_model % self.n_heads:
            raise UserError(
                f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})"
            )
        if self.n_heads % self.n_kv_heads:
            raise UserError(
                f"n_heads ({self.n_heads}) must be divisible by n_kv_heads ({self.n_kv_heads})"
            )
        if self.head_dim % 2:
            raise UserError(
                f"head_dim = d_model / n_heads must be even for RoPE, got {self.head_dim}"
            )
        if self.embed_projected and self.tie_embeddings:
            raise UserError(
                f"embed_dim {self.embed_dim} differs from d_model {self.d_model}, which a tied "
                "head cannot use (it needs a V x d_model embedding); use tie_embeddings=False"
            )
        kind = self.head_kind
        if kind in _UNTIED and self.tie_embeddings:
            raise UserError(
                f"head '{kind}:R' is untied by construction ({_UNTIED[kind]}); "
                f"use tie_embeddings=False"
            )

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def embed_width(self) -> int:
        return self.d_model if self.embed_dim is None else self.embed_dim

    @property
    def embed_projected(self) -> bool:
        """The embedding is V x e and a learned e x d_model `embed_proj` follows it."""
        return self.embed_width != self.d_model

    @property
    def head_kind(self) -> str:
        return parse_head(self.head)[0]

    @property
    def head_arg(self) -> int:
        """The R of "lowrank:R" and "mlp:R", the K of "mos:K", 0 for "softmax"."""
        return parse_head(self.head)[1]

    @property
    def head_rank(self) -> int:
        return rank_of_head(self.head, self.d_model, self.vocab_size)

    def replace(self, **changes) -> ModelConfig:
        _check_fields(changes)
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> ModelConfig:
        _check_fields(data)
        return cls(**data)

    @classmethod
    def preset(cls, name: str, **overrides) -> ModelConfig:
        """The preset `name` with `overrides` applied; `vocab_size` is required."""
        fields = preset_fields(name)
        _check_fields(overrides)
        if "vocab_size" not in overrides:
            raise UserError(f"preset {name!r} needs vocab_size (it is a run parameter)")
        return cls(**{**fields, **overrides})


def _check_fields(values: dict) -> None:
    known = {f.name for f in dataclasses.fields(ModelConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise UserError(
            f"unknown model field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )


def count_params(config: ModelConfig) -> dict[str, int]:
    """Parameter counts, analytic: "embedding", "head" (0 tied softmax), "non_embedding" (the
    backbone, the same for every head and tying), "total"."""
    D, V, F, hd = config.d_model, config.vocab_size, config.d_ff, config.head_dim
    attn = D * config.n_heads * hd * 2 + D * config.n_kv_heads * hd * 2  # wq, wo, wk, wv
    block = attn + 3 * D * F + 2 * D  # SwiGLU (gate, up, down) and two RMSNorm scales
    backbone = config.n_layers * block + D  # + the final norm
    kind, arg = config.head_kind, config.head_arg
    if kind == "softmax":
        head = 0 if config.tie_embeddings else V * D
    elif kind in ("lowrank", "mlp"):
        head = V * arg + arg * D
    else:
        head = D * arg * D + D * arg + (0 if config.tie_embeddings else V * D)
    e = config.embed_width
    embedding = V * e + (e * D if config.embed_projected else 0)
    return {
        "embedding": embedding,
        "head": head,
        "non_embedding": backbone,
        "total": embedding + head + backbone,
    }
