"""The command line shared by every sweep script and by `spamlang sweep FILE`.

A script in sweeps/ defines `SWEEP = Sweep(...)` and ends with
`raise SystemExit(spamlang.sweep.main(SWEEP))`; `spamlang sweep FILE` loads the same file (or a
JSON description) and takes the same flags. A script may set a module-level `PLOTS = True` to
make `--plots` its default (`spamlang sweep` honours it too; `--no-plots` turns it off).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from pathlib import Path

from spamlang.error_policy import Parser, run_command
from spamlang.errors import UserError, describe
from spamlang.sweep.best_lr import DEFAULT_LIMIT
from spamlang.sweep.dry_run import dry_run
from spamlang.sweep.groups import parse_shard
from spamlang.sweep.overrides import SET_HELP, with_overrides
from spamlang.sweep.spec import MAX_POINTS, Sweep, check_bracket, check_size, id_part


def _max_points(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def _bracket_limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser, *, plots: bool | None = False) -> None:
    """The flags of a sweep run: --out, --shard, --group-size, --vmap, --bracket-lr, --seq-len,
    --max-points, --set, --quiet, --dry-run, --plots, --figures, --tracker."""
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
        help="at most K runs (differing in lr/seed) per vmapped program; "
        "1: every run on its own; 0 (default): as many as fit the device "
        "when its memory is known (an accelerator's, or "
        "SPAMLANG_DEVICE_MEMORY, e.g. 80GiB), from XLA's memory analysis "
        "of the compiled step with a 10%% margin, else no limit. An explicit "
        "K is kept, with a warning if it does not fit",
    )
    parser.add_argument(
        "--vmap",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="train each group of runs differing only in lr/seed as one vmapped "
        "program (default: on accelerators, and on CPU for steps of at most "
        "256 tokens; a vmapped group measured 0.6-1.0x the throughput of its "
        "runs one by one at 2,048 tokens per step on CPU, and faster at 64)",
    )
    parser.add_argument(
        "--bracket-lr",
        metavar="N",
        type=_bracket_limit,
        nargs="?",
        const=DEFAULT_LIMIT,
        default=None,
        help="when a cell's best LR (seed-mean final eval loss) is the largest or "
        "smallest of its grid, train the next LR beyond it (the grid's own "
        "ratio, x3 for one LR) for every seed, until the best is inside the "
        f"grid, reaches the loss floor, or N LRs were added on that side "
        f"(default N: {DEFAULT_LIMIT}; 0 turns it off; without the flag: as "
        "the sweep says, Sweep.bracket_lr)",
    )
    parser.add_argument(
        "--seq-len",
        metavar="L",
        type=int,
        default=None,
        help="run the equivalent sweep at sequence length L: same batch and "
        "steps, token budgets scaled, named <name>-L<L> (default dir "
        "runs/<name>-L<L>). SpamLang (spam, zipf-spam) with RoPE gives "
        "the same results at any length, so --seq-len 2 costs about 2/L of "
        "the original; refused for languages with context",
    )
    parser.add_argument(
        "--max-points",
        metavar="N",
        type=_max_points,
        default=MAX_POINTS,
        help=f"refuse a sweep of more than N points, before expanding it "
        f"(default {MAX_POINTS:,}: a larger grid is usually a slip)",
    )
    parser.add_argument("--set", metavar="FIELD=VALUE", action="append", default=[], help=SET_HELP)
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar, progress lines or per-run lines (without it: "
        "a line when a run resumes from a checkpoint and, when stderr is "
        "not a terminal, one per running run or group every "
        "SPAMLANG_LOG_SECONDS seconds, default 30)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="list the points, their status (partial: the checkpointed step), "
        "the token/FLOP budget and a time estimate (at the tokens/s of "
        "finished runs of the same group; else a lower bound at the matmul "
        "peak where it is known); run nothing",
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
        help="mirror every run's metrics rows, config and result to one "
        "experiment: TensorBoard (<sweep dir>/tensorboard/<run id>, with "
        "the HParams dashboard) or W&B (group <sweep name>; "
        "WANDB_MODE=offline: <sweep dir>/wandb/); needs the extra of that "
        "name; one that cannot start is an error before any training "
        "(default: the sweep's own Sweep(tracker=...), which only warns)",
    )


def _plot(out: Path, figures: Path, rows: list[dict], samples: tuple = ()) -> None:
    """Draw the sweep's figures into `figures`. A figure that storage refuses (a read-only
    copy of a finished sweep) is skipped with one line on stderr; the others are drawn."""
    from spamlang.plots.curves import plot_curves
    from spamlang.plots.sweep import plot_heatmap
    from spamlang.sweep.results_csv import is_read_only

    def skipped(what: str, e: OSError) -> None:
        print(
            f"note: skipped {what}: {figures} cannot be written "
            f"({e.strerror or describe(e)}); --figures DIR draws them elsewhere",
            file=sys.stderr,
        )

    try:
        figures.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        if not is_read_only(e):
            raise
        return skipped("the figures", e)
    drawers = [
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
            skipped(what, e)
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


def execute(sweep: Sweep, args: argparse.Namespace, samples: tuple = ()) -> int:
    """Run (or list) the sweep as the parsed flags say. Raises UserError on bad input.
    `samples`: the cells whose sample tables --plots also draws (a script's SAMPLES)."""
    from spamlang import tracking
    from spamlang.sweep.runner import run_sweep
    from spamlang.sweep.seq_len import at_seq_len

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
    """Entry point of a sweep script: parse the flags, run, return an exit status.

    The same entry point as `spamlang sweep FILE`: the same flags (`add_arguments`), parsed by
    the same one-line-error parser and run under the same error policy
    (`spamlang.error_policy.run_command`). Bad input (a flag, the sweep, an output directory holding
    another sweep) is one line on stderr and status 2; Ctrl-C is status 130 and the same
    command resumes. `--debug` (or SPAMLANG_DEBUG=1) shows tracebacks instead.
    """
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
    # grown and set: what a sweep directory's own sweep.json adds, so that it loads too.
    unknown = sorted(
        set(data) - {"name", "base", "axes", "bracket_lr", "grown", "set", "axis_order"}
    )
    missing = sorted({"name", "axes"} - set(data))
    if unknown or missing:
        raise UserError(
            f"{path}: "
            + "; ".join(
                ([f"unknown key(s) {', '.join(unknown)}"] if unknown else [])
                + ([f"missing key(s) {', '.join(missing)}"] if missing else [])
            )
            + " (expected name, base, axes, optionally bracket_lr)"
        )
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
        raise UserError(
            f"{path}: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
        ) from None
