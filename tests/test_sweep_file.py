"""`spamlang.sweep.sweep_file`: what a sweep directory's sweep.json lets a sweep do to it."""

from __future__ import annotations

import json
import threading

from spamlang.errors import UserError
from spamlang.sweep import Sweep, sweep_file
from spamlang.train.config import TrainConfig

TINY = TrainConfig(vocab_size=64, seq_len=2, batch_size=4, tokens=64, eval_sequences=8)


def test_two_growths_at_once_never_lose_an_axis(tmp_path, monkeypatch):
    """Growth A (a weight_decay axis) has read sweep.json when growth B (a b1 axis) starts.
    B must wait for A's write and then see it: B is refused (it lacks A's axis), and sweep.json
    keeps weight_decay. Unlocked, B wrote first and A overwrote it, both without an error."""
    sweep_file.check_sweep_file(Sweep("g", TINY, {"lr": [1e-3]}), tmp_path)
    a_read, b_done = threading.Event(), threading.Event()
    real = sweep_file._check_base

    def check_base(*args):
        real(*args)
        if threading.current_thread().name == "A":
            a_read.set()
            b_done.wait(timeout=2.0)  # long enough for an unlocked B to finish

    monkeypatch.setattr(sweep_file, "_check_base", check_base)
    outcome = {}

    def grow(name, axes):
        try:
            sweep_file.check_sweep_file(Sweep("g", TINY, axes), tmp_path)
            outcome[name] = "ok"
        except UserError as e:
            outcome[name] = str(e)
        finally:
            if name == "B":
                b_done.set()

    a = threading.Thread(
        target=grow, name="A", args=("A", {"lr": [1e-3], "weight_decay": [0.1, 0.0]})
    )
    a.start()
    assert a_read.wait(timeout=30)
    b = threading.Thread(target=grow, name="B", args=("B", {"lr": [1e-3], "b1": [0.9, 0.8]}))
    b.start()
    a.join(timeout=60)
    b.join(timeout=60)
    axes = json.loads((tmp_path / "sweep.json").read_text())["axes"]
    assert outcome["A"] == "ok" and "weight_decay" in axes
    assert "axes may be added" in outcome["B"] and "b1" not in axes, (outcome, axes)


def _old_directory(tmp_path, sweep):
    """A sweep directory as versions before `axis_order` left it: sweep.json without the
    order, and a run directory (config.json) per point."""
    sweep_file.check_sweep_file(sweep, tmp_path)
    path = tmp_path / "sweep.json"
    data = json.loads(path.read_text())
    del data["axis_order"]
    path.write_text(json.dumps(data, sort_keys=True))
    for run_id, config in sweep.points():
        (tmp_path / run_id).mkdir()
        (tmp_path / run_id / "config.json").write_text(json.dumps(config.to_json()))


def test_an_old_directory_takes_its_axis_order_from_its_run_ids(tmp_path):
    import pytest

    sweep = Sweep("o", TINY, {"vocab_size": [64, 128], "lr": [1e-3, 3e-3]})
    _old_directory(tmp_path, sweep)
    reordered = Sweep("o", TINY, {"lr": [1e-3, 3e-3], "vocab_size": [64, 128]})
    with pytest.raises(
        UserError,
        match=r"in another order would rename every run .*keep the "
        r"order \['vocab_size', 'lr'\]",
    ):
        sweep_file.check_sweep_file(reordered, tmp_path)
    # The same order (grown by a value and an axis) is accepted, and sweep.json records it.
    grown = Sweep("o", TINY, {"vocab_size": [64, 128, 256], "seed": [0, 1], "lr": [1e-3, 3e-3]})
    assert sweep_file.check_sweep_file(grown, tmp_path).grown == {"seed": 0}
    stored = json.loads((tmp_path / "sweep.json").read_text())
    assert stored["axis_order"] == ["vocab_size", "seed", "lr"]
