"""spamlang.sweep.spec.shard_groups: a shard with no group says so."""

from __future__ import annotations

from spamlang.cli.sweep_cmd import main as sweep_main
from spamlang.sweep import Sweep
from spamlang.sweep.spec import groups
from spamlang.train import TrainConfig

BASE = TrainConfig(preset="tiny", vocab_size=64, seq_len=2, batch_size=4, tokens=4 * 2 * 10)


def test_an_empty_shard_warns(tmp_path, capsys):
    sweep = Sweep("shards", BASE, {"vocab_size": [16, 32, 64], "lr": [1e-3, 1e-2]})
    count = len(groups(sweep))
    assert (
        sweep_main(
            sweep, ["--out", str(tmp_path), "--shard", f"{count + 1}/{count + 4}", "--quiet"]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert f"shard {count + 1}/{count + 4} is empty" in err and f"{count} group" in err
