"""`spamlang <verb>`: a thin dispatcher. Each verb lives in its own module under spamlang/cli/.

Every verb module defines `register(subparsers)`, which adds its parser and sets
`func=handler`; a handler takes the parsed namespace and returns an exit status.
Handlers import the heavy modules (JAX, matplotlib) lazily so that `--help` stays instant.

Error policy (`spamlang.cli.guard`): a `UserError` (bad flags, configs, paths) or an OSError
becomes one line on stderr and exit status 2; any other exception one line naming its type,
status 1; warnings one line each; library logging is silenced. `--debug` (before or after the
verb) or SPAMLANG_DEBUG=1 shows the tracebacks and library messages instead.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys

from spamlang.cli.guard import debug_mode, run_guarded

# Verb modules, in the order `spamlang --help` lists them. A module that does not exist yet
# is skipped, so the CLI keeps working while the package grows.
_VERB_MODULES = (
    "spamlang.cli.data_cmds",  # languages, preview, export
    "spamlang.cli.train_cmd",  # train
    "spamlang.cli.sweep_cmd",  # sweep
    "spamlang.cli.plot_cmd",  # plot heatmap|curves|bottleneck
    "spamlang.cli.sample_cmd",  # sample
    "spamlang.cli.diagnose_cmd",  # diagnose
    "spamlang.cli.diagnose_lm_cmd",  # diagnose-lm
)


class _Parser(argparse.ArgumentParser):
    """argparse already exits 2 on bad flags; keep its message to one line."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # argparse before Python 3.13 takes "-1e-3" (an exponent) for an option, so `--lr -1e-3`
        # failed with "expected one argument" instead of reaching the check that lr must be > 0.
        # Here a dash before a digit (or before ".digit") always starts a value, as in newer
        # Pythons; no spamlang option looks like a number.
        self._negative_number_matcher = re.compile(r"^-\.?\d")

    def error(self, message: str):  # noqa: D401
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="spamlang",
        description="Reproduce and extend the SpamLang gradient-bottleneck experiments.",
    )
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    for name in _VERB_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue
            raise
        module.register(sub)
    _add_debug_flag(parser, top=True)
    return parser


def _add_debug_flag(parser: argparse.ArgumentParser, top: bool) -> None:
    """--debug on `parser` and every subcommand under it, so that it may follow the verb."""
    parser.add_argument("--debug", action="store_true",
                        # Only the top level has a default: a subcommand's would overwrite it.
                        default=False if top else argparse.SUPPRESS,
                        help="show tracebacks and library log messages (also SPAMLANG_DEBUG=1)")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in {id(p): p for p in action.choices.values()}.values():
                _add_debug_flag(sub, top=False)


def main(argv: list[str] | None = None) -> int:
    """Run `spamlang ARGV` and return its exit status (see the module docstring)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # argv None: this is the program (console script, python -m); its shutdown is quieted too.
    with debug_mode(args.debug):
        return run_guarded(lambda: args.func(args), f"spamlang {args.verb}", at_exit=argv is None)


if __name__ == "__main__":
    sys.exit(main())
