"""`spamlang sweep FILE`: run a sweep described by a sweeps/*.py script or a JSON file.

Same flags as running the script itself (`python sweeps/NAME.py ...`): --out, --shard i/n,
--group-size, --set FIELD=VALUE, --quiet, --dry-run, --plots/--no-plots, --figures, and the
rest of `spamlang.sweep.command.add_arguments`. The file is loaded and the whole sweep validated
before anything runs; any problem is one line on stderr and status 2.
"""

from __future__ import annotations


def register(subparsers) -> None:
    from spamlang.sweep.command import add_arguments

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
    from spamlang.sweep.command import execute, load_sweep_file

    sweep, plots, samples = load_sweep_file(args.file)
    if args.plots is None:
        args.plots = plots
    return execute(sweep, args, samples)
