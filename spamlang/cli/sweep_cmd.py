"""`spamlang sweep FILE`, and the same command line for every sweep script: a script in sweeps/
defines `SWEEP = Sweep(...)` and ends with `raise SystemExit(main(SWEEP))`; `spamlang sweep FILE`
loads the same file (or a JSON description: `spamlang.sweep.load_sweep_file`) and takes the same
flags. This module draws the sweep's figures and reads the law (the dry run's forecast), so that
`spamlang.sweep` imports neither."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spamlang.error_policy import Parser, guard_script_import, run_command
from spamlang.errors import describe
from spamlang.notation import parse_int
from spamlang.rundir import Folder, claim_folder
from spamlang.rundir.atomic import atomic_write_json
from spamlang.sweep.best_lr import DEFAULT_LIMIT
from spamlang.sweep.spec import MAX_POINTS, Sweep, check_bracket, check_size, id_part, parse_shard
from spamlang.sweep.sweep_file import SWEEP_FOLDER
from spamlang.tracking.common import KINDS as TRACKERS

# A script that imports `main` from here builds its SWEEP next, outside `main`'s guard.
guard_script_import(Path(sys.argv[0]).name)


def _at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = parse_int(text)  # --max-points 200K
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
        return value

    return parse


def add_arguments(parser: argparse.ArgumentParser, *, plots: bool | None = False) -> None:
    """The flags of a sweep run: where its runs train, which variant, what it shows."""
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
        "--only",
        metavar="GLOB",
        action="append",
        default=[],
        help="train only the runs whose id matches GLOB (repeatable; shell-quote it), e.g. "
        "--only '*-B8-*seed2' for one more seed of some cells; the others are skipped, "
        "results.csv still lists every finished run, LR bracketing extends only the cells "
        "matched. --dry-run lists the ids",
    )
    parser.add_argument(
        "--group-size",
        metavar="K",
        type=int,
        default=0,
        help="at most K runs (differing in lr/seed) per vmapped program; 1: every run on its "
        "own; 0 (default): the sweep's own Sweep(group_size=...) if it sets one, else as many as "
        "fit the device when its memory is known (an accelerator's, or SPAMLANG_DEVICE_MEMORY, "
        "e.g. 80GiB), else no limit. An explicit K is kept, with a warning if it does not fit",
    )
    parser.add_argument(
        "--vmap",
        action=argparse.BooleanOptionalAction,
        help="train each group of runs differing only in lr/seed as one vmapped program "
        "(default: on accelerators, and on CPU for steps of at most 256 tokens)",
    )

    parser.add_argument(
        "--bracket-lr",
        metavar="N",
        type=_at_least(0),
        nargs="?",
        const=DEFAULT_LIMIT,
        help="when a cell's best LR is the largest or smallest of its grid, train the next LR "
        "beyond it for every seed (below the grid when a seed diverged at every LR), until the "
        "best is inside the grid, reaches the loss floor, "
        f"or N LRs were added on that side (default N: {DEFAULT_LIMIT}; 0 turns it off; "
        "without the flag: Sweep.bracket_lr)",
    )
    parser.add_argument(
        "--seq-len",
        metavar="L",
        type=int,
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
        help="where --plots writes (default: the sweep directory): a new or empty folder, or "
        f"one an earlier --figures drew into (it holds its {FIGURES_MARK})",
    )
    parser.add_argument(
        "--tracker",
        choices=(*TRACKERS, "none"),
        help="mirror every run's metrics, config and result to TensorBoard (<sweep "
        "dir>/tensorboard/<run id>) or W&B (group <sweep name>); needs the extra of that name; "
        "one that cannot start is an error (default: Sweep(tracker=...), which only warns)",
    )


# `--figures DIR`: marked by figures.json, so a later draw knows it and a user's is refused.
FIGURES_MARK, FIGURES_FORMAT = "figures.json", "spamlang-figures-v1"
FIGURES_FOLDER = Folder(
    "a folder of sweep figures",
    marks=(
        (
            FIGURES_MARK,
            lambda data: isinstance(data, dict) and data.get("format") == FIGURES_FORMAT,
        ),
    ),
    files=(FIGURES_MARK, "heatmap.png", "curves.png", "samples_*.png"),
)


def _figures_folder(out: Path, figures: str | None) -> Path:
    """Where --plots draws: `out`, or `figures` when it is ours, new or empty (else UserError)."""
    if figures is None or Path(figures).resolve() == out.resolve():
        return out
    return claim_folder(figures, FIGURES_FOLDER, "--figures")


def _mark_figures(out: Path, figures: Path) -> list:
    figures.mkdir(parents=True, exist_ok=True)
    if figures.resolve() != out.resolve():
        claim_folder(figures, FIGURES_FOLDER, "--figures")  # again: it may have changed since
        atomic_write_json(figures / FIGURES_MARK, {"format": FIGURES_FORMAT, "sweep": str(out)})
    return []


def _plot(out: Path, figures: Path, rows: list[dict], samples: tuple = ()) -> None:
    """Draw the sweep's figures into `figures`; one storage refuses is skipped with a note."""
    from spamlang.plots.curves import plot_curves
    from spamlang.plots.sweep import plot_heatmap
    from spamlang.sweep.results_csv import is_read_only

    drawers = [
        ("the figures", lambda: _mark_figures(out, figures)),
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
    """Table 1's analogue for the cell `where`: 6 samples of 32 tokens at temperature 0.9 from token
    0, by the cell's best-LR run (lowest seed); nothing without a finished run."""
    from spamlang.cli.sample_cmd import sample_figure
    from spamlang.sample import sample_run
    from spamlang.sweep.best_lr import best_lrs

    cell = [r for r in rows if all(r.get(k) == v for k, v in where.items())]
    best = best_lrs(cell)
    if not best:
        return []
    run = min((r for r in cell if r["lr"] == best[0].lr), key=lambda r: r.get("seed") or 0)
    name = "samples_" + "_".join(id_part(k, v) for k, v in where.items())  # samples_V4096_tied
    result = sample_run(out / run["run_id"], n=6, length=32, temperature=0.9, prompt=[0], seed=0)
    return [sample_figure(result, figures / f"{name}.png")]


def execute(sweep: Sweep, args: argparse.Namespace, samples: tuple = ()) -> int:
    """Run (or list) the sweep as the flags say; `samples`: the cells --plots draws samples of."""
    from spamlang import tracking
    from spamlang.sweep.files import at_seq_len, with_overrides
    from spamlang.sweep.runner import run_sweep

    explicit = getattr(args, "tracker", None) is not None
    kind = tracking.parse_kind(args.tracker if explicit else sweep.tracker)
    shard = parse_shard(args.shard)
    check_size(sweep, args.max_points)  # before anything expands the points
    sweep = with_overrides(sweep, args.set)  # before --seq-len scales the budgets it may set
    if args.seq_len is not None:
        sweep = at_seq_len(sweep, args.seq_len)
    out = claim_folder(args.out or Path("runs") / sweep.name, SWEEP_FOLDER, "--out")
    figures = _figures_folder(out, args.figures) if args.plots else out
    limit = check_bracket(
        sweep.bracket_lr if args.bracket_lr is None else args.bracket_lr, sweep.axes
    )
    if args.dry_run:
        from spamlang.law.law import dry_run_notes
        from spamlang.sweep.dry_run import dry_run

        only = tuple(args.only)
        dry_run(sweep, out, shard, args.group_size, args.vmap, dry_run_notes, only, limit)
        if limit:
            print(
                f"LR bracketing on: a cell whose best LR ends at an edge of its grid adds up "
                f"to {limit} LRs per side, for every seed (not listed above)"
            )
        return 0
    spec = tracking.TrackerSpec(kind, explicit, out, group=sweep.name) if kind else None
    try:
        with tracking.session(spec):  # an explicit tracker that cannot start: exit 2 here
            keep = {k: getattr(args, k) for k in ("quiet", "group_size", "vmap", "max_points")}
            rows = run_sweep(sweep, out, shard, bracket_lr=limit, only=tuple(args.only), **keep)
    except KeyboardInterrupt as e:  # SIGINT, or the trainer's Interrupted (SIGINT/SIGTERM)
        print(
            f"interrupted; rerun the same command to resume (finished runs are in "
            f"{out / 'results.csv'})",
            file=sys.stderr,
        )
        return int(getattr(e, "exit_status", 130))
    if args.plots and rows:
        _plot(out, figures, rows, samples)
    return 0


def main(
    sweep: Sweep, argv: list[str] | None = None, *, plots: bool = False, samples: tuple = ()
) -> int:
    """A sweep script's entry point: the flags, error policy and exit status of `spamlang sweep
    FILE`. `plots`: the --plots default; `samples`: the cells whose sample tables --plots draws."""
    prog = Path(sys.argv[0]).name if argv is None else f"sweep {sweep.name}"
    parser = Parser(prog=prog, description=f"Run the sweep {sweep.name!r}.")
    add_arguments(parser, plots=plots)
    return run_command(parser, argv, lambda args: execute(sweep, args, samples))


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="run a grid of training runs (skip finished, resume, shard, gather results.csv)",
        description="Run a sweep from a Python file defining SWEEP = spamlang.sweep.Sweep(...) or "
        'from a JSON file {"name": ..., "base": {TrainConfig fields}, "axes": {...}}.',
    )
    parser.add_argument("file", metavar="FILE", help="sweeps/NAME.py or a .json sweep description")
    # The plots default comes from the file (PLOTS = True); None means "ask the file".
    add_arguments(parser, plots=None)
    parser.set_defaults(func=handler)


def handler(args) -> int:
    from spamlang.sweep.files import load_sweep_file

    sweep, plots, samples = load_sweep_file(args.file)
    if args.plots is None:
        args.plots = plots
    return execute(sweep, args, samples)
