"""spamlang.sweep.spec.shard_groups: a shard with no group says so."""

from __future__ import annotations

import pytest

from spamlang.cli.sweep_cmd import main as sweep_main
from spamlang.errors import UserError
from spamlang.sweep import Sweep
from spamlang.sweep.spec import groups
from spamlang.train import TrainConfig

# One layer: nothing here depends on depth, and it compiles faster.
BASE = TrainConfig(
    preset="tiny", vocab_size=64, seq_len=2, batch_size=4, tokens=4 * 2 * 10, model={"n_layers": 1}
)


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


def test_only_trains_the_matching_runs_and_the_rest_later(tmp_path, capsys):
    """--only GLOB: one more seed first, then the whole grid; nothing trains twice."""
    import csv

    sweep = Sweep("only", BASE, {"lr": [1e-3, 1e-2], "seed": [0, 1]})
    out = ["--out", str(tmp_path), "--quiet", "--no-plots", "--no-vmap"]

    def finished() -> dict:
        with open(tmp_path / "results.csv") as f:
            return {r["run_id"]: r["final_eval_loss"] for r in csv.DictReader(f)}

    # Bracketing waits for whole cells: none has every seed yet, so it adds no LR here.
    only = ["--only", "*seed1", "--only", "lr1e-3-seed0", "--bracket-lr", "1"]
    assert sweep_main(sweep, [*out, *only]) == 0
    first = finished()
    assert sorted(first) == ["lr1e-2-seed1", "lr1e-3-seed0", "lr1e-3-seed1"]
    assert sweep_main(sweep, out) == 0
    assert len(finished()) == 4 and {k: finished()[k] for k in first} == first


def test_only_matching_nothing_is_one_line_and_status_2(tmp_path, capsys):
    sweep = Sweep("only", BASE, {"vocab_size": [16, 32], "lr": [1e-3, 1e-2]})
    assert sweep_main(sweep, ["--out", str(tmp_path), "--only", "*seed7"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "sweep only: error: --only '*seed7' matches no run id of sweep 'only' (--dry-run lists them)"
    ]
    assert not (tmp_path / "results.csv").exists()


def test_a_sweeps_own_group_size_deals_like_the_flag_which_overrides_it(tmp_path, capsys):
    """Sweep(group_size=1): every run its own group, in the dry run as in `groups`; an explicit
    --group-size wins; a bad value is one line."""
    axes = {"lr": [1e-3, 1e-2, 3e-2]}
    alone = Sweep("alone", BASE, axes, group_size=1)
    assert len(groups(Sweep("together", BASE, axes))) == 1
    assert len(groups(alone, alone.group_size)) == 3
    for flag, shards in (([], 3), (["--group-size", "3"], 1)):
        # shard 1 of 3 is empty exactly when the sweep deals one group only
        sweep_main(alone, ["--out", str(tmp_path), "--dry-run", "--shard", "1/3", *flag])
        err = capsys.readouterr().err
        assert ("shard 1/3 is empty" in err) == (shards == 1), (flag, err)
    with pytest.raises(UserError, match="group_size"):
        Sweep("bad", BASE, axes, group_size=-1)


def test_a_shard_is_read_from_text_or_a_pair_and_refused_in_one_line():
    from spamlang.sweep.spec import parse_shard, shard_groups

    assert parse_shard("1/4") == parse_shard((1, 4)) == (1, 4)
    for bad, said in (
        ("1-4", "--shard must look like i/n (e.g. 0/4), got '1-4'"),
        ("4/4", "shard (i, n) needs integers with 0 <= i < n, got '4/4'"),
        (3, "shard must be a pair (i, n), got 3"),
        ((1.5, 4), "shard (i, n) needs integers with 0 <= i < n, got (1.5, 4)"),
    ):
        with pytest.raises(UserError) as e:
            parse_shard(bad)
        assert str(e.value) == said
    sweep = Sweep("s", BASE, {"lr": [1e-3, 1e-2], "seed": [0, 1]}, group_size=1)
    picked = shard_groups(sweep, (0, 1), 1, only=("*seed1", "lr1e-3-*"))
    assert [run_id for g in picked for run_id, _ in g] == [
        "lr1e-3-seed0",
        "lr1e-3-seed1",
        "lr1e-2-seed1",
    ]
