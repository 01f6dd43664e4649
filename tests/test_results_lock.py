"""results.csv under concurrent shards: writers take turns, so no finished run is lost."""

from __future__ import annotations

import csv
import json
import threading
from pathlib import Path

from spamlang.sweep import RESULT_COLUMNS, Sweep
from spamlang.sweep import results_csv as results
from spamlang.sweep.sweep_file import check_sweep_file
from spamlang.train.config import TrainConfig

CONFIG = TrainConfig(preset="tiny", vocab_size=16, seq_len=16, batch_size=8, tokens=2560)
SLOW_GATHER_S = 0.5


def _finish(root: Path, run_id: str, config: TrainConfig) -> None:
    """What a shard leaves when one of its runs finishes: config.json, then result.json."""
    d = root / run_id
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps(config.to_json()))
    (d / "result.json").write_text(json.dumps({k: 1.0 for k in RESULT_COLUMNS}))


def test_two_shards_writing_at_once_keep_every_finished_run(tmp_path, monkeypatch):
    """Shard 0 gathers (seeing only its own run), then stalls before writing; meanwhile shard 1
    finishes its run and writes. Unlocked, shard 0's late write drops shard 1's run; locked,
    shard 1 waits for shard 0's write and then gathers both."""
    sweep = Sweep("shards", CONFIG, {"lr": [3e-3, 1e-2]})
    check_sweep_file(sweep, tmp_path)
    points = dict(sweep.points())
    gathered, written = threading.Event(), threading.Event()
    real_gather = results.gather

    def slow_gather(root, *args):
        rows = real_gather(root, *args)
        if threading.current_thread().name == "shard0":
            gathered.set()
            written.wait(SLOW_GATHER_S)  # unlocked, shard 1 writes in this gap
        return rows

    monkeypatch.setattr(results, "gather", slow_gather)

    def shard0():
        _finish(tmp_path, "lr3e-3", points["lr3e-3"])
        results.write_results(tmp_path)

    def shard1():
        assert gathered.wait(10)
        _finish(tmp_path, "lr1e-2", points["lr1e-2"])
        results.write_results(tmp_path)
        written.set()

    threads = [
        threading.Thread(target=shard0, name="shard0"),
        threading.Thread(target=shard1, name="shard1"),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert written.is_set(), "shard 1 did not finish"
    with open(tmp_path / "results.csv", newline="") as f:
        assert sorted(r["run_id"] for r in csv.DictReader(f)) == ["lr1e-2", "lr3e-3"]
    assert not (tmp_path / results.RESULTS_LOCK).exists()
