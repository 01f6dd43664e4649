"""Samples from a trained run, and how well they follow the language (the paper's Table 1);
a corpus run (real text) has no correct token: its samples continue val.bin windows."""

from __future__ import annotations

import dataclasses
import html
import os
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spamlang import glyphs
from spamlang.errors import UserError
from spamlang.notation import format_count, format_lr
from spamlang.results import read_runs, records
from spamlang.rundir.schema import ADAM_B2, TITLE_DEFAULTS

SEED, CORRECT, INCORRECT = "seed", "correct", "incorrect"
# Underlined: incorrect is not told by colour alone.
_ANSI = {SEED: "\x1b[1;34m", CORRECT: "\x1b[32m", INCORRECT: "\x1b[1;4;31m"}
_MARK = {SEED: "s", CORRECT: ".", INCORRECT: "x"}
# Okabe-Ito tints (colour-blind safe): sky blue seed, bluish green correct, vermillion incorrect.
COLOURS = {SEED: "#9fd3f2", CORRECT: "#a6dccb", INCORRECT: "#f2b38c"}
_RUN_INFO = ("lr", "tie_embeddings", "head", "preset")  # what every header names of a run
_IDS = re.compile(r"\d+(?:[\s,]+\d+)*")  # a prompt of token ids: "12 7" or "12,7"


@dataclass(frozen=True)
class SampleStats:
    """How one sample follows the language, over its generated tokens."""

    fraction_correct: float  # correct generated tokens / generated tokens
    first_error: int  # index (0 = first generated token) of the first incorrect one; -1 if none
    longest_run: int  # longest run of consecutive correct generated tokens
    longest_repeat: int = 0  # longest run of one symbol among them, correct or not; 0: not measured
    repeat_token: int = -1  # that run's symbol (the first such run's); -1: not measured


@dataclass(frozen=True)
class Summary:
    """Means of `SampleStats` over the samples."""

    n: int  # number of samples
    mean_fraction_correct: float  # mean of fraction_correct
    mean_first_error: float | None  # mean first_error over samples with an error; None if none has
    error_free: int  # samples without any incorrect token
    mean_longest_run: float  # mean of longest_run
    mean_longest_repeat: float = 0.0  # mean of longest_repeat


def sample_stats(
    correct_Lm1: Sequence[bool], prompt_len: int = 1, tokens_L: Sequence[int] | None = None
) -> SampleStats:
    """One sample's statistics from its `is_most_likely` flags (`bool[L-1]`, flag t judges token
    t+1); with its tokens, also its longest repeat."""
    flags = np.asarray(correct_Lm1, dtype=bool).reshape(-1)[max(prompt_len, 1) - 1 :]
    if prompt_len < 1 or flags.size == 0:
        raise UserError(f"a sample needs at least one token after its {prompt_len}-token prompt")
    errors = np.flatnonzero(~flags)
    # Run lengths: distances between consecutive errors (with sentinels at both ends), minus one.
    bounds = np.concatenate([[-1], errors, [flags.size]])
    first = int(errors[0]) if errors.size else -1
    stats = SampleStats(float(flags.mean()), first, int(np.max(np.diff(bounds) - 1)))
    if tokens_L is None:
        return stats
    generated = np.asarray(tokens_L).reshape(-1)[max(prompt_len, 1) :]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(generated)) + 1])
    lengths = np.diff(np.concatenate([starts, [generated.size]]))
    k = int(np.argmax(lengths))
    return dataclasses.replace(
        stats, longest_repeat=int(lengths[k]), repeat_token=int(generated[starts[k]])
    )


def summarize(stats: Sequence[SampleStats]) -> Summary:
    """Means over samples; the mean first error is over the samples that have an error."""
    if not stats:
        raise UserError("no samples to summarize")
    firsts = [s.first_error for s in stats if s.first_error >= 0]
    return Summary(
        n=len(stats),
        mean_fraction_correct=float(np.mean([s.fraction_correct for s in stats])),
        mean_first_error=float(np.mean(firsts)) if firsts else None,
        error_free=len(stats) - len(firsts),
        mean_longest_run=float(np.mean([s.longest_run for s in stats])),
        mean_longest_repeat=float(np.mean([s.longest_repeat for s in stats])),
    )


@dataclass(frozen=True)
class SampleResult:
    """Samples, their correctness flags and statistics, and where they came from."""

    tokens: np.ndarray  # int [N, L], prompt included
    correct: np.ndarray  # bool [N, L-1]: token t+1 is a most likely continuation
    prompt_len: int  # P: the first P tokens of every sample are the seed
    stats: list[SampleStats]  # one per sample
    summary: Summary  # their means
    info: dict[str, Any] = field(default_factory=dict)  # run, language, temperature, seed, ...

    @classmethod
    def from_flags(cls, tokens_NxL, correct_NxLm1, prompt_len: int, info: dict | None = None):
        tokens, correct = np.asarray(tokens_NxL), np.asarray(correct_NxLm1, dtype=bool)
        if tokens.ndim != 2 or correct.shape != (tokens.shape[0], tokens.shape[1] - 1):
            shapes = f"flags of shape {correct.shape} do not fit tokens of shape {tokens.shape}"
            raise UserError(shapes)
        stats = [sample_stats(c, prompt_len, t) for c, t in zip(correct, tokens)]
        return cls(tokens, correct, prompt_len, stats, summarize(stats), dict(info or {}))

    def kinds(self) -> np.ndarray:
        """str [N, L]: "seed", "correct" or "incorrect" for every token."""
        labels = np.where(self.correct, CORRECT, INCORRECT).astype(object)
        kinds = np.concatenate([np.full((len(self.tokens), 1), SEED, dtype=object), labels], axis=1)
        kinds[:, : self.prompt_len] = SEED
        return kinds


def parse_prompt(text: str) -> list[int]:
    """A prompt as token ids: "12 7" / "12,7" are ids, anything else is glyphs ("AAb")."""
    text = text.strip()
    if not text:
        raise UserError("the prompt is empty")
    if _IDS.fullmatch(text):
        return [int(t) for t in re.split(r"[\s,]+", text)]
    try:
        return glyphs.tokens_of(text)
    except UserError as e:
        raise UserError(f"bad prompt {text!r}: {e}") from None


def _given_prompt_NxP(ids: list[int], n: int, temperature: float, vocab_size: int) -> np.ndarray:
    """A given prompt as `n` rows; UserError if it is empty, outside the vocabulary, or the same
    for `n` > 1 greedy samples (which would all be one)."""
    if not ids:
        raise UserError("the prompt is empty")
    if bad := [t for t in ids if not 0 <= t < vocab_size]:
        raise UserError(f"prompt token {bad[0]} is outside the vocabulary (V={vocab_size})")
    if temperature == 0 and n > 1:
        raise UserError(
            f"greedy decoding of one prompt gives {n} identical samples; use -n 1, or leave out "
            "the prompt to seed each sample with its own (a symbol drawn from the language; a "
            "corpus run: the start of a val.bin window)"
        )
    return np.tile(np.asarray(ids, dtype=np.int32), (n, 1))


def _check_draws(n: int, temperature: float) -> None:
    if n < 1:
        raise UserError(f"-n must be at least 1, got {n}")
    if not temperature >= 0:
        raise UserError(f"temperature must be >= 0, got {temperature}")


def _drawn(lang, n: int, key) -> np.ndarray:
    """n prompts of `lang.prompt_len` tokens drawn from the language, distinct ones first (as
    far as the language has them among 8 n draws), in the order drawn."""
    rows = np.asarray(lang.sample(key, 8 * n, lang.prompt_len), dtype=np.int32)
    first = np.sort(np.unique(rows, axis=0, return_index=True)[1])
    again = np.setdiff1d(np.arange(len(rows)), first)
    return rows[np.concatenate([first, again])[:n]]


def sample_with(
    generate_fn: Callable,
    lang,
    *,
    n: int = 8,
    length: int = 32,
    temperature: float = 0.9,
    prompt: str | Sequence[int] | None = None,
    seed: int = 0,
    info: dict | None = None,
) -> SampleResult:
    """Sample with `generate_fn(prompt_NxP, length, key, temperature) -> int[N, length]`
    (`length` counts the prompt), then judge: the model-agnostic core of `sample_run`."""
    import jax
    import jax.numpy as jnp

    _check_draws(n, temperature)
    prompt_key, sample_key = jax.random.split(jax.random.key(seed))
    # Token 0 ("A") seeds every sample, as in the paper, unless the language needs a longer
    # seed or greedy decoding would make n copies of one sample: then each draws its own.
    drawn = prompt is None and (lang.prompt_len > 1 or (temperature == 0 and n > 1))
    if drawn:
        prompt_NxP = _drawn(lang, n, prompt_key)
    elif prompt is None:
        prompt_NxP = np.zeros((n, 1), dtype=np.int32)
    else:
        ids = parse_prompt(prompt) if isinstance(prompt, str) else [int(t) for t in prompt]
        prompt_NxP = _given_prompt_NxP(ids, n, temperature, lang.vocab_size)
    if length <= prompt_NxP.shape[1]:
        raise UserError(f"length ({length}) must exceed the prompt length ({prompt_NxP.shape[1]})")
    tokens_NxL = np.asarray(
        generate_fn(jnp.asarray(prompt_NxP), length, sample_key, float(temperature))
    )
    correct = np.asarray(lang.is_most_likely(jnp.asarray(tokens_NxL, jnp.int32)))
    first = prompt_NxP[0].tolist()
    shown = glyphs.render(first) if glyphs.has_glyphs(first) else ",".join(map(str, first))
    info = {
        "language": lang.name,
        "vocab_size": lang.vocab_size,
        "temperature": float(temperature),
        "seed": seed,
        "prompt": "drawn from the language" if drawn else shown,
        **({} if drawn else {"prompt_ids": first}),
        "correct": (
            "the seed symbol again"
            if getattr(lang, "position_invariant", False)
            else getattr(lang, "summary", "")
        ),
        **(info or {}),
    }
    return SampleResult.from_flags(tokens_NxL, correct, prompt_NxP.shape[1], info)


def check_length(length: int, seq_len: int, max_seq_len: int, invariant: bool = False) -> None:
    """UserError for samples longer than the model accepts (`max_seq_len`); a warning for ones
    longer than it trained on (RoPE extrapolation), unless the language is position-invariant:
    a repeated symbol has the same hidden state at every position."""
    if length > max_seq_len:
        raise UserError(f"length {length} exceeds the model's max_seq_len {max_seq_len}")
    if length > seq_len and not invariant:
        warnings.warn(
            f"length {length} exceeds the run's trained seq_len {seq_len}: positions "
            f"{seq_len}-{length - 1} are RoPE extrapolation",
            stacklevel=3,
        )


def sample_run(
    run_dir,
    *,
    n: int = 8,
    length: int | None = None,
    temperature: float = 0.9,
    prompt: str | Sequence[int] | None = None,
    seed: int = 0,
) -> SampleResult | TextSamples:
    """Sample `n` sequences of `length` tokens (prompt included) from a run's latest checkpoint;
    `length` defaults to 32, or to the run's `seq_len` when shorter and the language is not
    position-invariant (`check_length`). A corpus run's are `TextSamples` (`_sample_corpus`)."""
    if not os.path.isdir(run_dir):
        raise UserError(f"no such run directory: {run_dir}")
    _check_draws(n, temperature)
    if corpus_dir := corpus_of(run_dir):  # its default language is no rule for real text
        return _sample_corpus(run_dir, corpus_dir, n, length, temperature, prompt, seed)
    from spamlang.model import generate
    from spamlang.train import load_run

    config, model = load_run(run_dir)
    lang = config.make_language()
    length = (
        (32 if lang.position_invariant else min(32, config.seq_len)) if length is None else length
    )
    check_length(length, config.seq_len, model.config.max_seq_len, lang.position_invariant)

    def generate_fn(prompt_NxP, length, key, temperature):
        return generate(model, prompt_NxP, length, key=key, temperature=temperature)

    info = {k: getattr(config, k) for k in _RUN_INFO}
    # The run's settings off their defaults (width, depth, b2, decay, ...), for the title.
    settings = {k: getattr(config, k, None) for k in TITLE_DEFAULTS}
    settings.update(d_model=model.config.d_model, n_layers=model.config.n_layers)
    info["settings"] = {
        k: v for k, v in settings.items() if k != "head" and v not in (None, TITLE_DEFAULTS[k])
    }
    kw = dict(n=n, length=length, temperature=temperature, prompt=prompt, seed=seed)
    return sample_with(generate_fn, lang, **kw, info={"run_dir": str(run_dir), **info})


# ----- corpus runs: real text -------------------------------------------------------------------
@dataclass(frozen=True)
class TextSamples:
    """Samples of a corpus run: each a prompt (from val.bin, or given) and its continuation."""

    tokens: np.ndarray  # int [N, L], prompt included
    prompt_len: int  # P: the first P tokens of every sample are the prompt
    starts: list[int] | None  # each prompt's first token in val.bin; None for a given prompt
    tokenizer: Any  # a tokenizers.Tokenizer, or None: the corpus has none and ids are shown
    info: dict[str, Any] = field(default_factory=dict)  # run, corpus, temperature, seed, ...


def load_tokenizer(path):
    """`tokenizers.Tokenizer` from a tokenizer.json, imported only here (an optional extra)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise UserError(
            f'decoding with {path} needs the tokenizers package: pip install -e ".[text]"'
        ) from None
    try:
        return Tokenizer.from_file(str(path))
    except Exception as e:  # the Rust side raises a bare Exception for a bad file
        raise UserError(f"cannot read tokenizer {path}: {str(e).splitlines()[0]}") from None


def corpus_of(run_dir) -> str | None:
    """The corpus folder a run trained on; None for a run on a language."""
    return next(iter(records(read_runs(run_dir))), {}).get("corpus")


def corpus_prompt(text: str | Sequence[int], tokenizer) -> list[int]:
    """A given prompt's ids: ids as given, text encoded by the tokenizer, or without one ids as
    text ('12,7')."""
    if not isinstance(text, str):
        return [int(t) for t in text]
    if tokenizer is None and not _IDS.fullmatch(text.strip()):
        raise UserError(
            f"the corpus has no tokenizer.json: give the prompt as ids (12,7), not {text!r}"
        )
    ids = parse_prompt(text) if tokenizer is None else tokenizer.encode(text).ids
    if not ids:
        raise UserError(f"the prompt {text!r} encodes to no tokens")
    return ids


def val_prompts(val_N: np.ndarray, seq_len: int, n: int, prompt_len: int, seed: int):
    """(int32[n, prompt_len] prompts, their starts): the first `prompt_len` tokens of `n`
    non-overlapping `seq_len` windows of val.bin (the windows its evaluation scores, so that
    a prompt starts where the model was scored from), distinct while there are enough."""
    width = seq_len if len(val_N) >= seq_len else prompt_len
    windows = len(val_N) // width
    if windows < 1 or prompt_len > width:
        raise UserError(
            f"val.bin holds {len(val_N)} tokens, too few for {prompt_len}-token prompts"
        )
    picked = np.random.default_rng(seed).choice(windows, size=n, replace=n > windows)
    starts = (picked * width).tolist()
    return np.stack([np.asarray(val_N[s : s + prompt_len], np.int32) for s in starts]), starts


def _sample_corpus(run_dir, corpus_dir, n, length, temperature, prompt, seed) -> TextSamples:
    """`sample_run` of a corpus run: `length` by default as there, or longer to leave half to a
    long given prompt; the prompts from val.bin are half of it."""
    import jax
    import jax.numpy as jnp

    from spamlang.corpus.files import open_corpus
    from spamlang.model import generate
    from spamlang.train import load_run

    # The corpus and the prompt first: a bad prompt fails before the model loads.
    corpus = open_corpus(corpus_dir)
    tokenizer = load_tokenizer(corpus.tokenizer_file) if corpus.tokenizer_file else None
    prompt_NxP = starts = None
    if prompt is not None:
        ids = corpus_prompt(prompt, tokenizer)
        prompt_NxP = _given_prompt_NxP(ids, n, temperature, corpus.vocab_size)
    config, model = load_run(run_dir)
    default = min(32, config.seq_len) if length is None else length
    if prompt_NxP is None:
        prompt_NxP, starts = val_prompts(corpus.val, config.seq_len, n, max(1, default // 2), seed)
    P = prompt_NxP.shape[1]
    length = max(default, P + default // 2) if length is None else length
    if length <= P:
        raise UserError(f"length ({length}) must exceed the prompt length ({P})")
    check_length(length, config.seq_len, model.config.max_seq_len)
    tokens_NxL = generate(
        model,
        jnp.asarray(prompt_NxP),
        length,
        key=jax.random.key(seed),
        temperature=float(temperature),
    )
    info = {
        "run_dir": str(run_dir),
        "corpus": corpus.name,
        "vocab_size": corpus.vocab_size,
        "tokenizer": str(corpus.tokenizer_file) if tokenizer is not None else None,
        "temperature": float(temperature),
        "seed": seed,
        **{k: getattr(config, k) for k in (*_RUN_INFO, ADAM_B2)},
    }
    return TextSamples(np.asarray(tokens_NxL), P, starts, tokenizer, info)


def describe_corpus(samples: TextSamples, ids: bool = False) -> str:
    """One line: the run, its corpus and how the samples were drawn and are shown."""
    i = samples.info
    n, length = samples.tokens.shape
    t = i["temperature"]
    shown = "token ids" if ids or samples.tokenizer is None else f"text decoded by {i['tokenizer']}"
    if samples.tokenizer is None:
        shown += " (the corpus has no tokenizer.json)"
    drawn = "given" if samples.starts is None else "the start of a val.bin window each"
    run = f"{i['run_dir']}: corpus {i['corpus']} V={format_count(i['vocab_size'])}"
    prompt = f"{samples.prompt_len}-token prompt ({drawn})"
    how = f"{n} samples of {length} tokens, {prompt}, {_drawn_words(t, i['seed'])}"
    return "; ".join([run, f"{_run_words(i)}, b2 {i[ADAM_B2]:g}", how, shown])


def _run_words(i: dict) -> str:  # "lr 1e-2, tied, head softmax": every header names them
    tied = "tied" if i.get("tie_embeddings") else "untied"
    return f"lr {format_lr(i['lr'])}, {tied}, head {i.get('head')}"


def _drawn_words(t: float, seed: int) -> str:
    return ("greedy" if t == 0 else f"temperature {t:g}") + f", seed {seed}"


def render_corpus_text(samples: TextSamples, colour: bool = False, ids: bool = False) -> str:
    """Each sample as two indented blocks, its prompt then its continuation (the prompt in the
    seed colour on a terminal), so that decoded newlines cannot blur where one ends."""
    P = samples.prompt_len

    def shown(tokens) -> str:
        tokens = np.asarray(tokens).tolist()
        if ids or samples.tokenizer is None:
            return " ".join(map(str, tokens))
        return samples.tokenizer.decode(tokens)

    def block(text: str, paint: bool) -> list[str]:
        lines = text.split("\n") or [""]
        return [f"    {_ANSI[SEED]}{x}\x1b[0m" if paint else f"    {x}" for x in lines]

    lines = [describe_corpus(samples, ids)]
    for k, tokens in enumerate(samples.tokens):
        where = "" if samples.starts is None else f", val.bin from token {samples.starts[k]:,}"
        lines.append(f"[{k}] prompt ({P} tokens{where}):")
        lines += block(shown(tokens[:P]), colour)
        lines.append(f"[{k}] continuation ({len(tokens) - P} tokens):")
        lines += block(shown(tokens[P:]), False)
    return "\n".join(lines) + "\n"


# ----- renderers ---------------------------------------------------------------------------------
def use_colour(stream) -> bool:
    """ANSI colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    return not os.environ.get("NO_COLOR") and hasattr(stream, "isatty") and stream.isatty()


def shows_ids(result: SampleResult, ids: bool = False) -> bool:
    """Whether every renderer shows token ids: asked for, or some token has no glyph."""
    return ids or not glyphs.has_glyphs(result.tokens)


def describe(result: SampleResult, ids: bool = False) -> str:
    """One line: where the samples come from and how they were drawn."""
    i = result.info
    t = i.get("temperature", 0.0)
    parts = [str(i["run_dir"])] if "run_dir" in i else []
    v = i.get("vocab_size")
    parts.append(f"{i.get('language', '?')} V={format_count(v) if isinstance(v, int) else '?'}")
    if "lr" in i:
        parts.append(_run_words(i))
    if settings := i.get("settings"):  # what the run's base moved off the defaults (D, b2, ...)
        parts.append(
            ", ".join(
                f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in settings.items()
            )
        )
    n, length = result.tokens.shape
    parts.append(f"{n} samples of {length} tokens, {_drawn_words(t, i.get('seed', 0))}")
    if "prompt" in i:
        given = i.get("prompt_ids")
        shown = ",".join(map(str, given)) if ids and given is not None else i["prompt"]
        parts.append(f"prompt {shown}")
    return "; ".join(parts)


def definitions(result: SampleResult) -> str:
    """What the statistics count, for the header of every renderer."""
    rule = result.info.get("correct")
    return (
        "correct: a token the language most likely emits next, given the tokens before it"
        + (f" ({rule})" if rule else "")
        + "; run: the longest stretch of correct tokens; "
        "repeat: the longest stretch of one symbol, correct or not"
    )


def _cells(s: SampleStats) -> tuple[str, str, str, str]:
    first = "-" if s.first_error < 0 else str(s.first_error)
    return f"{100 * s.fraction_correct:.1f}%", first, str(s.longest_run), str(s.longest_repeat)


def _summary_cells(m: Summary) -> tuple[str, str, str, str]:
    first = "-" if m.mean_first_error is None else f"{m.mean_first_error:.1f}"
    runs = f"{m.mean_longest_run:.1f}", f"{m.mean_longest_repeat:.1f}"
    return f"{100 * m.mean_fraction_correct:.1f}%", first, *runs


def _ansi(cells: Sequence[str], kinds) -> str:
    """Cells coloured by kind, one escape sequence per run of one kind."""
    out, start = [], 0
    for j in range(1, len(cells) + 1):
        if j == len(cells) or kinds[j] != kinds[start]:
            out.append(f"{_ANSI[kinds[start]]}{''.join(cells[start:j])}\x1b[0m")
            start = j
    return "".join(out)


def _token_cells(tokens, ids: bool, width: int) -> list[str]:
    """One cell per token: its glyph, or its id right-aligned in `width` digits, a space between."""
    if not ids:
        return list(glyphs.render(tokens))
    return [
        f"{t:>{width}}" + (" " if j < len(tokens) - 1 else "")
        for j, t in enumerate(np.asarray(tokens).tolist())
    ]


def token_texts(result: SampleResult, ids: bool = False) -> list[list[str]]:
    """Each sample's token cells as every renderer writes them: a glyph each, or ids."""
    ids = shows_ids(result, ids)
    return [[c.strip() for c in _token_cells(tokens, ids, 1)] for tokens in result.tokens]


def render_text(result: SampleResult, colour: bool = False, ids: bool = False) -> str:
    """The samples as terminal text: statistics first (so columns align), then the tokens."""
    ids = shows_ids(result, ids)
    kinds = result.kinds()
    if colour:
        legend = " ".join(f"{_ANSI[k]}{k}\x1b[0m" for k in (SEED, CORRECT, INCORRECT))
    else:
        legend = "s seed, . correct, x incorrect"
    width = len(str(int(result.tokens.max()))) if result.tokens.size else 1
    row = "{:>3}  {:>7}  {:>7}  {:>4}  {:>6}  "
    lines = [
        describe(result, ids),
        definitions(result),
        f"legend: {legend}",
        row.format("#", "correct", "1st err", "run", "repeat") + "sample",
    ]
    for i, (tokens, s) in enumerate(zip(result.tokens, result.stats)):
        cells = _token_cells(tokens, ids, width)
        head = row.format(i, *_cells(s))
        lines.append(head + (_ansi(cells, kinds[i]) if colour else "".join(cells)))
        if not colour:
            marks = [_MARK[k].rjust(len(c.rstrip())).ljust(len(c)) for c, k in zip(cells, kinds[i])]
            lines.append(" " * len(head) + "".join(marks).rstrip())
    m = result.summary
    errors = f"({m.error_free} of {m.n} samples without an error)"
    lines.append(row.format("avg", *_summary_cells(m)) + errors)
    return "\n".join(lines) + "\n"


_CSS = f"""body {{ font-family: sans-serif; }}
table.samples {{ border-collapse: collapse; }}
table.samples td, table.samples th {{ padding: 1px 3px; text-align: center; }}
.tok {{ font-family: monospace; font-size: 15px; min-width: 1em; border: 1px solid #fff; padding: 1px 3px; }}
.tok.seed {{ background: {COLOURS[SEED]}; font-weight: bold; }}
.tok.correct {{ background: {COLOURS[CORRECT]}; }}
.tok.incorrect {{ background: {COLOURS[INCORRECT]}; font-weight: bold; text-decoration: underline; }}
td.stat, th.stat {{ padding-left: 10px; text-align: right; font-size: 13px; }}
tr.mean td {{ border-top: 1px solid #444; }}"""


def render_html(result: SampleResult, ids: bool = False) -> str:
    """A self-contained HTML page: one table row per sample, one coloured cell per token."""
    ids = shows_ids(result, ids)
    e = html.escape
    kinds = result.kinds()
    length = result.tokens.shape[1]
    legend = " ".join(f'<span class="tok {k}">{k}</span>' for k in (SEED, CORRECT, INCORRECT))
    rows = [
        f'<tr><th>#</th><th colspan="{length}">sample</th><th class="stat">correct</th>'
        '<th class="stat">first error</th><th class="stat">longest run</th>'
        '<th class="stat">longest repeat</th></tr>'
    ]
    texts = token_texts(result, ids)
    for i, (tokens, s) in enumerate(zip(result.tokens, result.stats)):
        cells = "".join(
            f'<td class="tok {k}" title="token {t}">{e(g)}</td>'
            for g, t, k in zip(texts[i], tokens.tolist(), kinds[i])
        )
        stats = "".join(f'<td class="stat">{c}</td>' for c in _cells(s))
        rows.append(f"<tr><td>{i}</td>{cells}{stats}</tr>")
    mean = "".join(f'<td class="stat">{c}</td>' for c in _summary_cells(result.summary))
    rows.append(
        f'<tr class="mean"><td colspan="{length + 1}" style="text-align:right">mean '
        f"({result.summary.error_free} of {result.summary.n} without an error)</td>{mean}</tr>"
    )
    body = "\n".join(rows)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>spamlang samples</title>\n'
        f"<style>\n{_CSS}\n</style></head><body>\n<p>{e(describe(result, ids))}</p>\n<p>{e(definitions(result))}</p>\n<p>{legend}</p>\n"
        f'<table class="samples">\n{body}\n</table>\n</body></html>\n'
    )
