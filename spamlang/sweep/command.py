"""The command line shared by every sweep script and by `spamlang sweep FILE`.

A script in sweeps/ defines `SWEEP = Sweep(...)` and ends with
`raise SystemExit(spamlang.sweep.main(SWEEP))`; `spamlang sweep FILE` loads the same file (or a
JSON description) and takes the same flags. A script may set a module-level `PLOTS = True` to
make `--plots` its default (`spamlang sweep` honours it too; `--no-plots` turns it off).
Two flags run a variant of the sweep in a directory of its own: `--set` (`with_overrides`) and
`--seq-len` (`at_seq_len`).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
import typing
from pathlib import Path
from typing import Any

from spamlang.error_policy import Parser, run_command
from spamlang.errors import UserError, describe, first_line
from spamlang.sweep.best_lr import DEFAULT_LIMIT
from spamlang.sweep.dry_run import dry_run
from spamlang.sweep.spec import (
    MAX_POINTS,
    Sweep,
    axis_type,
    build_point,
    check_bracket,
    check_size,
    check_value,
    fields_of,
    id_part,
    parse_shard,
)


def _at_least(low: int):
    """An argparse type: an integer >= `low`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
        return value

    return parse


def add_arguments(parser: argparse.ArgumentParser, *, plots: bool | None = False) -> None:
    """The flags of a sweep run."""
    parser.add_argument(
        "--out", metavar="DIR", default=None, help="sweep directory (default: runs/<sweep name>)"
    )
    parser.add_argument(
        "--shard",
        metavar="i/n",
        default="0/1",
        help="run only shard i of n (0 <= i < n): groups i, i+n, ... of the sorted "
        "group list; e.g. --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT "
        "with a 0-based array (default 0/1: everything)",
    )
    parser.add_argument(
        "--group-size",
        metavar="K",
        type=int,
        default=0,
        help="at most K runs (differing in lr/seed) per vmapped program; 1: every run on its "
        "own; 0 (default): as many as fit the device when its memory is known (an "
        "accelerator's, or SPAMLANG_DEVICE_MEMORY, e.g. 80GiB), else no limit. An explicit K "
        "is kept, with a warning if it does not fit",
    )
    parser.add_argument(
        "--vmap",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="train each group of runs differing only in lr/seed as one vmapped program "
        "(default: on accelerators, and on CPU for steps of at most 256 tokens)",
    )
    parser.add_argument(
        "--bracket-lr",
        metavar="N",
        type=_at_least(0),
        nargs="?",
        const=DEFAULT_LIMIT,
        default=None,
        help="when a cell's best LR is the largest or smallest of its grid, train the next LR "
        "beyond it for every seed, until the best is inside the grid, reaches the loss floor, "
        f"or N LRs were added on that side (default N: {DEFAULT_LIMIT}; 0 turns it off; "
        "without the flag: Sweep.bracket_lr)",
    )
    parser.add_argument(
        "--seq-len",
        metavar="L",
        type=int,
        default=None,
        help="run the equivalent sweep at sequence length L (same batch and steps, budgets "
        "scaled) as <name>-L<L>: SpamLang with RoPE gives the same results at any length, so "
        "--seq-len 2 costs about 2/L of the original; refused for languages with context",
    )
    parser.add_argument(
        "--max-points",
        metavar="N",
        type=_at_least(1),
        default=MAX_POINTS,
        help=f"refuse a sweep of more than N points (default {MAX_POINTS:,}: usually a slip)",
    )
    parser.add_argument(
        "--set",
        metavar="FIELD=VALUE",
        action="append",
        default=[],
        help="change a field of the sweep's base (repeatable): a run field (tokens=200K), "
        "model.<field> or param.<name>, not one the axes set; the sweep is then named "
        "<name>-<field><value> (runs/<name>-tok200K), apart from the original's runs. How to "
        "train a larger budget: a finished run cannot be extended",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar, progress lines or per-run lines (a log gets a line per "
        "running run or group every SPAMLANG_LOG_SECONDS seconds, default 30)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="list the points, their status, the token/FLOP budget and a time estimate; "
        "run nothing",
    )
    parser.add_argument(
        "--plots",
        action=argparse.BooleanOptionalAction,
        default=plots,
        help="after the runs, write heatmap.png and curves.png (default: "
        + ("as the sweep file says (PLOTS)" if plots is None else "on" if plots else "off")
        + ")",
    )
    parser.add_argument(
        "--figures",
        metavar="DIR",
        default=None,
        help="where --plots writes (default: the sweep directory)",
    )
    parser.add_argument(
        "--tracker",
        choices=("tensorboard", "wandb", "none"),
        default=None,
        help="mirror every run's metrics, config and result to TensorBoard (<sweep "
        "dir>/tensorboard/<run id>) or W&B (group <sweep name>); needs the extra of that name; "
        "one that cannot start is an error (default: Sweep(tracker=...), which only warns)",
    )


def _plot(out: Path, figures: Path, rows: list[dict], samples: tuple = ()) -> None:
    """Draw the sweep's figures into `figures`. A figure that storage refuses (a read-only
    copy of a finished sweep) is skipped with one line on stderr; the others are drawn."""
    from spamlang.plots.curves import plot_curves
    from spamlang.plots.sweep import plot_heatmap
    from spamlang.sweep.results_csv import is_read_only

    drawers = [
        ("the figures", lambda: figures.mkdir(parents=True, exist_ok=True) or []),
        ("heatmap.png", lambda: [plot_heatmap(out, figures / "heatmap.png")]),
        ("curves.png", lambda: [plot_curves(out, figures / "curves.png")]),
    ]
    drawers += [
        (f"the samples of {where}", lambda where=where: _sample_figure(out, figures, rows, where))
        for where in samples
    ]
    written = []
    for what, draw in drawers:
        try:
            written.extend(draw())
        except OSError as e:
            if not is_read_only(e):
                raise
            print(
                f"note: skipped {what}: {figures} cannot be written "
                f"({e.strerror or describe(e)}); --figures DIR draws them elsewhere",
                file=sys.stderr,
            )
            if what == "the figures":
                return  # no folder to draw any of them in
    if written:
        print("figures: " + ", ".join(str(p) for p in written))


def _sample_figure(out: Path, figures: Path, rows: list[dict], where: dict) -> list[Path]:
    """Table 1's analogue for one cell (`where`: settings such as {"vocab_size": 4096,
    "tie_embeddings": True}): 6 samples of 32 tokens at temperature 0.9, seeded with token 0
    (`A`), from the cell's best-LR run (seed-mean final eval loss), lowest seed;
    `samples_V4096_tied.png`. Nothing when the cell has no finished run."""
    from spamlang.plots.samples import plot_samples
    from spamlang.sample import sample_run
    from spamlang.sweep.best_lr import best_lrs

    cell = [r for r in rows if all(r.get(k) == v for k, v in where.items())]
    best = best_lrs(cell)
    if not best:
        return []
    run = min((r for r in cell if r["lr"] == best[0].lr), key=lambda r: r.get("seed") or 0)
    name = "samples_" + "_".join(id_part(k, v) for k, v in where.items())  # samples_V4096_tied
    result = sample_run(out / run["run_id"], n=6, length=32, temperature=0.9, prompt=[0], seed=0)
    return [plot_samples(result, figures / f"{name}.png")]


def with_overrides(sweep: Sweep, texts: list[str] | tuple = ()) -> Sweep:
    """`sweep` with each "FIELD=VALUE" of `texts` (`--set`) set in its base; `sweep` itself when
    there are none. UserError naming the --set for anything bad.

    VALUE is read as `spamlang train --param` reads one: JSON where it parses, else the text
    ("200K", "lowrank:8"); a string field keeps the text as typed. A sweep directory holds one
    base config (`spamlang.sweep.sweep_file`), hence the variant's own name (--set help).
    """
    if not texts:
        return sweep
    on_axes = {name for axis in sweep.axes for name in fields_of(axis)}
    changes: dict[str, Any] = {}
    for text in texts:
        name, sep, raw = str(text).partition("=")
        name = name.strip()
        if not sep or not name:
            raise UserError(f"--set must look like FIELD=VALUE (e.g. tokens=200K), got {text!r}")
        if name in changes:
            raise UserError(f"--set {name} is given twice")
        try:
            tp = axis_type(sweep.base, name)
        except UserError as e:  # in the words of --set, which names fields
            words = str(e).replace("unknown axis", "unknown field").replace("axis '", "field '")
            raise UserError(f"--set {text}: {words}") from None
        if name in on_axes:
            raise UserError(
                f"--set {text}: {name} is an axis of sweep {sweep.name!r}, which "
                "sets it for every point; --set changes the fields the axes leave "
                "to the base"
            )
        if not (tp is str or str in typing.get_args(tp)):
            with contextlib.suppress(ValueError):  # else a count such as 200K, checked below
                raw = json.loads(raw)
        try:
            changes[name] = check_value(sweep.base, name, raw)
        except ValueError as e:
            raise UserError(f"--set {text}: {str(e).splitlines()[0]}") from None
    try:
        base = build_point(sweep.base, changes)
    except (ValueError, TypeError) as e:
        said = " ".join(f"--set {t}" for t in texts)
        raise UserError(f"{said}: {first_line(e) or type(e).__name__}") from None
    name = "-".join([sweep.name, *(id_part(k, v) for k, v in changes.items())])
    return Sweep(
        name,
        base,
        sweep.axes,
        bracket_lr=sweep.bracket_lr,
        grown=sweep.grown,
        overrides={**sweep.overrides, **changes},
    )


def _budget(tokens: int, batch_size: int, old_len: int, new_len: int) -> int:
    """The token budget that keeps the step count of `tokens` at the new length."""
    return tokens // (batch_size * old_len) * batch_size * new_len


def at_seq_len(sweep: Sweep, seq_len: int) -> Sweep:
    """`sweep` with every point at `seq_len` and the same batch and step count (each token
    budget scaled to match), named `<name>-L<seq_len>` so that it never mixes with the
    original's runs.

    With RoPE a SpamLang sequence (one symbol repeated) has the same hidden state at every
    position, and the loss averages over positions, so the length only multiplies the compute:
    `at_seq_len(sweep, 2)` costs about 2 / L of the original. Refused for languages whose
    positions differ (`Language.position_invariant`), and for sweeps that vary seq_len.
    """
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 2:
        raise UserError(f"--seq-len must be an integer >= 2, got {seq_len!r}")
    fields = [n for axis in sweep.axes for n in fields_of(axis)]
    if "seq_len" in fields:
        raise UserError(
            f"sweep {sweep.name!r} varies seq_len itself; --seq-len would erase that axis"
        )
    for run_id, config in sweep.points():
        if not config.make_language().position_invariant:
            raise UserError(
                f"--seq-len: run {run_id} trains on {config.language!r}, whose "
                "positions differ (context matters), so its length changes the "
                "run; only position-invariant languages (spam, zipf-spam) can"
            )
    base = sweep.base
    old = base.seq_len

    def scaled(axis: str, value: Any) -> Any:
        names = fields_of(axis)
        if "tokens" not in names:
            return value
        v = dict(zip(names, value if len(names) > 1 else [value]))
        v["tokens"] = _budget(v["tokens"], v.get("batch_size", base.batch_size), old, seq_len)
        return list(v.values()) if len(names) > 1 else v["tokens"]

    short = Sweep(
        f"{sweep.name}-L{seq_len}",
        base.replace(seq_len=seq_len, tokens=_budget(base.tokens, base.batch_size, old, seq_len)),
        {axis: [scaled(axis, v) for v in values] for axis, values in sweep.axes.items()},
        bracket_lr=sweep.bracket_lr,
        overrides=sweep.overrides,
    )
    for (run_id, a), (_, b) in zip(sweep.points(), short.points()):
        if (a.steps, a.batch_size) != (b.steps, b.batch_size):
            # One budget over several batch sizes that do not divide it evenly.
            raise UserError(
                f"--seq-len: run {run_id} would change from {a.steps} to {b.steps} "
                "steps; give each batch size its own tokens (a linked axis)"
            )
    return short


def execute(sweep: Sweep, args: argparse.Namespace, samples: tuple = ()) -> int:
    """Run (or list) the sweep as the parsed flags say. Raises UserError on bad input.
    `samples`: the cells whose sample tables --plots also draws (a script's SAMPLES)."""
    from spamlang import tracking
    from spamlang.sweep.runner import run_sweep

    explicit = getattr(args, "tracker", None) is not None
    kind = tracking.parse_kind(args.tracker if explicit else sweep.tracker)
    shard = parse_shard(args.shard)
    check_size(sweep, args.max_points)  # before anything expands the points
    sweep = with_overrides(sweep, args.set)  # before --seq-len scales the budgets it may set
    if args.seq_len is not None:
        sweep = at_seq_len(sweep, args.seq_len)
    out = Path(args.out) if args.out else Path("runs") / sweep.name
    limit = check_bracket(
        sweep.bracket_lr if args.bracket_lr is None else args.bracket_lr, sweep.axes
    )
    if args.dry_run:
        dry_run(sweep, out, shard, args.group_size, args.vmap)
        if limit:
            print(
                f"LR bracketing on: a cell whose best LR ends at an edge of its grid adds up "
                f"to {limit} LRs per side, for every seed (not listed above)"
            )
        return 0
    spec = tracking.TrackerSpec(kind, explicit, out, group=sweep.name) if kind else None
    try:
        with tracking.session(spec):  # an explicit tracker that cannot start: exit 2 here
            rows = run_sweep(
                sweep,
                out,
                shard,
                quiet=args.quiet,
                group_size=args.group_size,
                vmap=args.vmap,
                bracket_lr=limit,
                max_points=args.max_points,
            )
    except KeyboardInterrupt as e:  # SIGINT, or the trainer's Interrupted (SIGINT/SIGTERM)
        print(
            f"interrupted; rerun the same command to resume (finished runs are in "
            f"{out / 'results.csv'})",
            file=sys.stderr,
        )
        return int(getattr(e, "exit_status", 130))
    if args.plots and rows:
        _plot(out, Path(args.figures) if args.figures else out, rows, samples)
    return 0


def main(
    sweep: Sweep, argv: list[str] | None = None, *, plots: bool = False, samples: tuple = ()
) -> int:
    """Entry point of a sweep script: parse the flags, run, return an exit status, as
    `spamlang sweep FILE` does (the same flags and error policy: `spamlang.error_policy`)."""
    prog = Path(sys.argv[0]).name if argv is None else f"sweep {sweep.name}"
    parser = Parser(prog=prog, description=f"Run the sweep {sweep.name!r}.")
    add_arguments(parser, plots=plots)
    return run_command(parser, argv, lambda args: execute(sweep, args, samples))


def load_sweep_file(path: str | os.PathLike) -> tuple[Sweep, bool, tuple]:
    """Load a sweep from a .py file (defining SWEEP) or a .json file; return (sweep, plots
    default, sample cells): a script may set PLOTS = True and SAMPLES = ({setting: value}, ...),
    the cells whose sample tables --plots draws.

    JSON form: {"name": str, "base": {TrainConfig JSON, missing fields take their defaults},
    "axes": {axis: [values]}, "bracket_lr": int (optional, default 0)}, and optionally what a
    sweep directory's sweep.json adds ("grown", "set"), so that one loads as it was run. Any
    problem is a UserError naming the file, before any run.
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"no such sweep file: {path}")
    if path.suffix == ".py":
        return _load_py(path)
    if path.suffix == ".json":
        return _load_json(path), False, ()
    raise UserError(f"{path}: a sweep file must be a .py (defining SWEEP) or a .json file")


def _load_py(path: Path) -> tuple[Sweep, bool, tuple]:
    name = f"_spamlang_sweep_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"{path}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except UserError as e:
        raise UserError(f"{path}: {str(e).splitlines()[0]}") from None
    except SyntaxError as e:
        raise UserError(f"{path}:{e.lineno}: SyntaxError: {e.msg}") from None
    except Exception as e:  # the file's own bug: report it in one line, like any bad input
        raise UserError(f"{path}: {describe(e)}") from None
    except SystemExit as e:
        # Whatever the status, nothing was swept: a quiet exit 0 would read as success.
        raise UserError(
            f"{path} called sys.exit({e.code!r}) while being loaded; a sweep file "
            "defines SWEEP and runs nothing on import (put `main(SWEEP)` under "
            '`if __name__ == "__main__":`)'
        ) from None
    sweep = getattr(module, "SWEEP", None)
    if not isinstance(sweep, Sweep):
        what = (
            "does not define SWEEP"
            if sweep is None
            else f"defines SWEEP as a {type(sweep).__name__}, not a spamlang.sweep.Sweep"
        )
        raise UserError(f"{path} {what}")
    samples = getattr(module, "SAMPLES", ())
    if not isinstance(samples, (list, tuple)) or not all(isinstance(c, dict) for c in samples):
        raise UserError(f"{path}: SAMPLES must be a list of {{setting: value}} dicts")
    return sweep, bool(getattr(module, "PLOTS", False)), tuple(samples)


def _load_json(path: Path) -> Sweep:
    from spamlang.train.config import TrainConfig

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: {describe(e)}") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{path}:{e.lineno}: bad JSON: {e.msg}") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a JSON object with name, base and axes")
    # grown, set and axis_order: what a sweep directory's own sweep.json adds, so it loads too.
    known = {"name", "base", "axes", "bracket_lr", "grown", "set", "axis_order"}
    wrong = [
        f"{what} key(s) {', '.join(sorted(keys))}"
        for what, keys in [
            ("unknown", set(data) - known),
            ("missing", {"name", "axes"} - set(data)),
        ]
        if keys
    ]
    if wrong:
        expected = "(expected name, base, axes, optionally bracket_lr)"
        raise UserError(f"{path}: {'; '.join(wrong)} {expected}")
    base = data.get("base", {})
    if not isinstance(base, dict):
        raise UserError(f"{path}: base must be an object of TrainConfig fields")
    order = data.get("axis_order")
    if (
        isinstance(data["axes"], dict)
        and isinstance(order, list)
        and sorted(map(str, order)) == sorted(data["axes"])
    ):
        # A sweep directory's sweep.json (sorted keys): the axes in the order its runs use.
        data["axes"] = {axis: data["axes"][axis] for axis in order}
    try:
        return Sweep(
            data["name"],
            TrainConfig.from_json(base),
            data["axes"],
            bracket_lr=data.get("bracket_lr", 0),
            grown=data.get("grown") or {},
            overrides=data.get("set") or {},
        )
    except (ValueError, TypeError) as e:
        raise UserError(f"{path}: {first_line(e) or type(e).__name__}") from None
