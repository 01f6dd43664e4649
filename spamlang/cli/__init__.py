"""`spamlang <verb>`: a thin dispatcher. Each verb lives in its own module under spamlang/cli/.

Every verb module defines `register(subparsers)`, which adds its parser and sets
`func=handler`; a handler takes the parsed namespace and returns an exit status.
Handlers import the heavy modules (JAX, matplotlib) lazily so that `--help` stays instant.

Every verb module in `_VERB_MODULES` is imported when the parser is built: one that fails to
import (renamed, deleted, broken) is an error, never a verb silently missing from the CLI.

Error policy (`spamlang.error_policy`, shared with the sweep scripts' `spamlang.sweep.main`): a
`UserError` (bad flags, configs, paths) or an OSError becomes one line on stderr and exit
status 2; any other exception one line naming its type, status 1; warnings one line each;
library logging is silenced. `--debug` (before or after the verb) or SPAMLANG_DEBUG=1 shows
the tracebacks and library messages instead.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from spamlang.error_policy import Parser, add_debug_flag, run_command

# Verb modules, in the order `spamlang --help` lists them; every one must import.
_VERB_MODULES = (
    "spamlang.cli.data_cmds",  # languages, preview, export
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
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=Parser)
    sub.required = True
    for name in _VERB_MODULES:
        importlib.import_module(name).register(sub)  # an ImportError here is a broken install
    add_debug_flag(parser)
    _name_commands(parser)
    return parser


def _name_commands(parser: argparse.ArgumentParser) -> None:
    """Every (sub)command reports a bad flag under its own name (`spamlang plot heatmap:
    error: ...`), not the program's: the innermost command given sets `command_prog`."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in {id(p): p for p in action.choices.values()}.values():
                child.set_defaults(command_prog=child.prog)
                _name_commands(child)


def main(argv: list[str] | None = None) -> int:
    """Run `spamlang ARGV` and return its exit status (see the module docstring)."""
    # argv None: this is the program (console script, python -m); its shutdown is quieted too.
    return run_command(
        build_parser(),
        argv,
        lambda args: args.func(args),
        prog=lambda args: f"spamlang {args.verb}",
    )


if __name__ == "__main__":
    sys.exit(main())
