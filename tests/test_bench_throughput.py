"""benchmarks/bench_throughput.py --from-results: committed runs become table rows, each on the
CPU its results row names (else the committed machine), a CPU's rows kept apart."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

from spamlang import throughput

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_throughput.py"
SWEEP_FILE = """
from spamlang.sweep import Sweep
from spamlang.train import TrainConfig

SWEEP = Sweep("s", TrainConfig(preset="tiny", vocab_size=64, seq_len=64, batch_size=4),
              {"lr": [1e-3, 1e-2]}, group_size=1)
"""


def _bench(monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_throughput", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    # Its dataclasses resolve their annotations through sys.modules.
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_from_results_keeps_each_cpus_runs_apart(tmp_path, capsys, monkeypatch):
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "sweeps" / "s.py").write_text(SWEEP_FILE)
    (tmp_path / "results" / "s").mkdir(parents=True)
    runs = [("lr1e-3", 100.0, "", ""), ("lr1e-2", 300.0, "Other CPU", "8")]
    with open(tmp_path / "results" / "s" / "results.csv", "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["run_id", "tokens_per_s", "cpu", "cores"])
        out.writerows(runs)
    bench = _bench(monkeypatch)
    assert bench.main(["--from-results", str(tmp_path / "results")]) == 0
    rows = bench.from_results(tmp_path / "results", tmp_path / "sweeps")
    by_cpu = {(r.cpu, r.cores): r.tokens_per_s for r in rows}
    assert by_cpu == {throughput.COMMITTED_MACHINE: 100.0, ("Other CPU", 8): 300.0}
    table = capsys.readouterr().out
    assert "| Other CPU, 8 |" in table and "| AMD EPYC, 2 |" in table, table
