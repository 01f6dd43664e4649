"""`spamlang.train.run`: a vmapped group killed between two members' checkpoint saves resumes
at its original size, bitwise; and a failure on the way out does not hide the first one."""

from __future__ import annotations

import errno
import json

import pytest

from spamlang import rundir
from spamlang.errors import UserError
from spamlang.rundir.checkpoint import RunCheckpoints
from spamlang.train import run_group
from spamlang.train.config import TrainConfig

# 12 steps, a checkpoint every 4, rows every 2: three members, one vmapped program.
CFG = TrainConfig(
    vocab_size=64,
    seq_len=2,
    batch_size=4,
    tokens=4 * 2 * 12,
    lr=3e-2,
    schedule="constant",
    warmup_frac=0.0,
    log_every=2,
    checkpoint_every=4,
    eval_sequences=8,
    keep_checkpoints=1,
    model={"n_layers": 1},  # one layer: nothing here depends on depth, and it compiles faster
)
CONFIGS = [CFG.replace(lr=lr, seed=i) for i, lr in enumerate((3e-2, 1e-1, 1e-2))]
TIMING = ("tokens_per_s", "mfu", "wall_seconds")


class _Kill(BaseException):
    """Stands for kill -9: nothing in the trainer catches it."""


def _timeless(run_dir, name):
    rows = [json.loads(line) for line in (run_dir / name).read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def test_a_kill_between_two_members_saves_resumes_the_group_bitwise(tmp_path, monkeypatch):
    ref = [tmp_path / f"ref{i}" for i in range(3)]
    run_group(CONFIGS, ref, quiet=True)
    dirs = [tmp_path / f"run{i}" for i in range(3)]
    real = RunCheckpoints.save

    def save_then_die(self, step, state, meta):
        real(self, step, state, meta)
        if step == 8:  # the first member's checkpoint at step 8 is written, the others' not
            raise _Kill

    monkeypatch.setattr(RunCheckpoints, "save", save_then_die)
    with pytest.raises(_Kill):
        run_group(CONFIGS, dirs, quiet=True)
    monkeypatch.setattr(RunCheckpoints, "save", real)
    killed = [RunCheckpoints(d / "checkpoints", 1, read_only=True).steps() for d in dirs]
    run_group(CONFIGS, dirs, quiet=True)
    for got, want in zip(dirs, ref):
        assert _timeless(got, "metrics.jsonl") == _timeless(want, "metrics.jsonl"), got.name
        result = {
            k: v
            for k, v in json.loads((got / "result.json").read_text()).items()
            if k not in TIMING
        }
        assert result == {
            k: v
            for k, v in json.loads((want / "result.json").read_text()).items()
            if k not in TIMING
        }
        assert RunCheckpoints(got / "checkpoints", 1, read_only=True).steps() == [12]
    assert killed == [[4, 8], [4], [4]]  # keep_checkpoints 1, but 4 stays until all have 8


class _FullFile:
    """An open metrics.jsonl on a full disk whose close fails too (another errno)."""

    def write(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self):
        pass

    def close(self):
        raise OSError(errno.EIO, "Input/output error")


def test_a_torn_row_of_a_checkpointed_step_is_trained_again_not_lost(tmp_path):
    """The checkpoint of step 8 is on disk but the train row of step 8 is torn (a disk that kept
    the one and not the other): the resume goes back to step 4, whose rows are whole, and the
    finished log equals an uninterrupted run's, row for row (before, the row was lost)."""
    from spamlang.errors import Interrupted
    from spamlang.train import run_training

    config = CFG.replace(keep_checkpoints=2)
    run_training(config, tmp_path / "ref", quiet=True)
    with pytest.raises(Interrupted):
        run_training(config, tmp_path / "cut", quiet=True, stop_after_step=8)
    path = tmp_path / "cut" / "metrics.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    assert json.loads(lines[-1]) == {**json.loads(lines[-1]), "kind": "train", "step": 8}
    path.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # torn mid-row
    run_training(config, tmp_path / "cut", quiet=True)
    assert _timeless(tmp_path / "cut", "metrics.jsonl") == _timeless(
        tmp_path / "ref", "metrics.jsonl"
    )


def test_a_full_disk_keeps_its_message_and_every_log_and_manager_is_closed(tmp_path, monkeypatch):
    dirs = [tmp_path / f"run{i}" for i in range(3)]
    closed = []
    real_append, real_log_close = rundir.MetricsLog.append, rundir.MetricsLog.close
    real_ckpt_close = RunCheckpoints.close

    def append(self, record):
        if self.path.parent == dirs[1]:
            if self._file is not None and not isinstance(self._file, _FullFile):
                self._file.close()
                self._file = _FullFile()
        real_append(self, record)

    def log_close(self):
        closed.append((self.path.name, self.path.parent.name))
        real_log_close(self)

    def ckpt_close(self):
        closed.append(("ckpt", self.directory.parent.name))
        real_ckpt_close(self)

    monkeypatch.setattr(rundir.MetricsLog, "append", append)
    monkeypatch.setattr(rundir.MetricsLog, "close", log_close)
    monkeypatch.setattr(RunCheckpoints, "close", ckpt_close)
    with pytest.raises(UserError, match=r"^no space left on device writing .*run1/metrics.jsonl"):
        run_group(CONFIGS, dirs, quiet=True)
    kinds = ("metrics.jsonl", "symbol_evals.jsonl", "ckpt")  # spam: symbol_evals.jsonl too
    assert sorted(closed) == sorted((kind, d.name) for d in dirs for kind in kinds)
