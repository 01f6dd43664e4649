"""LR bracketing: the next LR past an edge, the decision, and run_sweep extending real grids."""

from __future__ import annotations

import json
import math

import pytest

from spamlang.cli import main as cli_main
from spamlang.errors import UserError
from spamlang.sweep import Sweep, run_sweep
from spamlang.sweep.best_lr import BestLR, decide, step_beyond
from spamlang.sweep.results_csv import gather
from spamlang.train import run as train_run
from spamlang.train.config import TrainConfig

# One layer: nothing here depends on depth, and it compiles faster.
BASE = TrainConfig(
    preset="tiny", vocab_size=16, seq_len=2, batch_size=8, tokens=8 * 2 * 10, model={"n_layers": 1}
)


@pytest.mark.parametrize(
    "grid, side, expected",
    [
        ((3e-3, 1e-2, 3e-2), "largest", 1e-1),  # a half-decade grid continues as one
        ((1e-2, 3e-2, 1e-1), "largest", 3e-1),
        ((3e-3, 1e-2, 3e-2), "smallest", 1e-3),
        ((1e-3, 3e-3), "smallest", 3e-4),
        ((1e-3, 2e-3, 4e-3), "largest", 8e-3),  # the grid's own ratio
        ((1e-3, 2e-3, 4e-3), "smallest", 5e-4),
        ((5e-4,), "largest", 1.5e-3),  # one LR: x3
        ((1e-2,), "smallest", 3e-3),  # 1e-2 / 3, rounded to 3 digits
    ],
)
def test_step_beyond(grid, side, expected):
    assert step_beyond(grid, side) == pytest.approx(expected, rel=2e-3)


def best(lr, grid, value=5.0, floor=0.0):
    return BestLR((), lr, tuple(grid), value, value, value, 2, value - floor)


def test_decide():
    original = (1e-2, 3e-2, 1e-1)
    assert decide(best(3e-2, original), original, 3) == ("interior", None)
    assert decide(best(1e-1, original), original, 3) == ("extend", 3e-1)
    assert decide(best(1e-2, original), original, 3) == ("extend", 3e-3)
    # Three LRs already added above: the limit, even though the best is still the largest.
    grown = (*original, 3e-1, 1.0, 3.0)
    assert decide(best(3.0, grown), original, 3) == ("limit", None)
    assert decide(best(3.0, grown), original, 4) == ("extend", 10.0)
    # Added LRs above do not count against the limit below.
    assert decide(best(1e-2, grown), original, 3) == ("extend", 3e-3)
    # A best LR at the floor is as good as any other LR that reaches it.
    assert decide(best(1e-1, original, value=0.004), original, 3) == ("solved", None)


def fake_trainer(loss_of_lr, calls):
    """A stand-in for run_training that writes what the runner reads (config and result)."""

    def fake_training(config, out_dir, quiet=True):
        calls.append((config.lr, config.seed))
        loss = loss_of_lr(config.lr, config.seed)
        result = {
            "final_eval_loss": loss,
            "diverged": not math.isfinite(loss),
            "optimal_loss": 0.0,
            "loss_above_floor": loss,
        }
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "config.json").write_text(json.dumps(config.to_json()))
        (out_dir / "result.json").write_text(json.dumps(result))
        return result

    return fake_training


def bowl(center):
    """A loss with its minimum at lr = center, 1 at a factor of 10 away; seed 1 is 0.1 higher."""
    return lambda lr, seed: 1.0 + (math.log10(lr / center)) ** 2 + 0.1 * seed


def test_run_sweep_brackets_an_optimum_above_the_grid(tmp_path, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(train_run, "run_training", fake_trainer(bowl(0.3), calls))
    sweep = Sweep(
        "b", BASE, {"vocab_size": [16, 32], "lr": [1e-3, 3e-3, 1e-2], "seed": [0, 1]}, bracket_lr=5
    )
    rows = run_sweep(sweep, tmp_path, quiet=False, vmap=False)
    out = capsys.readouterr()
    for v in (16, 32):
        lrs = sorted({r["lr"] for r in rows if r["vocab_size"] == v})
        # 3e-2, 1e-1, 3e-1 (the optimum) and 1e0, which shows that 3e-1 is inside.
        assert lrs == pytest.approx([1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0])
        # Every added LR was trained for both seeds.
        assert sorted(r["seed"] for r in rows if r["vocab_size"] == v and r["lr"] == 1.0) == [0, 1]
        assert f"V{v}-lr1e0-seed1" in {r["run_id"] for r in rows}
    assert "warning" not in out.err and "limit" not in out.err
    # The summary gives each cell's best LR with its seed spread (seed 1 is 0.1 above seed 0).
    assert (
        "vocab_size=16: best lr 3e-1 of 1e-3 .. 1e0 (interior), final_eval_loss 1.05 "
        "(1.00 .. 1.10, 2 seeds)" in out.out
    )
    # A rerun decides the same from disk and trains nothing.
    calls.clear()
    assert len(run_sweep(sweep, tmp_path, quiet=True, vmap=False)) == len(rows) == 28
    assert calls == []


def test_the_process_that_finishes_a_cell_last_brackets_it(tmp_path, monkeypatch):
    """Two processes on one shard: one run of the cell is held by the other process, which
    finishes it while this one trains the rest; the cell is then complete, so this process
    brackets it (neither process used to, each having met a held run)."""
    from spamlang.rundir.lock import RunDirBusy

    calls, train = [], fake_trainer(bowl(0.3), [])

    def other_holds_one(config, out_dir, quiet=True):
        if (config.lr, config.seed) == (1e-2, 0) and "held" not in calls:
            calls.append("held")
            train(config, out_dir)  # the other process finishes it ...
            raise RunDirBusy(out_dir, None)  # ... while this one is refused its lock
        calls.append((config.lr, config.seed))
        return train(config, out_dir)

    monkeypatch.setattr(train_run, "run_training", other_holds_one)
    sweep = Sweep("b", BASE, {"lr": [1e-3, 3e-3, 1e-2], "seed": [0, 1]}, bracket_lr=1)
    rows = run_sweep(sweep, tmp_path, quiet=True, vmap=False)
    assert "held" in calls and (3e-2, 0) in calls and (3e-2, 1) in calls
    assert sorted({r["lr"] for r in rows}) == pytest.approx([1e-3, 3e-3, 1e-2, 3e-2])


def test_only_brackets_the_cells_it_selects(tmp_path, monkeypatch):
    """Arms that differ in a member field (b2) share one vmapped group. `--only` one arm used to
    bracket every finished cell of that group, the other arm's too."""
    calls = []
    monkeypatch.setattr(train_run, "run_training", fake_trainer(bowl(0.3), calls))
    sweep = Sweep("b", BASE, {"b2": [0.9, 0.95], "lr": [1e-3, 3e-3, 1e-2]}, bracket_lr=1)
    run_sweep(sweep, tmp_path, quiet=True, vmap=False, bracket_lr=0)
    (mine,) = {
        run_id for run_id, config in sweep.points() if config.b2 == 0.9 and config.lr == 1e-2
    }
    rows = run_sweep(sweep, tmp_path, quiet=True, vmap=False, only=(mine.replace("1e-2", "*"),))
    lrs = {b2: sorted(r["lr"] for r in rows if r["b2"] == b2) for b2 in (0.9, 0.95)}
    assert lrs[0.9] == pytest.approx([1e-3, 3e-3, 1e-2, 3e-2])  # its best was the largest
    assert lrs[0.95] == pytest.approx([1e-3, 3e-3, 1e-2])  # the same, but not selected


def test_bracketing_stops_at_its_limit_and_says_so(tmp_path, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(train_run, "run_training", fake_trainer(bowl(10.0), calls))
    sweep = Sweep("b", BASE, {"lr": [1e-3, 3e-3, 1e-2]})
    rows = run_sweep(sweep, tmp_path, quiet=True, vmap=False, bracket_lr=2)
    assert sorted(r["lr"] for r in rows) == pytest.approx([1e-3, 3e-3, 1e-2, 3e-2, 1e-1])
    err = capsys.readouterr().err
    assert "LR bracketing stopped at its limit (2 LRs per side) in 1 cell(s)" in err
    assert "the largest in the grid (1e-3 .. 1e-1)" in err


def test_divergence_ends_bracketing_from_above(tmp_path, monkeypatch):
    # Loss falls with LR up to 1e-1; 3e-1 diverges. The best, 1e-1, is then inside the grid.
    calls = []
    loss = lambda lr, seed: math.nan if lr > 0.2 else 1.0 / lr  # noqa: E731
    monkeypatch.setattr(train_run, "run_training", fake_trainer(loss, calls))
    sweep = Sweep("b", BASE, {"lr": [1e-2, 3e-2]}, bracket_lr=3)
    rows = run_sweep(sweep, tmp_path, quiet=True, vmap=False)
    assert sorted(r["lr"] for r in rows) == pytest.approx([1e-2, 3e-2, 1e-1, 3e-1])
    assert [r["diverged"] for r in sorted(rows, key=lambda r: r["lr"])] == [False] * 3 + [True]


def test_a_cell_that_diverged_at_every_lr_is_extended_below_its_grid(tmp_path, monkeypatch):
    # Seed 1 diverges above 2e-3 and seed 0 above 5e-3: every LR of the grid has a diverged
    # seed, so there is no best. 3e-3 still has one; 1e-3 has none and is the best, at the
    # grid's low end, so the usual rule adds 3e-4 (worse: loss 1 / lr), which ends it.
    limit = {0: 5e-3, 1: 2e-3}
    loss = lambda lr, seed: math.nan if lr > limit[seed] else 1.0 / lr  # noqa: E731
    monkeypatch.setattr(train_run, "run_training", fake_trainer(loss, []))
    sweep = Sweep("b", BASE, {"lr": [1e-2, 3e-2], "seed": [0, 1]}, bracket_lr=3)
    rows = run_sweep(sweep, tmp_path, quiet=True, vmap=False)
    assert sorted({r["lr"] for r in rows}) == pytest.approx([3e-4, 1e-3, 3e-3, 1e-2, 3e-2])
    assert sorted(r["seed"] for r in rows if r["lr"] == pytest.approx(1e-3)) == [0, 1]


def test_a_cell_that_diverged_everywhere_stops_at_the_limit(tmp_path, monkeypatch, capsys):
    loss = lambda lr, seed: math.nan  # noqa: E731
    monkeypatch.setattr(train_run, "run_training", fake_trainer(loss, []))
    sweep = Sweep("b", BASE, {"lr": [1e-2, 3e-2]}, bracket_lr=2)
    rows = run_sweep(sweep, tmp_path, quiet=True, vmap=False)
    assert sorted(r["lr"] for r in rows) == pytest.approx([1e-3, 3e-3, 1e-2, 3e-2])
    assert "LR bracketing stopped at its limit (2 LRs per side) in 1 cell(s)" in (
        capsys.readouterr().err
    )


def test_a_damaged_finished_run_is_left_out_of_bracketing_not_looped_on(
    tmp_path, monkeypatch, capsys
):
    """A rerun after a finished run's result.json was damaged: the cell asked for that run's LR
    again, whose result.json exists, so nothing trained and the loop repeated forever. Now the
    cell is left out of bracketing and the gather names the run in one warning line."""
    import threading

    calls = []
    monkeypatch.setattr(train_run, "run_training", fake_trainer(bowl(0.3), calls))
    sweep = Sweep("b", BASE, {"lr": [1e-3, 3e-3, 1e-2]}, bracket_lr=2)
    run_sweep(sweep, tmp_path, quiet=True, vmap=False)
    (tmp_path / "lr3e-2" / "result.json").write_text("{torn")
    calls.clear()
    done = []
    rerun = threading.Thread(
        target=lambda: done.append(run_sweep(sweep, tmp_path, quiet=True, vmap=False)),
        daemon=True,
    )
    rerun.start()
    rerun.join(timeout=30)
    assert done, "the rerun of a bracketed sweep with a damaged result.json did not end"
    assert calls == []  # nothing retrained, nothing asked for again
    warnings = [x for x in capsys_lines(capsys) if "lr3e-2" in x]
    assert len(warnings) == 1 and "left out of results.csv" in warnings[0]


def capsys_lines(capsys) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_a_solved_cell_is_not_bracketed(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(
        train_run, "run_training", fake_trainer(lambda lr, seed: 0.002 * lr, calls)
    )  # floor at every LR
    run_sweep(
        Sweep("b", BASE, {"lr": [1e-3, 1e-2]}), tmp_path, quiet=True, vmap=False, bracket_lr=3
    )
    assert sorted(lr for lr, _ in calls) == [1e-3, 1e-2]


def test_bracketing_needs_an_lr_axis_and_a_count():
    with pytest.raises(UserError, match="needs an 'lr' axis"):
        Sweep("b", BASE, {"vocab_size": [16, 32]}, bracket_lr=2)
    with pytest.raises(UserError, match="sweep 'b': bracket_lr must be >= 0, got -1"):
        Sweep("b", BASE, {"lr": [1e-2]}, bracket_lr=-1)


def test_cli_flag_errors_exit_2(tmp_path, capsys):
    sweep_file = tmp_path / "s.json"
    sweep_file.write_text(
        json.dumps({"name": "s", "base": BASE.to_json(), "axes": {"vocab_size": [16]}})
    )
    with pytest.raises(SystemExit) as e:  # argparse's own exit
        cli_main(["sweep", str(sweep_file), "--bracket-lr", "x", "--dry-run"])
    assert e.value.code == 2 and "--bracket-lr" in capsys.readouterr().err
    assert (
        cli_main(
            ["sweep", str(sweep_file), "--bracket-lr", "--dry-run", "--out", str(tmp_path / "o")]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs an 'lr' axis" in err[0]


def test_real_runs_bracket_a_grid_below_the_optimum(tmp_path, capsys):
    """Real training: 10 steps at 1e-4 and 3e-4 barely move a tiny model, so the best is the
    largest LR and bracketing must go up; the run it adds is an ordinary finished run."""
    sweep = Sweep("real", BASE.replace(eval_sequences=32), {"lr": [1e-4, 3e-4]}, bracket_lr=1)
    rows = run_sweep(sweep, tmp_path, quiet=True, vmap=False)
    assert sorted(r["lr"] for r in rows) == pytest.approx([1e-4, 3e-4, 1e-3])
    losses = {r["lr"]: r["final_eval_loss"] for r in rows}
    assert losses[1e-3] < losses[3e-4] < losses[1e-4]  # still improving: at the limit
    assert "stopped at its limit (1 LRs per side) in 1 cell(s)" in capsys.readouterr().err
    assert {r["run_id"] for r in gather(tmp_path)} == {"lr1e-4", "lr3e-4", "lr1e-3"}
