"""`spamlang sweep FILE`: run a sweep described by a sweeps/*.py script or a JSON file, with the
flags of running the script itself (`spamlang.sweep.command.add_arguments`). The whole sweep
is loaded and validated first: any problem is one line on stderr and status 2, before any run."""

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
