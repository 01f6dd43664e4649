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

This module imports no JAX at top level, so importing it (the CLI's `--help`, a sweep file) is
cheap. Building a config is not: `__post_init__` validates the language parameters and the
model overrides by building both, which imports `spamlang.languages` (JAX) and
`spamlang.model` (JAX and Flax) the first time.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from spamlang import fields
from spamlang.errors import UserError

SCHEDULES = ("constant", "cosine", "wsd")
# spamlang.optim's names, repeated here so that building a config imports no JAX
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
    if fields.is_int(value):
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


# Limits of single fields, checked with their types by `spamlang.fields` (keyword arguments of
# `fields.check`); the checks that relate fields to each other are in `__post_init__`.
_LIMITS: dict[str, dict] = {
    "seq_len": dict(ge=2, why="one predicted position"),
    **{name: dict(ge=1) for name in ("batch_size", "log_every", "eval_sequences",
                                     "keep_checkpoints")},
    **{name: dict(ge=0) for name in ("micro_batch", "seed", "eval_every", "eval_batch_size",
                                     "checkpoint_every", "loss_chunk", "diag_every",
                                     "weight_decay", "grad_clip")},
    **{name: dict(gt=0) for name in ("lr", "eps", "diverge_loss")},
    **{name: dict(ge=0, lt=1) for name in ("b1", "b2", "momentum", "warmup_frac")},
    **{name: dict(ge=0, le=1) for name in ("decay_frac", "final_lr_ratio")},
    "schedule": dict(choices=SCHEDULES),
    "optimizer": dict(choices=OPTIMIZERS),
    "kernels": dict(choices=KERNELS),
    "dtype": dict(choices=DTYPES),
}


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
    optimizer: str = "adamw"  # adamw | lazy_adamw | sgd | adafactor (spamlang.optim)
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
    loss_chunk: int = 256  # tokens per chunk of the fused loss (memory grows with it x V; the best
    # size depends on D and the device: benchmarks/bench_model.py measures it); 0: plain
    diverge_loss: float = 100.0  # a loss above this (or non-finite) stops the run as diverged
    diag_every: int = 0  # steps between gradient-bottleneck diagnostics; 0: never
    track_symbols: int = 0  # ids whose rows' updates are logged every step (track.jsonl); 0: none
    kernels: str = "auto"  # auto | xla | cpu: cpu-tuned layouts on CPU meshes, plain XLA elsewhere

    def __post_init__(self):
        object.__setattr__(self, "tokens", parse_count(self.tokens))  # "2M"-style budgets too
        fields.check_dataclass(self, limits=_LIMITS, whole_floats=True)
        object.__setattr__(self, "init_from", self.init_from or None)  # "" means none
        if self.tokens < self.batch_size * self.seq_len:
            raise UserError(f"tokens ({self.tokens}) must be at least one batch: "
                            f"batch_size * seq_len = {self.batch_size * self.seq_len}")
        if self.micro_batch and self.batch_size % self.micro_batch:
            raise UserError(f"micro_batch ({self.micro_batch}) must divide batch_size "
                            f"({self.batch_size})")
        if not 0 <= self.track_symbols <= self.vocab_size:
            raise UserError(f"track_symbols must be in [0, vocab_size = {self.vocab_size}], "
                            f"got {self.track_symbols}")
        if self.schedule == "wsd" and self.warmup_frac + self.decay_frac > 1:
            raise UserError(f"wsd: warmup_frac + decay_frac must be <= 1, got "
                            f"{self.warmup_frac} + {self.decay_frac}")
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
        if max_len < self.seq_len:  # never raised silently: attention and eval cost grow with it
            where = "model_overrides max_seq_len" if "max_seq_len" in self.model_overrides \
                else f"preset {self.preset}'s max_seq_len"
            raise UserError(f"seq_len {self.seq_len} exceeds {where} ({max_len}); raise it with "
                            f"--model max_seq_len={self.seq_len}")
        return ModelConfig.preset(
            self.preset, **self.model_overrides,
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
    then a checkpoint directory that is gone is no error (the run restores its own weights).
    The rules a model must meet to start from a checkpoint (head, vocabulary, tying) are
    `spamlang.model.hf.check_fits`'s; only those about the run's own fields are here."""
    from spamlang.model.hf import ARCHITECTURE, CONFIG, check_fits, hf_config

    where = config.init_from
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
    if config.seq_len > checkpoint.max_seq_len:
        raise UserError(f"seq_len {config.seq_len} exceeds init_from {where}'s "
                        f"max_position_embeddings ({checkpoint.max_seq_len})")
    object.__setattr__(config, "model_overrides", {**overrides, **fixed})
    check_fits(checkpoint, config.model_config(), f"init_from {where}")


def _check_names(values: dict) -> None:
    known = [f.name for f in dataclasses.fields(TrainConfig)]
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise UserError(f"unknown train config field(s) {', '.join(unknown)}; known: {', '.join(known)}")
