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

    a = threading.Thread(target=grow, name="A",
                         args=("A", {"lr": [1e-3], "weight_decay": [0.1, 0.0]}))
    a.start()
    assert a_read.wait(timeout=30)
    b = threading.Thread(target=grow, name="B", args=("B", {"lr": [1e-3], "b1": [0.9, 0.8]}))
    b.start()
    a.join(timeout=60)
    b.join(timeout=60)
    axes = json.loads((tmp_path / "sweep.json").read_text())["axes"]
    assert outcome["A"] == "ok" and "weight_decay" in axes
    assert "axes may be added" in outcome["B"] and "b1" not in axes, (outcome, axes)
