"""`TrainConfig`: everything needed to rerun one training run, JSON round-trippable.

The optimizer defaults, a common AdamW recipe for small decoder LMs (the paper's appendix was not
available): betas (0.9, 0.95), eps 1e-8, weight decay 0.1 on matrices only, 5% linear warmup,
cosine decay to 0.1 x peak, clipping at global norm 1. Importing this module imports no JAX;
building a config does (it builds the language and the model config to validate them)."""

from __future__ import annotations

import dataclasses

from spamlang import fields
from spamlang.errors import UserError
from spamlang.notation import parse_count

OPTIMIZERS = ("adamw", "lazy_adamw", "sgd", "adafactor")  # spamlang.optim's, named without JAX
ADAM_FAMILY = ("adamw", "lazy_adamw")  # steps normalised by Adam's second moment

_DEFAULT_VOCAB = 1024  # vocab_size's default; a corpus run left at it takes meta.json's
# The budget when neither tokens nor steps is given: the default from before steps was a field.
DEFAULT_TOKENS = 1_048_576
_BUDGET = ("tokens", "steps")


class _Resolved(int):
    """A budget worked out, not given: `replace` passes it back, and the copy works it out anew."""

    __slots__ = ()


# Model fields that TrainConfig owns (they are sweep axes), so they may not hide in `model`.
_OWN_MODEL_FIELDS = ("vocab_size", "tie_embeddings", "head", "residual", "dtype")

# A field's rows in the tables of fields (`fields.tagged`): each field named in one place.
_TABLES = (
    "member",  # may differ between members of one vmapped group; "optim": in the optimizer state
    "readers",  # the optimizers that read it, where not all do (READERS)
    "short",  # run-id piece (`sweep.spec.id_part`): value prefix ("": none) or (True, False) words
    "decimal",  # run-id piece `<name>_<value>`: a decay near 1 (b2_0.9999, not b29.999e-1)
    "aliases",  # names people type for it, answered "did you mean" (FIELD_ALIASES)
    "flags",  # its `spamlang train` flags, where not --<name>
)


_ADAM = dict(member="optim", readers=ADAM_FAMILY)  # Adam's own hyperparameters
_DECAY = dict(decimal=True, ge=0, lt=1)  # a decay rate, in [0, 1)


def _field(default, help: str, metavar: str = "", **keys):
    """A field with its `--help` text, `_TABLES` entries and limits (`fields.check`'s keywords)."""
    key = "default_factory" if callable(default) else "default"
    tables = {k: keys.pop(k) for k in _TABLES if k in keys}
    metadata = {"help": help, "check": keys, "metavar": metavar, **tables}
    return dataclasses.field(**{key: default}, metadata=metadata)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """One training run: model, language, data shape, budget, optimizer, logging."""

    # --- model ---
    preset: str = _field(
        "tiny",
        "model preset; <base>-w<D>: the base at width D, the rest scaled",
        short="",
        aliases=("width", "d_model", "D"),  # the width family, tiny-w<D>
    )
    init_from: str | None = _field(
        None,
        "start from a local Hugging Face Llama checkpoint (config.json + *.safetensors): its "
        "architecture replaces the preset (into --model), its weights the init (a resumed run "
        "restores its own); the run keeps its first --vocab-size token ids; a tied checkpoint "
        "trains tied or untied (head = a copy of the embedding), an untied one untied; head "
        "softmax only; '' for none (default: none)",
        metavar="DIR",
    )
    model: dict = _field(
        dict,
        "a ModelConfig field beyond the preset, e.g. --model n_layers=8 (repeatable); a width is "
        "a preset of the width family (tiny-w32), which scales init std and d_ff with it, where "
        "--model d_model=32 changes the width alone",
    )
    vocab_size: int = _field(
        _DEFAULT_VOCAB,
        "V: the paper's smallest vocabulary, learnable on a CPU; a corpus's own",
        short="V",
        aliases=("vocab", "V"),
    )
    tie_embeddings: bool = _field(
        False,
        "head W = input embedding E; the paper sweeps both",
        short=("tied", "untied"),
        aliases=("tied", "untied", "tie"),
    )
    head: str = _field("softmax", "softmax (the paper's), lowrank:R, mos:K or mlp:R", short="head-")
    residual: bool = _field(
        True,
        "--no-residual: each block replaces the residual stream (vanishing-gradient tests)",
        short=("residual", "noresidual"),
    )
    # --- data ---
    corpus: str | None = _field(
        None,
        "train on real text: a folder of train.bin / val.bin / meta.json (`spamlang tokenize`, "
        "or nanoGPT's files); language and sampling stay at their defaults, vocab_size comes "
        "from meta.json; '' for none (default: none)",
        metavar="DIR",
    )
    corpus_sha256: str | None = _field(
        None,
        "set from the corpus: train.bin's sha256, so that a resume refuses another file",
        metavar="HEX",
    )
    language: str = _field(
        "spam", "language (`spamlang languages`); spam: the paper's SpamLang", short=""
    )
    language_params: dict = _field(dict, "a language parameter, e.g. --param s=1.1 (repeatable)")
    seq_len: int = _field(
        64, "L: spam needs little context", short="L", ge=2, why="one predicted position"
    )
    batch_size: int = _field(
        32,
        "global batch (sequences per step), split over the devices",
        short="B",
        aliases=("batch", "B"),
        ge=1,
    )
    micro_batch: int = _field(
        0, "sequences per micro-batch (averaged gradients: less memory); 0: auto, CPUs only", ge=0
    )
    # The budget, tokens or steps: both read back resolved, config.json keeps the one given.
    tokens: int | None = _field(
        None,
        "training budget in tokens; steps = tokens // (batch_size * seq_len); give tokens or "
        "steps, not both (neither: 1,048,576 tokens)",
        metavar="N",
        short="tok",
    )
    steps: int | None = _field(
        None,
        "training budget in optimizer steps, each of batch_size x seq_len tokens; give steps or "
        "tokens, not both",
        metavar="N",
        ge=1,
    )
    sampling: str = _field(
        "iid",
        "iid: symbols drawn independently (a symbol returns every R = V / B steps on average, "
        "with a geometric tail); permuted: each epoch deals a fresh seeded permutation of the "
        "symbols into batches (every R steps on average, sd about 0.4 R); cyclic: the same "
        "permutation every epoch (every R steps exactly when B divides V); these two with "
        "batch_size = V: full-batch training (spam only)",
        choices=("iid", "permuted", "cyclic"),
    )
    # --- optimizer (module docstring: why these defaults) ---
    optimizer: str = _field(
        "adamw",
        "adamw | lazy_adamw (a symbol's rows move only in steps that show it) | sgd | adafactor",
        short="",
        choices=OPTIMIZERS,
    )
    lr: float = _field(
        1e-3, "peak learning rate, after the warmup; the paper's main axis", member="optim", gt=0
    )
    schedule: str = _field(
        "cosine",
        "constant | cosine | wsd; all after the linear warmup",
        short="",
        choices=("constant", "cosine", "wsd"),
    )
    warmup_frac: float = _field(
        0.05, "fraction of steps of linear warmup (1-5%)", short="warmup", ge=0, lt=1
    )
    decay_frac: float = _field(
        0.2, "wsd only: final fraction of steps of linear decay", short="decay", ge=0, le=1
    )
    final_lr_ratio: float = _field(
        0.1, "end / peak LR, cosine, wsd (Chinchilla: 10%)", short="final", ge=0, le=1
    )
    weight_decay: float = _field(
        0.1, "decoupled (AdamW) decay on matrices only, never norms", short="wd", ge=0
    )
    # Adam's own flag names first (`--eps` could be noisy-spam's noise level).
    b1: float = _field(
        0.9,
        "Adam first-moment decay (the near-universal default)",
        flags=("--adam-b1", "--b1"),
        **_ADAM,
        **_DECAY,
    )
    b2: float = _field(
        0.95,
        "Adam second-moment decay; steadier than 0.999 for LMs",
        aliases=("beta2",),
        flags=("--adam-b2", "--b2"),
        **_ADAM,
        **_DECAY,
    )
    eps: float = _field(
        1e-8,
        "Adam denominator epsilon",
        flags=("--adam-eps",),
        gt=0,
        **_ADAM,
    )
    momentum: float = _field(
        0.9,
        "heavy-ball momentum (the common default)",
        member="optim",
        readers=("sgd",),
        **_DECAY,
    )
    lazy_rows: str = _field(
        "all",
        "rows moved only in steps that show their symbol: all (embedding and head), embed or head",
        readers=("lazy_adamw",),
        choices=("all", "embed", "head"),
    )
    # The head controls (spamlang.optim.head), on the head's matrix alone, constants of the program.
    head_amsgrad: bool = _field(
        False,
        "adamw only: AMSGrad on the head alone (the embedding when tied): its second moment is "
        "the running max of Adam's v, so an absent symbol's row keeps its last pull-up's scale",
        readers=("adamw",),
    )
    head_eps: float = _field(
        0.0,
        "adamw only: Adam's eps on the head alone, e.g. 1e-3, capping a row's step at |m| / eps "
        "once its v has decayed; 0: eps. Compiled in: unlike eps, a vmapped group shares it",
        readers=("adamw",),
        ge=0,
    )
    head_row_clip: float = _field(
        0.0,
        "adamw only: rescale each head row's Adam step to RMS <= this before the learning rate "
        "and schedule, so no row moves more than this x lr (RMS) in a step; 0: off",
        readers=("adamw",),
        ge=0,
    )
    head_b2: float | None = _field(
        None,
        "adamw only: the head's own Adam b2 (tied: the shared matrix's); none: b2",
        metavar="FLOAT",
        readers=("adamw",),
        **_DECAY,
    )
    head_v_gated: bool = _field(
        False,
        "adamw only: a head row's v moves only in steps that show it more than push-down "
        "(untied: its token is a target; tied: an input or a target), after its first such "
        "step; m, the step count, LR and decay stay AdamW's",
        readers=("adamw",),
    )
    head_lr_scale: float = _field(
        1.0,
        "the head's update direction alone times this (its weight decay not); any optimizer",
        gt=0,
    )
    head_weight_decay: float | None = _field(
        None,
        "weight decay on the head's and the embedding's rows alone; none: weight_decay; any "
        "optimizer",
        metavar="FLOAT",
        ge=0,
    )
    grad_clip: float = _field(
        1.0, "clip the global gradient norm to this; 0: no clipping", short="clip", ge=0
    )
    seed: int = _field(
        0,
        "one seed, split into the parameter-init and data streams",
        member=True,
        ge=0,
        lt=2**32,
        why="jax.random.PRNGKey keeps 32 bits; larger seeds repeat smaller ones",
    )
    # --- logging, evaluation, checkpoints ---
    log_every: int = _field(
        10,
        "steps between logged training metrics (metrics.jsonl rows, the progress line); Ctrl-C "
        "/ SIGTERM stop at the next of these steps, with a checkpoint; more often is a bit slower",
        ge=1,
    )
    eval_every: int = _field(0, "steps between evaluations; 0 evaluates only at the end", ge=0)
    eval_sequences: int = _field(
        2048,
        "sequences in the eval set, the same for every run of the language; fewer make the eval "
        "loss noisy (256 left a standard error of ~0.2 nats)",
        ge=1,
    )
    eval_batch_size: int = _field(
        0, "sequences per eval batch (may exceed batch_size); 0: max(batch_size, 256)", ge=0
    )
    checkpoint_every: int = _field(500, "steps between checkpoints; 0: only the final one", ge=0)
    keep_checkpoints: int = _field(2, "checkpoints kept; >1: a fallback for a corrupt one", ge=1)
    # --- numerics ---
    dtype: str = _field(
        "float32",
        "matmul dtype (bfloat16 on accelerators)",
        short="",
        choices=("float32", "bfloat16"),
    )
    loss_chunk: int = _field(
        256,
        "tokens per chunk of the cross-entropy, which never holds all logits: memory grows with "
        "chunk x V, the fastest size depends on D and device (benchmarks/bench_model.py); 0: none",
        short="chunk",
        ge=0,
    )
    diverge_loss: float = _field(100.0, "stop as diverged above this loss (or non-finite)", gt=0)
    diag_every: int = _field(0, "steps between gradient-bottleneck diagnostics; 0: never", ge=0)
    track_symbols: int = _field(
        0,
        "follow this many symbol ids (spread over V): each step's update to their rows goes to "
        "track.jsonl, for `spamlang plot track`; 0: none",
    )
    kernels: str = _field(
        "auto",
        "auto: tuned kernels on CPU devices, plain XLA on GPUs and TPUs; xla or cpu forces one",
        choices=("auto", "xla", "cpu"),
    )

    def __post_init__(self):
        for name in _BUDGET:  # a value worked out by the config this one was replaced from
            if isinstance(getattr(self, name), _Resolved):
                object.__setattr__(self, name, None)
        if self.tokens is not None:
            object.__setattr__(self, "tokens", parse_count(self.tokens))  # "2M"-style too
        fields.check_dataclass(self, whole_floats=True)
        self._resolve_budget()
        object.__setattr__(self, "init_from", self.init_from or None)  # "" means none
        object.__setattr__(self, "corpus", self.corpus or None)
        self._check_corpus()
        if self.tokens < self.tokens_per_step:
            raise UserError(
                f"tokens ({self.tokens}) must be at least one batch: "
                f"batch_size * seq_len = {self.tokens_per_step}"
            )
        # A field the optimizer ignores, set: a sweep over it would train one run under many names.
        for name, readers in READERS.items():
            value, default = getattr(self, name), TrainConfig.__dataclass_fields__[name].default
            if self.optimizer not in readers and value != default:
                raise UserError(
                    f"optimizer {self.optimizer} ignores {name} (only {' and '.join(readers)} "
                    f"read it), so {name}={value!r} would change nothing; leave it at its default "
                    f"({default!r}) or choose {' or '.join(readers)}"
                )
        if self.head_v_gated and self.head_amsgrad:
            raise UserError(
                "head_v_gated and head_amsgrad both set the head's v: choose one of them"
            )
        if self.micro_batch and self.batch_size % self.micro_batch:
            raise UserError(
                f"micro_batch ({self.micro_batch}) must divide batch_size ({self.batch_size})"
            )
        if self.schedule == "wsd" and self.warmup_frac + self.decay_frac > 1:
            raise UserError(
                f"wsd: warmup_frac + decay_frac must be <= 1, got "
                f"{self.warmup_frac} + {self.decay_frac}"
            )
        if self.lazy_rows != "all" and self.tie_embeddings:
            raise UserError(
                f"lazy_rows {self.lazy_rows!r} splits the embedding from the head, which a tied "
                f"model shares: use lazy_rows 'all' or --no-tie-embeddings"
            )
        if "vocab_size" in self.language_params:
            raise UserError("language_params must not set vocab_size; use the vocab_size field")
        if own := sorted(set(self.model) & set(_OWN_MODEL_FIELDS)):
            raise UserError(
                f"model must not set {', '.join(own)}; "
                f"use the TrainConfig field(s) of the same name"
            )
        if self.init_from is not None:  # its architecture, written into `model`
            from spamlang.model.hf_checkpoint import adopt_checkpoint, check_fits

            overrides, checkpoint = adopt_checkpoint(self)
            object.__setattr__(self, "model", overrides)
            if checkpoint is not None:
                check_fits(checkpoint, self.model_config(), f"init_from {self.init_from}")
        # Built now, to fail here with their own messages (the language first: a bad vocab_size).
        lang = self.make_language()
        self.model_config()
        if not 0 <= self.track_symbols <= self.vocab_size:
            raise UserError(
                f"track_symbols must be in [0, vocab_size = {self.vocab_size}], "
                f"got {self.track_symbols}"
            )
        if self.sampling != "iid" and not getattr(lang, "permutable", False):
            raise UserError(
                f"sampling {self.sampling!r} deals every symbol once per epoch, which needs a "
                f"uniform one-symbol language (spam); {self.language} has none to deal: use "
                f"sampling 'iid'"
            )
        if self.sampling != "iid" and self.steps * self.batch_size >= 2**32:
            raise UserError(
                f"sampling {self.sampling!r} counts rows in 32 bits: steps x batch_size "
                f"= {self.steps * self.batch_size:,} must stay below 2^32"
            )

    def _resolve_budget(self) -> None:
        """Work the budget field not given out from the other (neither: DEFAULT_TOKENS)."""
        tokens, steps = self.tokens, self.steps
        if tokens is not None and steps is not None:
            raise UserError(
                f"give tokens or steps, not both (tokens = steps x batch_size x seq_len): got "
                f"tokens={tokens} and steps={steps}"
            )
        if steps is not None:
            object.__setattr__(self, "tokens", _Resolved(steps * self.tokens_per_step))
        else:
            object.__setattr__(self, "tokens", DEFAULT_TOKENS if tokens is None else tokens)
            object.__setattr__(self, "steps", _Resolved(self.tokens // self.tokens_per_step))

    def _check_corpus(self) -> None:
        """A corpus run's vocabulary, fields that mean nothing on text, train.bin's hash."""
        if self.corpus is None:
            if self.corpus_sha256 is not None:
                raise UserError("corpus_sha256 is set but corpus is not")
            return
        from spamlang.corpus.files import open_corpus, train_sha256

        corpus = open_corpus(self.corpus)
        if self.vocab_size == _DEFAULT_VOCAB:  # unset: meta.json's (the CLI refuses 1024 typed)
            object.__setattr__(self, "vocab_size", corpus.vocab_size)
        if self.vocab_size != corpus.vocab_size:
            raise UserError(
                f"vocab_size {self.vocab_size} differs from corpus {self.corpus}'s "
                f"{corpus.vocab_size} (meta.json); leave vocab_size unset"
            )
        for name in ("language", "language_params", "sampling"):
            f = TrainConfig.__dataclass_fields__[name]
            default = f.default_factory() if f.default is dataclasses.MISSING else f.default
            if getattr(self, name) != default:
                raise UserError(
                    f"{name} {getattr(self, name)!r} has no meaning with a corpus, whose text "
                    f"is the data; leave it at its default ({default!r})"
                )
        if self.diag_every:
            raise UserError("diag_every measures on a language's batches: not with a corpus yet")
        if self.seq_len > corpus.train.shape[0]:
            raise UserError(
                f"seq_len {self.seq_len} exceeds corpus {self.corpus}'s "
                f"{corpus.train.shape[0]} train tokens"
            )
        digest = train_sha256(self.corpus)
        if self.corpus_sha256 not in (None, digest):
            raise UserError(
                f"{corpus.path / 'train.bin'} has changed since this config was written "
                f"(sha256 {digest[:12]}..., not {self.corpus_sha256[:12]}...); a run resumes "
                "only on the file it started with"
            )
        object.__setattr__(self, "corpus_sha256", digest)

    @property
    def tokens_per_step(self) -> int:
        return self.batch_size * self.seq_len

    @property
    def eval_batch(self) -> int:
        return min(self.eval_batch_size or max(self.batch_size, 256), self.eval_sequences)

    @property
    def updates_per_symbol(self) -> float:
        """B x steps / V: training rows that show an average symbol."""
        return self.batch_size * self.steps / self.vocab_size

    @property
    def return_time(self) -> dict[str, float]:
        """A symbol's return time V / B against Adam's memory 1 / (1 - b2) (None without Adam)."""
        adam = self.optimizer in ADAM_FAMILY
        # 10 significant digits: 1000, not 999.9999999999991
        memory = float(f"{1 / (1 - self.b2):.10g}") if adam else None
        return {
            "symbol_return_steps": self.vocab_size / self.batch_size,
            "adam_memory_steps": memory,
            "adam_memory_steps_effective": min(memory, self.steps) if adam else None,
        }

    @property
    def tracked_ids(self) -> list[int]:
        """`track_symbols` ids spread evenly over [0, V), ends included."""
        k, v = self.track_symbols, self.vocab_size
        return sorted({round(i * (v - 1) / (k - 1)) for i in range(k)}) if k > 1 else [0] * k

    def model_config(self):
        from spamlang.model.config import ModelConfig

        own = {k: getattr(self, k) for k in _OWN_MODEL_FIELDS}
        config = ModelConfig.preset(self.preset, **self.model, **own)
        if config.max_seq_len < self.seq_len:  # never raised silently: attention and eval cost grow
            where = "model" if "max_seq_len" in self.model else f"preset {self.preset}'s"
            raise UserError(
                f"seq_len {self.seq_len} exceeds {where} max_seq_len ({config.max_seq_len}); "
                f"raise it with --model max_seq_len={self.seq_len}"
            )
        return config

    def make_language(self):
        from spamlang import languages

        return languages.make(self.language, vocab_size=self.vocab_size, **self.language_params)

    def replace(self, **changes) -> TrainConfig:
        """A copy with `changes`, validated; the budget stays as given."""
        _check_names(changes)
        if len(set(_BUDGET) & set(changes)) == 1:
            changes = {**dict.fromkeys(_BUDGET), **changes}
        if "corpus" in changes and changes["corpus"] != self.corpus:
            # Another corpus: its own hash, and its own vocabulary unless one is given.
            changes.setdefault("corpus_sha256", None)
            if self.corpus is not None:
                changes.setdefault("vocab_size", _DEFAULT_VOCAB)
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict:
        """A JSON-able dict; the budget as given (tokens, or steps with tokens null)."""
        data = dataclasses.asdict(self)  # the two dicts copied too
        if isinstance(self.steps, _Resolved):
            del data["steps"]
        else:
            data["tokens"] = None
        return {k: int(v) if isinstance(v, _Resolved) else v for k, v in data.items()}

    @classmethod
    def from_json(cls, data: dict) -> TrainConfig:
        """Missing fields take their defaults, unknown ones are an error."""
        if not isinstance(data, dict):
            raise UserError(f"a train config must be a JSON object, got {type(data).__name__}")
        if "model_overrides" in data:  # the field's name in configs written before it was `model`
            if "model" in data:
                raise UserError("a train config sets both model and model_overrides (its old name)")
            data = {("model" if k == "model_overrides" else k): v for k, v in data.items()}
        _check_names(data)
        return cls(**data)


MEMBER_FIELDS = tuple(fields.tagged(TrainConfig, "member"))
# Who reads which optimizer field; without the head controls: `--help`'s "read only by".
READERS = fields.tagged(TrainConfig, "readers")
OPTIMIZER_FIELDS = {k: v for k, v in READERS.items() if not k.startswith("head_")}
# Names people type for a field; a ModelConfig field's are model.*, set with --model NAME=VALUE.
FIELD_ALIASES = {a: k for k, names in fields.tagged(TrainConfig, "aliases").items() for a in names}
FIELD_ALIASES |= dict.fromkeys(("n_layers", "layers", "depth"), "model.n_layers")


def _check_names(values: dict) -> None:
    known = [f.name for f in dataclasses.fields(TrainConfig)]
    if unknown := sorted(set(values) - set(known)):
        close = fields.closest(unknown[0], known, FIELD_ALIASES)
        raise UserError(
            f"unknown train config field(s) {', '.join(unknown)}"
            f"{f' (did you mean {close!r}?)' if close else ''}; known: {', '.join(known)}"
        )
