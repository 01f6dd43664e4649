"""A full disk anywhere a run writes is one line naming the file and the free space, exit 2,
and the run resumes once there is room (#23 item 3)."""

import errno
import json

import pytest

from spamlang import rundir
from spamlang.cli import main
from spamlang.errors import UserError, no_space
from spamlang.rundir import atomic

TRAIN = [
    "train",
    "--vocab-size",
    "32",
    "--seq-len",
    "8",
    "--batch-size",
    "8",
    "--tokens",
    "640",
    "--log-every",
    "5",
    "--checkpoint-every",
    "5",
    "--eval-sequences",
    "8",
    "--model",
    "n_layers=1",
    "--quiet",
]


def _full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_no_space_names_the_file_and_the_free_space(tmp_path):
    e = no_space(tmp_path / "run" / "metrics.jsonl", OSError(errno.ENOSPC, "No space"))
    assert isinstance(e, UserError)
    assert str(e).startswith(f"no space left on device writing {tmp_path}/run/metrics.jsonl (")
    assert "MiB free there" in str(e)
    # orbax's own words for it, raised from another error
    try:
        try:
            raise RuntimeError("RESOURCE_EXHAUSTED: Error writing local file")
        except RuntimeError as inner:
            raise ValueError("checkpoint write failed") from inner
    except ValueError as outer:
        assert no_space(tmp_path, outer) is not None
    assert no_space(tmp_path, OSError(errno.EACCES, "Permission denied")) is None


def test_atomic_write_on_a_full_disk_names_the_file_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(atomic.os, "fsync", _full)
    with pytest.raises(UserError, match=r"no space left on device writing .*result\.json"):
        atomic.atomic_write_json(tmp_path / "result.json", {"a": 1})
    assert list(tmp_path.iterdir()) == []


def test_checkpoint_on_a_full_disk_is_status_2_and_resumes(tmp_path, monkeypatch, capsys):
    import orbax.checkpoint as ocp

    real = ocp.CheckpointManager.save
    calls = []

    def save(self, step, *args, **kwargs):
        calls.append(step)
        if step == 10:
            raise ValueError("RESOURCE_EXHAUSTED: Error writing local file: No space left")
        return real(self, step, *args, **kwargs)

    monkeypatch.setattr(ocp.CheckpointManager, "save", save)
    out = tmp_path / "run"
    assert main([*TRAIN, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"spamlang train: error: no space left on device writing {out / 'checkpoints' / '10'}"
    ), err
    assert not (out / "result.json").exists()
    monkeypatch.setattr(ocp.CheckpointManager, "save", real)
    assert main([*TRAIN, "--out", str(out)]) == 0  # room again: it resumes from step 5
    assert json.loads((out / "result.json").read_text())["steps"] == 10


def test_metrics_on_a_full_disk_names_the_file(tmp_path):
    log = rundir.MetricsLog(tmp_path, 0)
    log._file.close()
    log._file = _Full()  # an open file on a full disk
    with pytest.raises(UserError, match=rf"writing {tmp_path / 'metrics.jsonl'} \("):
        log.append({"kind": "train", "step": 1})


class _Full:
    def write(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self):
        pass
