"""Progress in a batch log (stderr not a terminal): a line at the first log step, then one at
most every SPAMLANG_LOG_SECONDS seconds and at the end, and a line when a run resumes."""

import pytest

from spamlang.errors import UserError
from spamlang.progress import Progress, wait_for
from spamlang.train import Interrupted, TrainConfig, run_training

CFG = TrainConfig(
    vocab_size=32,
    seq_len=8,
    batch_size=8,
    tokens=8 * 8 * 40,
    log_every=4,
    checkpoint_every=0,
    eval_sequences=8,
    model={"n_layers": 1},
)


def _steps(err: str) -> list[int]:
    return [
        int(line.split("step ")[1].split("/")[0]) for line in err.splitlines() if "] step " in line
    ]


def test_lines_follow_the_clock_not_the_step_count(capsys, monkeypatch):
    clock = iter(range(0, 1000, 10))  # each call 10 s later
    monkeypatch.setattr("spamlang.progress.time.perf_counter", lambda: next(clock))
    progress = Progress(100, 0, label="run", quiet=False, every_s=25)
    for step in range(10, 101, 10):
        progress.logged(step, [1.0], 5.0)
    # first log, then once 25 s have passed since the last line, and the last step
    assert _steps(capsys.readouterr().err) == [10, 40, 70, 100]


def test_a_run_says_where_it_resumed(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPAMLANG_LOG_SECONDS", "1e-9")  # every log step
    with pytest.raises(Interrupted):
        run_training(CFG, tmp_path / "run", stop_after_step=20)
    assert _steps(capsys.readouterr().err) == [4, 8, 12, 16, 20]
    run_training(CFG, tmp_path / "run")
    err = capsys.readouterr().err
    assert "resumed 1 run(s) from the checkpoint at step 20" in err
    assert _steps(err) == [24, 28, 32, 36, 40]


def test_a_bad_log_interval_is_a_user_error(monkeypatch):
    monkeypatch.setenv("SPAMLANG_LOG_SECONDS", "often")
    with pytest.raises(UserError, match="SPAMLANG_LOG_SECONDS must be a number of seconds > 0"):
        Progress(10, 0, label="run", quiet=False)


class _Slow:
    """An array that is ready after `polls` checks."""

    def __init__(self, polls):
        self.polls = polls

    def is_ready(self):
        self.polls -= 1
        return self.polls < 0


def test_a_long_evaluation_says_so(capsys):
    clock = iter(range(0, 10_000))  # each call 1 s later
    progress = Progress(10, 0, label="run", quiet=False)
    wait_for(
        [_Slow(30)],
        progress,
        "evaluating 8 sequences",
        clock=lambda: next(clock),
        sleep=lambda s: None,
    )
    lines = capsys.readouterr().err.splitlines()
    # first after 3 s, then every 10 s, then once done
    assert lines[:3] == [
        "[run] evaluating 8 sequences: 3 s so far",
        "[run] evaluating 8 sequences: 13 s so far",
        "[run] evaluating 8 sequences: 23 s so far",
    ]
    assert lines[3].startswith("[run] evaluating 8 sequences: done in ") and len(lines) == 4
    wait_for([_Slow(1)], progress, "quick", clock=lambda: next(clock), sleep=lambda s: None)
    assert capsys.readouterr().err == ""  # a quick evaluation is not mentioned
