"""How a command reports trouble: one line each, `PROG: error: MESSAGE`, and the whole story only
in debug mode (`--debug` wherever a command takes flags, or SPAMLANG_DEBUG set to anything but
"", 0, false, no, off). `spamlang VERB` and `python sweeps/NAME.py` both parse with a `Parser`
and run under `guarded` (`run_command`); this sits below every layer that has a command, so that
the sweep code shares it without importing `spamlang.cli`."""

from __future__ import annotations

import argparse
import contextlib
import functools
import logging
import os
import re
import sys
import types
import warnings
from collections.abc import Callable, Iterator

from spamlang import notation
from spamlang.errors import UserError, describe, first_line
from spamlang.fields import closest

DEBUG_ENV = "SPAMLANG_DEBUG"
HINT = "rerun with --debug or SPAMLANG_DEBUG=1 for the trace"
# Libraries whose log records are shown only in debug mode.
_LIBRARY_LOGGERS = ("absl", "orbax", "asyncio", "tensorstore")


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors; every (sub)command takes --debug and reports a bad flag under
    its own name (`command_parser`)."""

    def __init__(self, *args, **kwargs):
        # No prefix abbreviations: a typo is an error, not a silent other flag.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        # Before 3.13 argparse takes "-1e-3" for an option; a dash before a digit starts a value.
        self._negative_number_matcher = re.compile(r"^-\.?\d")
        # Numbers as configs read them; "vocab" in binary (4K is 4,096); "setting": NAME=VALUE.
        binary = functools.partial(notation.parse_int, binary=True)
        for kind, parse, what, expected in (
            (int, notation.parse_int, "int value", notation.INT_TEXT),
            (float, notation.parse_number, "float value", notation.NUMBER_TEXT),
            ("vocab", binary, "vocabulary size", notation.VOCAB_TEXT),
            ("setting", notation.parse_setting, "setting", "NAME=VALUE"),
        ):
            self.register("type", kind, _flag_type(parse, what, expected))
        self.set_defaults(command_parser=self)
        # No default, so a subcommand's never overwrites the one given before the verb.
        self.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help="show tracebacks and library log messages (also SPAMLANG_DEBUG=1)",
        )

    def error(self, message: str):  # noqa: D401
        self.exit(2, f"{self.prog}: error: {message}\n")

    def parse_args(self, args=None, namespace=None):
        """An unrecognised flag reported by its subcommand, with its `unknown_hint` if any."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = parsed.command_parser
            hint = getattr(parsed, "unknown_hint", None)
            unknown = f"unrecognized arguments: {' '.join(extras)}{_suggestion(command, extras)}"
            command.error((hint(extras) if hint else None) or unknown)
        return parsed


def _flag_type(parse: Callable, what: str, expected: str) -> Callable:  # ValueError: one line
    def read(text: str):
        try:
            return parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"invalid {what}: {text!r}; expected {expected}"
            ) from None

    return read


def _suggestion(command: argparse.ArgumentParser, extras: list[str]) -> str:
    """' (did you mean --tokens?)' for the first unknown flag close to a flag of `command`."""
    # argparse (before 3.14's suggest_on_error) has no public list of a parser's flags.
    flags = [o for a in command._actions for o in a.option_strings if o.startswith("--")]
    for extra in extras:
        if extra.startswith("--") and (close := closest(extra.split("=", 1)[0], flags)):
            return f" (did you mean {close}?)"
    return ""


def run_command(
    parser: argparse.ArgumentParser,
    argv: list[str] | None,
    run: Callable[[argparse.Namespace], int | None],
) -> int:
    """Parse `argv`, run `run(args)` under `guarded`; the exit status. `argv` None: the program."""
    args = parser.parse_args(argv)
    with guarded(parser.prog, debug=getattr(args, "debug", False), at_exit=argv is None) as outcome:
        outcome.status = run(args)
    return outcome.status


def debug_enabled() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def error_line(prog: str, e: BaseException) -> tuple[str, int]:
    """The line reporting `e` and its status: 130 Ctrl-C, 2 bad input, else 1."""
    if isinstance(e, KeyboardInterrupt):
        return f"{prog}: interrupted", 130
    if isinstance(e, UserError):  # written for people: its first line, however long
        return f"{prog}: error: {(str(e).splitlines() or [''])[0] or 'UserError'}", 2
    if isinstance(e, OSError):
        return f"{prog}: error: {first_line(e) or type(e).__name__}", 2
    return f"{prog}: error: {describe(e)} ({HINT})", 1


def guard_script_import(prog: str) -> None:
    """An uncaught UserError while a sweep script builds its Sweep: one line and status 2."""
    previous = sys.excepthook

    def hook(kind, value, traceback) -> None:
        if not issubclass(kind, UserError) or debug_enabled():
            return previous(kind, value, traceback)
        line, status = error_line(prog, value)
        print(line, file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        # An excepthook cannot choose the exit status, and nothing needs a shutdown yet.
        os._exit(status)

    sys.excepthook = hook


@contextlib.contextmanager
def guarded(
    prog: str, *, debug: bool = False, at_exit: bool = False
) -> Iterator[types.SimpleNamespace]:
    """The body sets `outcome.status`; an exception becomes its `error_line` (raised in debug mode).
    `at_exit`: the process ends with this command, so stay quiet through its shutdown too."""
    outcome, before = types.SimpleNamespace(status=0), os.environ.get(DEBUG_ENV)
    if debug:
        os.environ[DEBUG_ENV] = "1"
    try:
        with quiet(prog, restore=not at_exit):
            try:
                yield outcome
                outcome.status = int(outcome.status or 0)
            except BrokenPipeError:
                # The reader left (`| head`): quiet, SIGPIPE's status; stdout to devnull.
                if at_exit:
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                outcome.status = 128 + 13
            except (Exception, KeyboardInterrupt) as e:
                if debug_enabled():
                    raise
                line, outcome.status = error_line(prog, e)
                print(line, file=sys.stderr)
    finally:
        if debug and before is None:
            os.environ.pop(DEBUG_ENV, None)
        elif debug:
            os.environ[DEBUG_ENV] = before


@contextlib.contextmanager
def quiet(prog: str, *, restore: bool = True) -> Iterator[None]:
    """One-line warnings and silent libraries for the body (not in debug mode)."""
    if debug_enabled():
        yield
        return
    loggers = [logging.getLogger(name) for name in _LIBRARY_LOGGERS]
    levels = [logger.level for logger in loggers]
    hook, show = sys.unraisablehook, warnings.showwarning
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    sys.unraisablehook = _unraisable
    warnings.showwarning = functools.partial(_warning_line, prog)
    try:
        yield
    finally:
        if restore:
            for logger, level in zip(loggers, levels):
                logger.setLevel(level)
            sys.unraisablehook, warnings.showwarning = hook, show


def _unraisable(unraisable) -> None:
    # What orbax's threads report as "unraisable" after a failed restore: dozens of tracebacks.
    if debug_enabled():  # SPAMLANG_DEBUG set after the filter went in
        sys.__unraisablehook__(unraisable)


def _warning_line(prog: str, message, category, filename, lineno, file=None, line=None) -> None:
    text = (str(message).splitlines() or [""])[0]  # already written for people: not cut short
    if issubclass(category, RuntimeWarning) and text.endswith("was never awaited"):
        # orbax's coroutines left behind by a failed restore: nothing a user can act on.
        return
    print(
        f"{prog}: warning: {text or category.__name__}", file=sys.stderr if file is None else file
    )
