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
# Libraries whose log records are shown only in debug mode (orbax logs through absl, with
# tracebacks).
_LIBRARY_LOGGERS = ("absl", "orbax", "asyncio", "tensorstore")


class Parser(argparse.ArgumentParser):
    """argparse already exits 2 on bad flags; keep its message to one line. Every (sub)command
    takes --debug, so that it may follow the verb, and reports a bad flag under its own name
    (`spamlang plot heatmap: error: ...`): the innermost command given sets `command_parser`."""

    def __init__(self, *args, **kwargs):
        # No prefix abbreviations: `--b 3` would be whichever flag starts with b today, and
        # another one once a flag is added; a typo is an error, not a silent other flag.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        # argparse before Python 3.13 takes "-1e-3" (an exponent) for an option, so `--lr -1e-3`
        # failed with "expected one argument" instead of reaching the check that lr must be > 0.
        # Here a dash before a digit (or before ".digit") always starts a value, as in newer
        # Pythons; no spamlang option looks like a number. (No public API sets this.)
        self._negative_number_matcher = re.compile(r"^-\.?\d")
        # Every number flag reads numbers as configs do (`spamlang.notation`): --tokens 2M,
        # --lr 3e-3; a vocabulary size in binary (`type="vocab"`: --vocab-size 4K is 4,096);
        # `type="setting"`: NAME=VALUE, --param k=3.
        binary = functools.partial(notation.parse_int, binary=True)
        for kind, parse, what, expected in (
            (int, notation.parse_int, "int value", notation.INT_TEXT),
            (float, notation.parse_number, "float value", notation.NUMBER_TEXT),
            ("vocab", binary, "vocabulary size", notation.VOCAB_TEXT),
            ("setting", notation.parse_setting, "setting", "NAME=VALUE"),
        ):
            self.register("type", kind, _flag_type(parse, what, expected))
        self.set_defaults(command_parser=self)
        # No default: absent unless given (`debug_given`), so a subcommand's never overwrites
        # the one given before the verb.
        self.add_argument(
            "--debug",
            action="store_true",
            default=argparse.SUPPRESS,
            help="show tracebacks and library log messages (also SPAMLANG_DEBUG=1)",
        )

    def error(self, message: str):  # noqa: D401
        self.exit(2, f"{self.prog}: error: {message}\n")

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but an unrecognised flag is reported by the subcommand that was
        given (`spamlang train: error: ...`), with its `unknown_hint(extras)` (a default a
        subparser may set) when that knows what the user meant."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = parsed.command_parser
            hint = getattr(parsed, "unknown_hint", None)
            message = (
                hint(extras) if hint else None
            ) or f"unrecognized arguments: {' '.join(extras)}{_suggestion(command, extras)}"
            self.exit(2, f"{command.prog}: error: {message}\n")
        return parsed


def _flag_type(parse: Callable, what: str, expected: str) -> Callable:
    """An argparse type: `parse`, its ValueError one line naming the notation."""

    def read(text: str):
        try:
            return parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"invalid {what}: {text!r}; expected {expected}"
            ) from None

    return read


def _suggestion(command: argparse.ArgumentParser, extras: list[str]) -> str:
    """' (did you mean --tokens?)' for the first unknown flag close to one of the given
    (sub)command's flags; '' when none is."""
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
    """A command's whole life: parse `argv` with `parser` (a `Parser`), then call `run(args)`
    under `guarded`. `argv` None means this is the program (sys.argv): its shutdown is quieted
    too. Returns the exit status."""
    args = parser.parse_args(argv)
    with guarded(parser.prog, debug=getattr(args, "debug", False), at_exit=argv is None) as outcome:
        outcome.status = run(args)
    return outcome.status


def debug_enabled() -> bool:
    """Whether SPAMLANG_DEBUG asks for tracebacks and library messages."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def error_line(prog: str, e: BaseException) -> tuple[str, int]:
    """The one line reporting `e` and the exit status that goes with it: 130 for Ctrl-C, 2 for
    bad input (a UserError, or an OSError: a full disk, a permission, whose message names the
    problem), 1 for anything else, with the hint that --debug shows its trace."""
    if isinstance(e, KeyboardInterrupt):
        return f"{prog}: interrupted", 130
    if isinstance(e, UserError):  # written for people: its first line, however long
        return f"{prog}: error: {(str(e).splitlines() or [''])[0] or 'UserError'}", 2
    if isinstance(e, OSError):
        return f"{prog}: error: {first_line(e) or type(e).__name__}", 2
    return f"{prog}: error: {describe(e)} ({HINT})", 1


def guard_script_import(prog: str) -> None:
    """A sweep script builds its Sweep when Python runs its top lines, before `main` runs under
    `guarded`: a bad setting there (`tiny-w120`, whose TrainConfig refuses it) ended in a
    traceback with status 1. Installed by the module those scripts import first, this makes an
    uncaught UserError the one line and status 2 of every other bad input; anything else, and
    everything in debug mode, goes to the hook it replaces."""
    previous = sys.excepthook

    def hook(kind, value, traceback) -> None:
        if not issubclass(kind, UserError) or debug_enabled():
            return previous(kind, value, traceback)
        line, status = error_line(prog, value)
        print(line, file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        # An excepthook cannot choose the exit status (the interpreter then exits 1), and
        # nothing has started by then that needs the interpreter's own shutdown.
        os._exit(status)

    sys.excepthook = hook


@contextlib.contextmanager
def guarded(
    prog: str, *, debug: bool = False, at_exit: bool = False
) -> Iterator[types.SimpleNamespace]:
    """The body sets `outcome.status` (None: 0), its exit status; under `quiet(prog)`, an
    exception becomes its `error_line` and status instead, or propagates in debug mode (`debug`
    turns it on for the body, through the variable so that the processes it starts agree).
    `at_exit`: the process ends with this command, so stay quiet through its shutdown too
    (orbax's failed tasks are logged when they are garbage collected)."""
    outcome, before = types.SimpleNamespace(status=0), os.environ.get(DEBUG_ENV)
    if debug:
        os.environ[DEBUG_ENV] = "1"
    try:
        with quiet(prog, restore=not at_exit):
            try:
                yield outcome
                outcome.status = int(outcome.status or 0)
            except BrokenPipeError:
                # The reader left (`spamlang sweep X --dry-run | head`): nothing is wrong and
                # nothing more can be shown. Quiet, with the shell's status for SIGPIPE; stdout
                # goes to devnull so that the interpreter's final flush does not complain.
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
    """One-line warnings and silent libraries for the body (nothing changes in debug mode);
    with `restore`, everything is put back afterwards."""
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
    # What orbax's background threads can only report as "unraisable": a failed restore leaves
    # TensorStore callbacks firing into a closed event loop, dozens of tracebacks for one damage.
    if debug_enabled():  # SPAMLANG_DEBUG set after the filter went in
        sys.__unraisablehook__(unraisable)


def _warning_line(prog: str, message, category, filename, lineno, file=None, line=None) -> None:
    text = (str(message).splitlines() or [""])[0]  # already written for people: not cut short
    if issubclass(category, RuntimeWarning) and text.endswith("was never awaited"):
        # orbax's coroutines left behind by a failed restore, reported whenever the garbage
        # collector meets them: nothing a user can act on (shown under --debug).
        return
    print(
        f"{prog}: warning: {text or category.__name__}", file=sys.stderr if file is None else file
    )
