"""The throughput table shipped with the package (`throughput.csv`): training tokens/s measured
on a CPU, by model shape, that a dry run turns into a time for runs nothing similar has timed.

Rows come from `python benchmarks/bench_throughput.py --write` (timed steps) and `... --from-results
results --write` (the committed sweeps' finished runs). Reading it imports no JAX.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import math
from pathlib import Path

TABLE = Path(__file__).with_name("throughput.csv")
# The committed sweeps' results (not in a wheel), in float32, measured on COMMITTED_MACHINE where
# a row names no `cpu`.
RESULTS = Path(__file__).resolve().parents[1] / "results"
COMMITTED_MACHINE = ("AMD EPYC", 2)  # `spamlang.perf.cpu_model()`, cores


@dataclasses.dataclass(frozen=True)
class Rate:
    """One row: a shape trained as a program of `members` runs, `tokens_per_s` per member."""

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

    def key(self) -> tuple:
        """What a newer measurement of the same thing replaces (`write`)."""
        return dataclasses.astuple(self)[:9] + (self.cpu,)

    def describe(self) -> str:  # `smollm2-106m (30 layers, D 576) V 8,192 B 64 L 2 float32, ...`
        return (
            f"{self.preset} ({self.n_layers} layers, D {self.d_model}) V {self.vocab_size:,} "
            f"B {self.batch_size} L {self.seq_len} {self.dtype}, {self.members} member(s): "
            f"{self.tokens_per_s:,.4g} tokens/s each"
        )


COLUMNS = [f.name for f in dataclasses.fields(Rate)]
# A CSV cell as its Rate field's annotation (a string, under `from __future__ import annotations`).
_PARSE = {"int": int, "float": float, "str": str, "bool": lambda v: str(v).lower() == "true"}


def _row(record: dict) -> Rate:
    return Rate(**{f.name: _PARSE[f.type](record[f.name]) for f in dataclasses.fields(Rate)})


@functools.cache
def _load(path: str) -> tuple[Rate, ...]:
    with open(path, newline="") as f:
        return tuple(_row(r) for r in csv.DictReader(f) if not r["preset"].startswith("#"))


def table(path: Path | str | None = None) -> tuple[Rate, ...]:
    """The rows of the table at `path` (default the shipped one); () when it is missing."""
    path = TABLE if path is None else path
    return _load(str(path)) if Path(path).is_file() else ()


def write(rows: list[Rate], path: Path | str | None = None) -> None:
    """Merge `rows` into the table at `path` (a row replaces its `key`'s), sorted by shape."""
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


# ----- whole programs: finished runs' wall time; SHAPE: what sets a step's time ------------
SHAPE = (
    "preset", "n_layers", "d_model", "vocab_size", "batch_size", "seq_len", "tie_embeddings",
    "head", "dtype",
)  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Timing:
    """One measured program (a run, a vmapped group, or a table row without wall time):
    `step_seconds` a step of the whole program, `fixed_seconds` the rest of its wall time."""

    shape: tuple  # values of SHAPE
    members: int
    steps: int
    wall_seconds: float | None
    step_seconds: float
    source: str  # where it was measured: an output folder, results/<sweep>, the table
    machine: tuple = ()  # (cpu, cores) of another machine's timing; (): this machine's
    flops_per_token: float | None = None  # a table row's own; None: from the shape

    @property
    def fixed_seconds(self) -> float | None:
        if self.wall_seconds is None:
            return None
        return max(0.0, self.wall_seconds - self.steps * self.step_seconds)

    @property
    def model(self) -> tuple:  # (preset, n_layers, d_model)
        return self.shape[:3]

    @property
    def step_tokens(self) -> int:  # tokens of one step of the program, all members
        return self.members * self.shape[4] * self.shape[5]


def shape_of(values: dict) -> tuple | None:
    """The SHAPE of a results.csv row or flat config (None: a value is missing; dtype float32)."""
    values = {"dtype": "float32", "head": "softmax", **values}
    for name in ("n_layers", "d_model"):  # tables of older versions: the preset's
        if values.get(name) in (None, ""):
            from spamlang.model.config import model_field

            values[name] = model_field({"preset": values.get("preset")}, name)
    try:
        ints = {k: int(float(values[k])) for k in SHAPE[1:6] if k != "vocab_size"}
        ints["vocab_size"] = int(float(values["vocab_size"]))
        tied = str(values["tie_embeddings"]).lower() == "true"
    except (KeyError, TypeError, ValueError):
        return None
    return (
        str(values["preset"]), ints["n_layers"], ints["d_model"], ints["vocab_size"],
        ints["batch_size"], ints["seq_len"], tied, str(values["head"]), str(values["dtype"]),
    )  # fmt: skip


def timings(rows: list[dict], source: str, machine: tuple = ()) -> list[Timing]:
    """The programs of finished runs' rows (a vmapped group as one), each on the machine its
    row names (`cpu`, `cores`), else on `machine`."""
    programs: dict[tuple, int] = {}
    for row in rows:
        shape, rate = shape_of(row), _positive(row.get("tokens_per_s"))
        if shape is None or rate is None:
            continue
        steps, wall = _positive(row.get("steps")), _positive(row.get("wall_seconds"))
        key = (shape, int(steps or 0), wall if steps else None, rate, row_machine(row, machine))
        programs[key] = programs.get(key, 0) + 1
    return [
        # A member's tokens/s is over the program's time: a step takes its tokens over it.
        Timing(shape, members, steps, wall, shape[4] * shape[5] / rate, source, on)
        for (shape, steps, wall, rate, on), members in programs.items()
    ]


def row_machine(row: dict, default: tuple = ()) -> tuple:
    """(cpu, cores) that a results row was timed on; `default` for a row that names none (a run
    of an older version, or on an accelerator)."""
    cores = _positive(row.get("cores"))
    return (str(row["cpu"]), int(cores)) if row.get("cpu") and cores else default


def _positive(value) -> float | None:  # positive and finite, else None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number > 0 else None


@functools.cache
def _committed(root: str) -> tuple[Timing, ...]:
    found = []
    for path in sorted(Path(root).glob("*/results.csv")):
        try:
            with open(path, newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
        except (OSError, UnicodeDecodeError, csv.Error):
            continue  # a damaged table times nothing; its readers say what is wrong
        found.extend(timings(rows, f"results/{path.parent.name}", COMMITTED_MACHINE))
    return tuple(found)


def committed_timings(root: Path | str | None = None) -> tuple[Timing, ...]:
    """The programs of every committed sweep (`RESULTS`, or `root`); () without them."""
    return _committed(str(RESULTS if root is None else root))


def table_timings(rows: tuple[Rate, ...] | list[Rate]) -> list[Timing]:
    """The table's rows as programs with a step time (and their own FLOPs a token), no wall time."""
    return [
        Timing(
            shape=shape_of({**dataclasses.asdict(r), "head": "softmax"}),
            members=r.members,
            steps=0,
            wall_seconds=None,
            step_seconds=r.batch_size * r.seq_len / r.tokens_per_s,
            source=f"row [{r.describe()}]",
            machine=(r.cpu, r.cores),
            flops_per_token=r.flops_per_token,
        )
        for r in rows
    ]
