"""`TrainConfig`: everything needed to rerun one training run, JSON round-trippable.

The paper's appendix with its optimizer, batch and schedule settings was not available, so the
optimizer defaults are a common, documented AdamW recipe for small decoder LMs (GPT-3 / Llama /
nanoGPT style): AdamW with betas (0.9, 0.95), eps 1e-8, decoupled weight decay 0.1 on matrices
only, linear warmup over the first 5% of steps then cosine decay to 0.1 x the peak LR, and
gradient clipping at global norm 1.0. Every one of them is a field and can be changed.

Kernels (`kernels`): "xla" runs the model's plain path (`x @ w`, `jax.nn.dot_product_attention`,
`jnp.argmax`), which XLA fuses and dispatches best on GPUs and TPUs; "cpu" swaps in layouts
tuned for XLA:CPU (`spamlang.model.kernels`) and automatic micro-batches; "auto" (default)
picks "cpu" exactly when the mesh's devices are CPUs, in one place (`spamlang.train.step`).

Micro-batches (`micro_batch`): the step can split its batch into micro-batches scanned one
after another, averaging their gradients; the update is the same up to float rounding. The
default (0, auto) uses them with the cpu kernels only, sized so that a micro-batch's widest
activation stays cache-sized (`spamlang.train.step.micro_batches`): at the `small` shape a
whole 4,096-token batch streams every [tokens, d_ff] activation through memory, and
512-token micro-batches measured 1.4x the throughput on the 2-core development machine.

Starting from a checkpoint (`init_from`, a local Hugging Face Llama checkpoint directory,
`spamlang.model.hf`): its config.json fixes the architecture, which is written into
`model_overrides` (so config.json records it, results.csv shows the real d_model, and a run
rereads only its own checkpoints: a resumed run, or `load_run`, works after the directory is
gone); `preset` then has no effect, and a model override that contradicts the checkpoint is
an error. The run's own fields keep their meaning: the first `vocab_size` token ids of the
checkpoint are kept (at most its vocabulary), a tied checkpoint may train tied or untied (the
untied head starting as a copy of the embedding), an untied one only untied, `head` must be
softmax, `seq_len` at most its max_position_embeddings. Its weights replace the random init
at step 0 only; `seed` still picks the data. A sweep over `init_from` with checkpoints of
different shapes leaves it out of the base config (a base built with one checkpoint carries
that one's architecture in its overrides); `init_from: None` on such a base is a random init
of the same architecture.

This module imports no JAX at top level (the CLI and the sweep code build configs cheaply); the
language and model configs it validates against are plain Python too.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import re
from pathlib import Path
from typing import Any

from spamlang.errors import UserError

SCHEDULES = ("constant", "cosine", "wsd")
# spamlang.train.optim's names, repeated here so that building a config imports no JAX
# (tests/test_optimizers.py checks that the two agree).
OPTIMIZERS = ("adamw", "lazy_adamw", "sgd", "adafactor")
ADAM_FAMILY = ("adamw", "lazy_adamw")
# Fields that enter only a run's initial state (its seed, and the optimizer hyperparameters
# held as arrays in the optimizer state): runs that differ only in these share one compiled
# program and train together as members of one vmapped group.
MEMBER_FIELDS = ("lr", "seed", "b1", "b2", "eps", "momentum")
KERNELS = ("auto", "xla", "cpu")
DTYPES = ("float32", "bfloat16")

# Model fields that TrainConfig owns itself (they are sweep axes), so they may not hide in
# model_overrides where a sweep could not see them.
_OWN_MODEL_FIELDS = ("vocab_size", "tie_embeddings", "head", "residual", "dtype")

_INIT_FROM_HELP = (
    "start from this local Hugging Face Llama checkpoint (config.json + *.safetensors): its "
    "architecture replaces the preset (written into model_overrides) and its weights the random "
    "init at step 0 (a resumed run restores its own checkpoints). The run keeps the first "
    "--vocab-size token ids (at most the checkpoint's); a tied checkpoint trains tied or untied "
    "(head = a copy of the embedding), an untied one untied only; head softmax only; '' for none "
    "(default: none)")

_SUFFIXES = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9}
_COUNT_RE = re.compile(r"^\s*([0-9][0-9_]*(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*([kKmMbB]?)\s*$")


def parse_count(value: Any) -> int:
    """A token count from an int or a string with an optional K / M / B suffix.

    Suffixes are decimal (K = 1e3, M = 1e6, B = 1e9), as in "41M tokens" in papers:
    parse_count("2M") == 2_000_000, parse_count("1.5K") == 1500, parse_count("1_048_576") == 1048576.
    The result must be a whole, non-negative number (UserError otherwise).
    """
    if isinstance(value, bool):
        raise UserError(f"a token count must be an integer like 1048576 or 2M, got {value!r}")
    if isinstance(value, numbers.Integral):
        count = int(value)
    elif isinstance(value, float) and value.is_integer():
        count = int(value)
    elif isinstance(value, str) and (m := _COUNT_RE.match(value)):
        number, suffix = m.group(1).replace("_", ""), m.group(2).upper()
        scaled = float(number) * _SUFFIXES[suffix] if ("." in number or "e" in number.lower()) \
            else int(number) * _SUFFIXES[suffix]
        if isinstance(scaled, float):
            if not scaled.is_integer():
                raise UserError(f"token count {value!r} is not a whole number")
            scaled = int(scaled)
        count = scaled
    else:
        raise UserError(f"a token count must be an integer like 1048576 or 2M (K/M/B = 1e3/1e6/1e9), "
                        f"got {value!r}")
    if count < 0:
        raise UserError(f"a token count must be >= 0, got {value!r}")
    return count


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """One training run: model, language, data shape, budget, optimizer, logging."""

    # --- model ---
    preset: str = "tiny"  # model preset; <base>-w<D> is the base at width D, the rest scaled
    init_from: str | None = dataclasses.field(default=None, metadata=dict(
        metavar="DIR", help=_INIT_FROM_HELP))  # HF Llama checkpoint: architecture, step-0 weights
    model_overrides: dict = dataclasses.field(default_factory=dict)  # other ModelConfig fields
    vocab_size: int = 1024  # V: the paper's smallest vocabulary, learnable on a CPU
    tie_embeddings: bool = False  # head W = input embedding E; the paper sweeps both
    head: str = "softmax"  # "softmax", "lowrank:R", "mos:K" or "mlp:R"; the paper's standard head
    residual: bool = True  # False: blocks replace the stream (vanishing-gradient experiments)
    # --- data ---
    language: str = "spam"  # spamlang.languages name; SpamLang is the paper's language
    language_params: dict = dataclasses.field(default_factory=dict)  # extra language params
    seq_len: int = 64  # L: SpamLang needs little context, and 64 keeps CPU runs fast
    batch_size: int = 32  # global batch (sequences per step), split over the devices
    micro_batch: int = 0  # sequences per gradient micro-batch (scanned, gradients averaged); 0: auto
    tokens: int = 1_048_576  # training budget; steps = tokens // (batch_size * seq_len)
    # --- optimizer (AdamW by default; see the module docstring for why these defaults) ---
    optimizer: str = "adamw"  # adamw | lazy_adamw | sgd | adafactor (spamlang.train.optim)
    lr: float = 1e-3  # peak learning rate; the sweeps' main axis, a state array (MEMBER_FIELDS)
    schedule: str = "cosine"  # constant | cosine | wsd; all start with the linear warmup
    warmup_frac: float = 0.05  # fraction of steps of linear warmup from 0 (common: 1-5%)
    decay_frac: float = 0.2  # wsd only: final fraction of steps with linear decay (WSD papers)
    final_lr_ratio: float = 0.1  # end LR / peak LR for cosine and wsd (Chinchilla-style 10%)
    weight_decay: float = 0.1  # decoupled (AdamW) decay on matrices only, never norms
    b1: float = 0.9  # Adam first-moment decay (the near-universal default)
    b2: float = 0.95  # Adam second-moment decay; 0.95 is steadier than 0.999 for LMs
    eps: float = 1e-8  # Adam denominator epsilon
    momentum: float = 0.9  # sgd only: heavy-ball momentum (the common default)
    grad_clip: float = 1.0  # clip the global gradient norm to this; 0 disables clipping
    seed: int = 0  # one seed, split into the parameter-init and data streams
    # --- logging, evaluation, checkpoints ---
    log_every: int = 10  # steps between metric fetches (the only device->host syncs)
    eval_every: int = 0  # steps between evaluations; 0 evaluates only at the end
    eval_sequences: int = 2048  # fixed eval set (keyed by the language); 256 left SE ~0.2 nats
    eval_batch_size: int = 0  # eval batch (no gradients, may exceed batch_size); 0: max(B, 256)
    checkpoint_every: int = 500  # steps between checkpoints; 0: only the final one
    keep_checkpoints: int = 2  # checkpoints kept; >1 so a corrupt latest has a fallback
    # --- numerics ---
    dtype: str = "float32"  # compute dtype of the matmuls (bfloat16 on accelerators)
    loss_chunk: int = 256  # tokens per chunk of the fused loss (fastest measured at every V); 0: plain
    diverge_loss: float = 100.0  # a loss above this (or non-finite) stops the run as diverged
    diag_every: int = 0  # steps between gradient-bottleneck diagnostics; 0: never
    track_symbols: int = 0  # ids whose rows' updates are logged every step (track.jsonl); 0: none
    kernels: str = "auto"  # auto | xla | cpu: cpu-tuned layouts on CPU meshes, plain XLA elsewhere

    def __post_init__(self):
        _check_types(self)
        for name in ("seq_len", "batch_size", "log_every", "eval_sequences", "keep_checkpoints"):
            if getattr(self, name) < 1:
                raise UserError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("eval_every", "checkpoint_every", "loss_chunk", "diag_every", "seed",
                     "micro_batch", "eval_batch_size"):
            if getattr(self, name) < 0:
                raise UserError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.seq_len < 2:
            raise UserError(f"seq_len must be >= 2 (one predicted position), got {self.seq_len}")
        if self.tokens < self.batch_size * self.seq_len:
            raise UserError(f"tokens ({self.tokens}) must be at least one batch: "
                            f"batch_size * seq_len = {self.batch_size * self.seq_len}")
        if self.micro_batch and self.batch_size % self.micro_batch:
            raise UserError(f"micro_batch ({self.micro_batch}) must divide batch_size "
                            f"({self.batch_size})")
        if self.schedule not in SCHEDULES:
            raise UserError(f"schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if self.kernels not in KERNELS:
            raise UserError(f"kernels must be one of {', '.join(KERNELS)}, got {self.kernels!r}")
        if self.dtype not in DTYPES:
            raise UserError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        for name in ("lr", "eps", "diverge_loss"):
            if not getattr(self, name) > 0:
                raise UserError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("weight_decay", "grad_clip"):
            if getattr(self, name) < 0:
                raise UserError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.optimizer not in OPTIMIZERS:
            raise UserError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, "
                            f"got {self.optimizer!r}")
        if not 0 <= self.track_symbols <= self.vocab_size:
            raise UserError(f"track_symbols must be in [0, vocab_size = {self.vocab_size}], "
                            f"got {self.track_symbols}")
        for name in ("b1", "b2", "momentum"):
            if not 0 <= getattr(self, name) < 1:
                raise UserError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        if not 0 <= self.warmup_frac < 1:
            raise UserError(f"warmup_frac must be in [0, 1), got {self.warmup_frac}")
        if not 0 <= self.decay_frac <= 1:
            raise UserError(f"decay_frac must be in [0, 1], got {self.decay_frac}")
        if self.schedule == "wsd" and self.warmup_frac + self.decay_frac > 1:
            raise UserError(f"wsd: warmup_frac + decay_frac must be <= 1, got "
                            f"{self.warmup_frac} + {self.decay_frac}")
        if not 0 <= self.final_lr_ratio <= 1:
            raise UserError(f"final_lr_ratio must be in [0, 1], got {self.final_lr_ratio}")
        if "vocab_size" in self.language_params:
            raise UserError("language_params must not set vocab_size; use the vocab_size field")
        own = sorted(set(self.model_overrides) & set(_OWN_MODEL_FIELDS))
        if own:
            raise UserError(f"model_overrides must not set {', '.join(own)}; "
                            f"use the TrainConfig field(s) of the same name")
        if self.init_from is not None:
            _adopt_checkpoint(self)
        # Building both validates the language parameters and the model overrides now, with
        # their own messages, instead of failing later inside a run.
        self.make_language()
        self.model_config()

    # ----- derived -------------------------------------------------------------------------
    @property
    def steps(self) -> int:
        """Optimizer steps in the budget (whole batches only)."""
        return self.tokens // (self.batch_size * self.seq_len)

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * self.seq_len

    @property
    def eval_batch(self) -> int:
        """Sequences per eval batch: `eval_batch_size`, or its automatic value."""
        return min(self.eval_batch_size or max(self.batch_size, 256), self.eval_sequences)

    @property
    def updates_per_symbol(self) -> float:
        """B x steps / V: training rows that show an average symbol (SpamLang's coverage)."""
        return self.batch_size * self.steps / self.vocab_size

    @property
    def return_time(self) -> dict[str, float]:
        """How often a symbol comes back against how long Adam remembers it: a symbol occurs
        in a step with probability about B / V, so it returns every V / B steps, while the
        second-moment estimate forgets a gradient's scale in about 1 / (1 - b2) steps (None
        for optimizers without Adam's second moment; for lazy_adamw a row's memory is
        1 / (1 - b2) of its own appearances, not of steps)."""
        return {"symbol_return_steps": self.vocab_size / self.batch_size,
                # 10 significant digits: 1 / (1 - 0.999) is 1000, not 999.9999999999991
                "adam_memory_steps": float(f"{1 / (1 - self.b2):.10g}")
                if self.optimizer in ADAM_FAMILY else None}

    @property
    def tracked_ids(self) -> list[int]:
        """The `track_symbols` ids, spread evenly over [0, V) (the first and the last
        included), so that a Zipf-ranked language tracks frequent and rare symbols alike."""
        k, v = self.track_symbols, self.vocab_size
        if k <= 1:
            return [0] * k
        return sorted({round(i * (v - 1) / (k - 1)) for i in range(k)})

    def model_config(self):
        """The `spamlang.model.ModelConfig` of this run (preset + overrides + run fields)."""
        from spamlang.model.config import ModelConfig, preset_fields

        fields = {**preset_fields(self.preset), **self.model_overrides}
        max_len = fields.get("max_seq_len", ModelConfig.__dataclass_fields__["max_seq_len"].default)
        if "max_seq_len" in self.model_overrides and max_len < self.seq_len:
            raise UserError(f"model_overrides max_seq_len ({max_len}) must be >= seq_len ({self.seq_len})")
        return ModelConfig.preset(
            self.preset, **{**self.model_overrides, "max_seq_len": max(max_len, self.seq_len)},
            vocab_size=self.vocab_size, tie_embeddings=self.tie_embeddings, head=self.head,
            residual=self.residual, dtype=self.dtype)

    def make_language(self):
        """The `spamlang.languages.Language` this run trains on."""
        from spamlang import languages

        return languages.make(self.language, vocab_size=self.vocab_size, **self.language_params)

    # ----- serialisation -------------------------------------------------------------------
    def replace(self, **changes) -> "TrainConfig":
        """A copy with some fields changed (validated again)."""
        _check_names(changes)
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict:
        """A JSON-able dict; `TrainConfig.from_json(c.to_json()) == c`."""
        out = dataclasses.asdict(self)
        out["model_overrides"] = dict(self.model_overrides)
        out["language_params"] = dict(self.language_params)
        return out

    @classmethod
    def from_json(cls, data: dict) -> "TrainConfig":
        """Inverse of `to_json`; missing fields take their defaults, unknown ones are an error."""
        if not isinstance(data, dict):
            raise UserError(f"a train config must be a JSON object, got {type(data).__name__}")
        _check_names(data)
        return cls(**data)


def _adopt_checkpoint(config: TrainConfig) -> None:
    """Check the run against `init_from`'s config.json and write the checkpoint's architecture
    into model_overrides (module docstring). A run's own config.json already holds all of it:
    then a checkpoint directory that is gone is no error (the run restores its own weights)."""
    from spamlang.model.hf import ARCHITECTURE, CONFIG, hf_config

    where = config.init_from
    if config.head != "softmax":
        raise UserError(f"init_from needs head 'softmax' (a pretrained LM head is one matrix), "
                        f"got {config.head!r}")
    overrides = config.model_overrides
    if set(ARCHITECTURE) <= set(overrides) and not (Path(where) / CONFIG).is_file():
        return
    checkpoint = hf_config(where)
    fixed = {name: getattr(checkpoint, name) for name in ARCHITECTURE}
    for name, value in overrides.items():
        if name in fixed and value != fixed[name]:
            raise UserError(f"model_overrides {name}={value!r} contradicts {where}/{CONFIG} "
                            f"({name} {fixed[name]!r}); with init_from the checkpoint fixes the "
                            f"architecture")
    if config.vocab_size > checkpoint.vocab_size:
        raise UserError(f"vocab_size {config.vocab_size} exceeds the {checkpoint.vocab_size} "
                        f"token ids of init_from {where}; the run keeps the first vocab_size ids")
    if config.tie_embeddings and not checkpoint.tie_embeddings:
        raise UserError(f"init_from {where} has an untied lm_head, which a tied run would "
                        f"discard; train it untied (tie_embeddings false)")
    if config.seq_len > checkpoint.max_seq_len:
        raise UserError(f"seq_len {config.seq_len} exceeds init_from {where}'s "
                        f"max_position_embeddings ({checkpoint.max_seq_len})")
    object.__setattr__(config, "model_overrides", {**overrides, **fixed})


def _check_names(values: dict) -> None:
    known = [f.name for f in dataclasses.fields(TrainConfig)]
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise UserError(f"unknown train config field(s) {', '.join(unknown)}; known: {', '.join(known)}")


def _check_types(config: TrainConfig) -> None:
    """Check each field against its default's type; canonicalise ints given for floats.

    `tokens` also accepts "2M"-style strings (see `parse_count`).
    """
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        if f.name == "tokens":
            value = parse_count(value)
        elif isinstance(default, bool):
            if not isinstance(value, bool):
                raise UserError(f"{f.name} must be true or false, got {value!r}")
        elif isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                else:
                    raise UserError(f"{f.name} must be an integer, got {value!r}")
            value = int(value)
        elif isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise UserError(f"{f.name} must be a number, got {value!r}")
            value = float(value)
            if not math.isfinite(value):
                raise UserError(f"{f.name} must be finite, got {value}")
        elif isinstance(default, str):
            if not isinstance(value, str):
                raise UserError(f"{f.name} must be a string, got {value!r}")
        elif default is None:  # an optional string (init_from); "" means none
            if value is not None and not isinstance(value, str):
                raise UserError(f"{f.name} must be a string or null, got {value!r}")
            value = value or None
        elif isinstance(default, dict):
            if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
                raise UserError(f"{f.name} must be a mapping of names to values, got {value!r}")
            value = dict(value)
        object.__setattr__(config, f.name, value)
