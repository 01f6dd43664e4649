"""The command line's error policy: one line per problem, tracebacks only with --debug."""

from __future__ import annotations

import logging
import sys
import warnings
from types import SimpleNamespace

import pytest

from spamlang.cli import main
from spamlang.error_policy import debug_enabled, error_line, guarded, quiet
from spamlang.errors import UserError, describe


def _boom(*args, **kwargs):
    raise RuntimeError("boom\nsecond line")


def test_unexpected_exception_is_one_line_with_status_1(monkeypatch, capsys):
    monkeypatch.delenv("SPAMLANG_DEBUG", raising=False)
    monkeypatch.setattr("spamlang.cli.train_cmd.config_from_args", _boom)
    assert main(["train", "--out", "x"]) == 1
    assert capsys.readouterr().err == (
        "spamlang train: error: RuntimeError: boom (rerun with "
        "--debug or SPAMLANG_DEBUG=1 for the trace)\n"
    )


@pytest.mark.parametrize(
    "argv", [["--debug", "train", "--out", "x"], ["train", "--out", "x", "--debug"]]
)
def test_debug_flag_before_or_after_the_verb_shows_the_trace(monkeypatch, argv):
    monkeypatch.delenv("SPAMLANG_DEBUG", raising=False)
    monkeypatch.setattr("spamlang.cli.train_cmd.config_from_args", _boom)
    with pytest.raises(RuntimeError, match="boom"):
        main(argv)
    assert not debug_enabled()  # the flag lasts for its command only


def test_debug_variable(monkeypatch):
    for value, on in (("1", True), ("yes", True), ("0", False), ("", False), ("off", False)):
        monkeypatch.setenv("SPAMLANG_DEBUG", value)
        assert debug_enabled() is on
    monkeypatch.setenv("SPAMLANG_DEBUG", "1")
    with pytest.raises(UserError), guarded("p"):
        raise UserError("bad")


def test_error_lines_and_statuses():
    assert error_line("p", UserError("bad flag\nmore")) == ("p: error: bad flag", 2)
    long = "x" * 500 + "; delete the checkpoints/ folder"
    assert error_line("p", UserError(long)) == (f"p: error: {long}", 2)  # advice at the end kept
    assert error_line("p", OSError(28, "No space left on device")) == (
        "p: error: [Errno 28] No space left on device",
        2,
    )
    assert error_line("p", KeyboardInterrupt()) == ("p: interrupted", 130)
    line, status = error_line("p", ValueError("internal"))
    assert status == 1 and line.startswith("p: error: ValueError: internal (rerun with --debug")


def test_library_reprs_are_cut_and_a_pointer_gives_way_to_its_cause():
    cause = ValueError('OUT_OF_RANGE: Error reading "w" [tensorstore_spec[1]=\'{"a": 1}\']')
    pointer = Exception(
        "Encountered error while reading array index: (slice(0, 4, 1),). See "
        "full TensorStore details: <bound method pybind11_x.spec of TensorStore({"
        "\n  'base': {},\n})>."
    )
    pointer.__cause__ = cause
    assert describe(pointer) == 'ValueError: OUT_OF_RANGE: Error reading "w"'
    assert describe(Exception(str(pointer))) == (
        "Exception: Encountered error while reading array index: (slice(0, 4, 1),)."
    )
    assert len(describe(RuntimeError("x" * 1000))) < 320


def test_quiet_warnings_logs_and_unraisable_then_restored(monkeypatch, capsys):
    monkeypatch.delenv("SPAMLANG_DEBUG", raising=False)
    absl = logging.getLogger("absl")
    level, hook = absl.level, sys.unraisablehook
    with quiet("spamlang x"):
        warnings.warn("checkpoint 60 is unreadable\nsecond line", UserWarning, stacklevel=1)
        logging.getLogger("absl").error("orbax noise")
        logging.getLogger("asyncio").error("Task exception was never retrieved")
        error = RuntimeError("Event loop is closed")
        sys.unraisablehook(
            SimpleNamespace(
                exc_type=RuntimeError,
                exc_value=error,
                exc_traceback=None,
                err_msg=None,
                object=None,
            )
        )
    assert capsys.readouterr().err == "spamlang x: warning: checkpoint 60 is unreadable\n"
    assert absl.level == level and sys.unraisablehook is hook
