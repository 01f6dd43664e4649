"""spamlang.sweep.dry_run: time from similar groups' finished runs, bracketing's partial runs."""

from __future__ import annotations

import json

from _fake_sweep import write_finished_sweep

from spamlang.sweep import Sweep
from spamlang.sweep import main as sweep_main
from spamlang.train import TrainConfig

BASE = TrainConfig(preset="tiny", vocab_size=64, seq_len=2, batch_size=4, tokens=4 * 2 * 10)


def test_dry_run_times_new_groups_from_similar_ones_and_lists_bracketing_runs(tmp_path, capsys):
    out = tmp_path / "s"
    done = Sweep("dry", BASE, {"lr": [1e-3, 1e-2], "tie_embeddings": [True]})
    write_finished_sweep(done, out)
    partial = out / "lr3e-2-tied"  # an LR bracketing added, interrupted at step 5
    (partial / "checkpoints" / "5").mkdir(parents=True)
    (partial / "config.json").write_text(json.dumps(BASE.replace(lr=3e-2).to_json()))
    grown = Sweep("dry", BASE, {"lr": [1e-3, 1e-2], "tie_embeddings": [True, False]})
    assert sweep_main(grown, ["--out", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "lr3e-2-tied  partial (step 5/10)" in text
    time_line = next(line for line in text.splitlines() if line.startswith("time:"))
    assert "2 run(s)" in time_line and "same preset and V" in time_line
