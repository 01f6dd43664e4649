"""`spamlang <verb>`: a thin dispatcher. Each verb lives in its own module under spamlang/cli/,
which defines `register(subparsers)`: it adds its parser and sets `func=handler`, a function of
the parsed namespace that returns an exit status and imports the heavy modules (JAX,
matplotlib) lazily, so that `--help` stays instant. Errors, warnings and --debug:
`spamlang.error_policy`."""

from __future__ import annotations

import argparse
import importlib
import sys

from spamlang.error_policy import Parser, guarded

# In `--help`'s order; all imported with the parser: one that fails is a broken install.
_VERB_MODULES = (
    "spamlang.cli.data_cmds",  # languages, preview, export
    "spamlang.cli.tokenize_cmd",  # tokenize
    "spamlang.cli.train_cmd",  # train
    "spamlang.cli.sweep_cmd",  # sweep
    "spamlang.cli.plot_cmd",  # plot heatmap|curves|bottleneck
    "spamlang.cli.sample_cmd",  # sample
    "spamlang.cli.diagnose_cmd",  # diagnose
    "spamlang.cli.diagnose_lm_cmd",  # diagnose-lm
    "spamlang.cli.law_cmd",  # law fit|predict|validate
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="spamlang",
        description="Reproduce and extend the SpamLang gradient-bottleneck experiments.",
    )
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=Parser, required=True)
    for name in _VERB_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `spamlang ARGV`; its exit status (`error_policy`), reported as `spamlang VERB`."""
    args = build_parser().parse_args(argv)
    debug, prog = getattr(args, "debug", False), f"spamlang {args.verb}"
    with guarded(prog, debug=debug, at_exit=argv is None) as outcome:
        outcome.status = args.func(args)
    return outcome.status


if __name__ == "__main__":
    sys.exit(main())
