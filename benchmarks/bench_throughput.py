"""Training tokens/s of the paper's model on this machine: the rows of `spamlang/throughput.csv`
that a dry run times a new group by (`spamlang.sweep.dry_run`), timed (`measure`) or read from
the committed sweeps (`from_results`).

Run: python benchmarks/bench_throughput.py [--quick] [--write] [--from-results results]
(the table: about 45 minutes on 2 cores; --quick: a smoke run, tiny preset, 2 shapes)
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import importlib.util
import os
import statistics
import sys
from pathlib import Path

SEQ_LEN = 2
VOCABS = (4096, 8192, 32768)
BATCHES = (8, 32, 64)


@dataclasses.dataclass(frozen=True)
class Shape:
    preset: str
    n_layers: int | None  # None: the preset's
    vocab_size: int
    batch_size: int
    dtype: str = "float32"


# One member of `smollm2-106m` (30 layers) and of the same model cut to 8 layers, untied, at L = 2
# (the paper grids' `--seq-len 2`), B = 8, 32 and 64 and V = 4,096, 8,192 and 32,768, in float32,
# and at B = 64 in bfloat16 (the dtype of `sweeps/paper_fig5_optimizer.py`). A shape takes about
# 2 minutes on 2 cores, most of it building and compiling the 30-layer program.
def shapes(quick: bool) -> list[Shape]:
    if quick:
        return [Shape("tiny", None, 1024, 32), Shape("tiny", None, 4096, 32)]
    out = [
        Shape("smollm2-106m", layers, vocab, batch)
        for layers in (None, 8)
        for vocab in VOCABS
        for batch in BATCHES
    ]
    return out + [Shape("smollm2-106m", None, vocab, 64, "bfloat16") for vocab in VOCABS]


def config_of(shape: Shape):
    from spamlang.train.config import TrainConfig

    tokens_per_step = shape.batch_size * SEQ_LEN
    return TrainConfig(
        preset=shape.preset,
        model={} if shape.n_layers is None else {"n_layers": shape.n_layers},
        vocab_size=shape.vocab_size,
        seq_len=SEQ_LEN,
        batch_size=shape.batch_size,
        dtype=shape.dtype,
        tokens=tokens_per_step * 10**6,  # the step compiled does not depend on the budget
    )


def rate_row(config, members: int, tokens_per_s: float, source: str):
    """The table row of `config`'s shape at `tokens_per_s` per member."""
    from spamlang.perf import cpu_model, flops_per_token
    from spamlang.throughput import Rate

    model = config.model_config()
    return Rate(
        preset=config.preset,
        d_model=model.d_model,
        n_layers=model.n_layers,
        vocab_size=config.vocab_size,
        batch_size=config.batch_size,
        seq_len=config.seq_len,
        tie_embeddings=config.tie_embeddings,
        dtype=config.dtype,
        members=members,
        tokens_per_s=tokens_per_s,
        flops_per_token=float(flops_per_token(model, config.seq_len)),
        cpu=cpu_model(),
        cores=os.cpu_count(),
        source=source,
    )


def measure(shape: Shape, seconds: float, repeats: int):
    """One member of `shape` timed in `repeats` rounds of about `seconds` each: its row.

    The compiled train step as a sweep runs it (auto kernels and micro-batches, AdamW with
    clipping, exposure counting), compiled and stepped once, then timed in rounds that block on
    the result at the end of each; the best round, so that other jobs slow it as little as
    possible."""
    from spamlang.perf import step_timer
    from spamlang.train.step import program

    config = config_of(shape)
    run = step_timer(program(config))
    run(1)  # compile and warm up
    # Enough steps for a round of about `seconds` (at least 2), from one timed step.
    steps = max(2, min(200, round(seconds / run(1))))
    best = min(run(steps) for _ in range(repeats))
    # The machine's load says how much other work the best round may still have shared it with.
    source = (
        f"bench_throughput.py: best of {repeats} rounds of {steps} steps after compiling, "
        f"1 member; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores after"
    )
    return rate_row(config, 1, steps * config.tokens_per_step / best, source)


def _sweep(path: Path):
    spec = importlib.util.spec_from_file_location(f"_sweep_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SWEEP


def _counts(config) -> bool:
    """Whether a run's speed stands for its shape (`from_results`)."""
    overrides = set(config.model) - {"n_layers"}
    return config.optimizer == "adamw" and config.head == "softmax" and not overrides


def from_results(results: Path, sweeps: Path) -> list:
    """Per-shape medians of the finished runs' tokens/s in `results/*/results.csv`, pooled
    over the sweeps (a shape's rate does not depend on the LR, seed or optimizer settings).

    `sweeps/NAME.py` beside `results` gives each run's group: a run trained in a vmapped group
    when its steps held at most `CPU_VMAP_TOKENS` tokens (the sweep's default on a CPU), and its
    tokens/s is per member (`spamlang.train.run`), so a row keeps the group's size (`members`,
    from the sweep file as it stands) and the dry run scales by it. Only AdamW runs of the
    softmax head with no model override but n_layers count (other heads and optimizers cost
    differently); LR bracketing's runs, not in the sweep file's grid, are left out (their group
    size is unknown). The CPU is a row's own `cpu` and `cores`, else the one results/README.md
    names (`spamlang.throughput.COMMITTED_MACHINE`); each CPU gets its own rows."""
    from spamlang.sweep.runner import CPU_VMAP_TOKENS
    from spamlang.sweep.spec import groups
    from spamlang.throughput import COMMITTED_MACHINE, row_machine

    shapes: dict[tuple, list] = {}  # row key -> [a row, tokens/s of each run, sweep names]
    for csv_path in sorted(results.glob("*/results.csv")):
        sweep_file = sweeps / f"{csv_path.parent.name}.py"
        if not sweep_file.is_file():
            print(f"# skipped {csv_path}: no {sweep_file}", file=sys.stderr)
            continue
        point = {}  # run id -> (config, the size of the program it trained in)
        sweep = _sweep(sweep_file)
        for group in groups(sweep, sweep.group_size):  # as `spamlang sweep` groups them
            for run_id, config in group:
                together = config.tokens_per_step <= CPU_VMAP_TOKENS
                point[run_id] = (config, len(group) if together else 1)
        with open(csv_path, newline="") as f:
            for record in csv.DictReader(f):
                config, members = point.get(record["run_id"], (None, 0))
                if config is None or not _counts(config) or not record["tokens_per_s"]:
                    continue
                cpu, cores = row_machine(record, COMMITTED_MACHINE)
                row = dataclasses.replace(rate_row(config, members, 0.0, ""), cpu=cpu, cores=cores)
                entry = shapes.setdefault(row.key(), [row, [], set()])
                entry[1].append(float(record["tokens_per_s"]))
                entry[2].add(csv_path.parent.name)
    rows = []
    for row, rates, names in shapes.values():
        source = (
            f"median of {len(rates)} finished runs in results/ ({', '.join(sorted(names))}): "
            f"vmapped groups of {row.members}, tokens/s per member"
            if row.members > 1
            else f"median of {len(rates)} finished runs in results/ ({', '.join(sorted(names))})"
            ": trained one by one"
        )
        rows.append(dataclasses.replace(row, tokens_per_s=statistics.median(rates), source=source))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny preset, 2 shapes")
    parser.add_argument("--seconds", type=float, default=None, help="time of a timing round")
    parser.add_argument("--repeats", type=int, default=None, help="timing rounds per shape")
    parser.add_argument(
        "--from-results",
        type=Path,
        default=None,
        metavar="DIR",
        help="rows from DIR/*/results.csv (sweep files in DIR/../sweeps) instead of timing",
    )
    parser.add_argument("--write", action="store_true", help="merge the rows into the table")
    parser.add_argument("--table", type=Path, default=None, help="the CSV (default: shipped)")
    args = parser.parse_args(argv)

    from spamlang.perf import machine_line
    from spamlang.throughput import TABLE, write

    table = args.table or TABLE
    print(machine_line())
    print(
        f"{'preset':>12} {'layers':>6} {'V':>6} {'B':>4} {'tied':>5} {'dtype':>8} {'members':>7} | "
        f"{'tokens/s':>10} {'GFLOP/s':>8} | cpu, cores | source",
        flush=True,
    )
    rows = []

    def show(row) -> None:
        print(
            f"{row.preset:>12} {row.n_layers:>6} {row.vocab_size:>6} {row.batch_size:>4} "
            f"{'yes' if row.tie_embeddings else 'no':>5} "
            f"{row.dtype:>8} {row.members:>7} | {row.tokens_per_s:>10,.1f} "
            f"{row.tokens_per_s * row.flops_per_token / 1e9:>8.1f} | {row.cpu}, {row.cores} | "
            f"{row.source}",
            flush=True,
        )
        rows.append(row)
        if args.write:  # row by row, so an interrupted run keeps what it measured
            write([row], table)

    if args.from_results is not None:
        sweeps = args.from_results.resolve().parent / "sweeps"
        for row in from_results(args.from_results, sweeps):
            show(row)
    else:
        seconds = args.seconds or (0.5 if args.quick else 4.0)
        for shape in shapes(args.quick):
            show(measure(shape, seconds, args.repeats or 5))
    if args.write:
        print(f"wrote {len(rows)} row(s) into {table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
