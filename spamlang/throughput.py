"""The throughput table shipped with the package (`throughput.csv`): training tokens/s measured
on a CPU, by model shape, that a dry run turns into a time for runs nothing similar has timed.

A row is one shape (preset, d_model, n_layers, V, B, L, tying, dtype) trained as a program of
`members` runs (a vmapped group, or 1): `tokens_per_s` is per member, as result.json reports
it (`spamlang.train.run`: a member's steps x tokens per step over the program's time), so the
program moves members x tokens_per_s tokens a second. `flops_per_token` is
`spamlang.perf.flops_per_token` of the row's shape, so a row converts to FLOP/s (`Rate.flops`)
and lends itself to a shape it did not measure, scaled by FLOPs. `cpu` and `cores` say where it
was measured (`spamlang.perf.cpu_model()`, `os.cpu_count()`), `source` how.

Rows come from `python benchmarks/bench_throughput.py --write` (timed steps of the paper's
model) and `... --from-results results --write` (the committed sweeps' finished runs). Reading
it imports no JAX: the dry run reads it.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import math
from pathlib import Path

TABLE = Path(__file__).with_name("throughput.csv")


@dataclasses.dataclass(frozen=True)
class Rate:
    """One row of the table (module doc)."""

    preset: str
    d_model: int
    n_layers: int
    vocab_size: int
    batch_size: int
    seq_len: int
    tie_embeddings: bool
    dtype: str
    members: int
    tokens_per_s: float
    flops_per_token: float
    cpu: str
    cores: int
    source: str

    @property
    def flops(self) -> float:
        """FLOP/s of the row's whole program: every member's tokens at the row's FLOPs/token."""
        return self.members * self.tokens_per_s * self.flops_per_token

    @property
    def step_tokens(self) -> int:
        """Tokens one step of the program processes, all members together."""
        return self.members * self.batch_size * self.seq_len

    def key(self) -> tuple:
        """What a newer measurement of the same thing replaces (`write`)."""
        return dataclasses.astuple(self)[:9] + (self.cpu,)

    def describe(self) -> str:
        """`smollm2-106m (30 layers, D 576) V 8,192 B 64 L 2 float32, 1 member: 52 tokens/s`."""
        return (
            f"{self.preset} ({self.n_layers} layers, D {self.d_model}) V {self.vocab_size:,} "
            f"B {self.batch_size} L {self.seq_len} {self.dtype}, {self.members} member(s): "
            f"{self.tokens_per_s:,.4g} tokens/s each"
        )


COLUMNS = [f.name for f in dataclasses.fields(Rate)]
_INTS = ("d_model", "n_layers", "vocab_size", "batch_size", "seq_len", "members", "cores")


def _row(record: dict) -> Rate:
    values = dict(record)
    for name in _INTS:
        values[name] = int(values[name])
    for name in ("tokens_per_s", "flops_per_token"):
        values[name] = float(values[name])
    values["tie_embeddings"] = str(values["tie_embeddings"]).lower() == "true"
    return Rate(**{name: values[name] for name in COLUMNS})


@functools.cache
def _load(path: str) -> tuple[Rate, ...]:
    with open(path, newline="") as f:
        return tuple(_row(r) for r in csv.DictReader(f) if not r["preset"].startswith("#"))


def table(path: Path | str | None = None) -> tuple[Rate, ...]:
    """The rows of the table at `path` (default `TABLE`, the shipped one); () when it is
    missing."""
    path = TABLE if path is None else path
    return _load(str(path)) if Path(path).is_file() else ()


def write(rows: list[Rate], path: Path | str | None = None) -> None:
    """Merge `rows` into the table at `path`: each replaces the row of the same `key`, the rest
    stay; rows sorted by shape, so the file diffs by measurement."""
    path = TABLE if path is None else path
    merged = {r.key(): r for r in table(path)}
    merged.update((r.key(), r) for r in rows)
    with open(path, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(COLUMNS)
        for r in sorted(merged.values(), key=lambda r: (r.key(), r.source)):
            out.writerow(
                [f"{v:.6g}" if isinstance(v, float) else v for v in dataclasses.astuple(r)]
            )
    _load.cache_clear()


def nearest(
    rows: tuple[Rate, ...] | list[Rate],
    model: tuple,
    dtype: str,
    flops_per_token: float,
    step_tokens: int,
) -> Rate | None:
    """The row that best stands for a program of `model` = (preset, n_layers, d_model) in
    `dtype` at `flops_per_token`, moving `step_tokens` tokens a step (all members): the same
    model, then the same dtype, preferred (a CPU's FLOP/s depends on the matrices' shapes and
    on its bfloat16 support); among those, the nearest in FLOPs per token and in tokens per
    step, both on a log scale (small steps leave a CPU's cores idle between launches)."""

    def distance(r: Rate) -> tuple:
        return (
            (r.preset, r.n_layers, r.d_model) != tuple(model),
            r.dtype != dtype,
            abs(math.log(r.flops_per_token / flops_per_token))
            + abs(math.log(r.step_tokens / step_tokens)),
        )

    return min(rows, key=distance, default=None)
