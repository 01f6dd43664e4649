"""`spamlang <verb>`: a thin dispatcher. Each verb lives in its own module under spamlang/cli/.

Every verb module defines `register(subparsers)`, which adds its parser and sets
`func=handler`; a handler takes the parsed namespace and returns an exit status.
Handlers import the heavy modules (JAX, matplotlib) lazily so that `--help` stays instant.

Error policy: a `UserError` or `ValueError` (bad flags, configs, paths) becomes one line on
stderr and exit status 2. Set SPAMLANG_DEBUG=1 to see the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# Verb modules, in the order `spamlang --help` lists them. A module that does not exist yet
# is skipped, so the CLI keeps working while the package grows.
_VERB_MODULES = (
    "spamlang.cli.data_cmds",  # languages, preview, export
    "spamlang.cli.train_cmd",  # train
    "spamlang.cli.sweep_cmd",  # sweep
    "spamlang.cli.plot_cmd",  # plot heatmap|curves|bottleneck
    "spamlang.cli.sample_cmd",  # sample
    "spamlang.cli.diagnose_cmd",  # diagnose
)


class _Parser(argparse.ArgumentParser):
    """argparse already exits 2 on bad flags; keep its message to one line."""

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
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = args.func(args)
    except ValueError as e:  # UserError is a ValueError
        if os.environ.get("SPAMLANG_DEBUG"):
            raise
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"spamlang {args.verb}: error: {msg}", file=sys.stderr)
        return 2
    except OSError as e:
        if os.environ.get("SPAMLANG_DEBUG"):
            raise
        print(f"spamlang {args.verb}: error: {e}", file=sys.stderr)
        return 2
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
