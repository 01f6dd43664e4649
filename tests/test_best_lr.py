"""The end-of-sweep warning when a best LR sits at the edge of the LR grid (handmade rows)."""

from __future__ import annotations

import math

from spamlang.rundir.reading import settings_columns
from spamlang.sweep.best_lr import best_lrs, edge_warnings, swept_values


def rows_for(losses: dict, seeds=(0,), lrs=(3e-3, 1e-2, 3e-2), diverged=()) -> list[dict]:
    """One gather()-style row per (V, tied, lr, seed); losses[(V, tied)] maps lr -> loss."""
    rows = []
    for (v, tied), by_lr in losses.items():
        for lr in lrs:
            for seed in seeds:
                div = (v, tied, lr) in diverged
                rows.append(
                    {
                        "run_id": f"V{v}-lr{lr}-{tied}-s{seed}",
                        "language": "spam",
                        "preset": "tiny",
                        "d_model": 16,
                        "vocab_size": v,
                        "lr": lr,
                        "tie_embeddings": tied,
                        "head": "softmax",
                        "seed": seed,
                        "final_train_loss": 0.0,
                        "final_eval_loss": math.nan if div else by_lr[lr] + 0.1 * seed,
                        "loss_above_floor": 0.0,
                        "optimal_loss": 0.0,
                        "diverged": div,
                        "steps": 10,
                    }
                )
    return rows


def test_settings_are_the_columns_before_the_outcomes():
    row = rows_for({(64, True): {3e-3: 1, 1e-2: 1, 3e-2: 1}})[0]
    assert settings_columns(list(row)) == [
        "language",
        "preset",
        "d_model",
        "vocab_size",
        "lr",
        "tie_embeddings",
        "head",
        "seed",
    ]
    # An extra sweep axis (between settings and outcomes) is a setting too.
    extra = {
        **{k: row[k] for k in list(row)[:9]},
        "param.period": 4,
        **{k: row[k] for k in list(row)[9:]},
    }
    assert "param.period" in settings_columns(list(extra))


def test_warns_at_either_edge_of_a_grid_of_three():
    losses = {
        (4096, True): {3e-3: 6.2, 1e-2: 6.0, 3e-2: 5.7},  # best at the largest LR
        (4096, False): {3e-3: 7.0, 1e-2: 7.1, 3e-2: 7.2},  # best at the smallest LR
        (1024, True): {3e-3: 2.0, 1e-2: 0.8, 3e-2: 1.0},  # inside: no warning
        (1024, False): {3e-3: 2.0, 1e-2: 1.9, 3e-2: 9.0},  # inside, with 3e-2 diverged
    }
    rows = rows_for(losses, seeds=(0, 1), diverged={(1024, False, 3e-2)})
    assert edge_warnings(rows) == [
        "warning: best lr for vocab_size=4096, tie_embeddings=True is 3e-2, the largest in the "
        "grid (3e-3 .. 3e-2): the optimum may lie outside it",
        "warning: best lr for vocab_size=4096, tie_embeddings=False is 3e-3, the smallest in the "
        "grid (3e-3 .. 3e-2): the optimum may lie outside it",
    ]
    best = {
        (dict(b.group)["vocab_size"], dict(b.group)["tie_embeddings"]): b for b in best_lrs(rows)
    }
    # Seeds are averaged (+0 and +0.1), a diverged LR still belongs to the grid.
    assert best[1024, True].lr == 1e-2 and math.isclose(best[1024, True].value, 0.85)
    assert best[1024, False].lr == 1e-2 and best[1024, False].grid == (3e-3, 1e-2, 3e-2)


def test_seed_mean_decides_and_small_grids_never_warn():
    # Seed 0 alone would pick 3e-2; the mean over seeds picks 1e-2 (inside the grid).
    rows = rows_for({(64, True): {3e-3: 1.0, 1e-2: 0.5, 3e-2: 0.45}}, seeds=(0, 1))
    rows[-1]["final_eval_loss"] = 0.9  # lr 3e-2, seed 1
    assert [b.lr for b in best_lrs(rows)] == [1e-2] and edge_warnings(rows) == []
    two = rows_for({(64, True): {1e-2: 1.0, 3e-2: 0.5}}, lrs=(1e-2, 3e-2))
    assert edge_warnings(two) == []
    # One group: the warning needs no group label.
    one = rows_for({(64, True): {3e-3: 1.0, 1e-2: 0.7, 3e-2: 0.5}})
    assert edge_warnings(one) == [
        "warning: best lr is 3e-2, the largest in the grid (3e-3 .. 3e-2): the optimum may lie "
        "outside it"
    ]
    # Every run diverged: nothing to judge.
    assert (
        edge_warnings(
            rows_for(
                {(64, True): {3e-3: 1, 1e-2: 1, 3e-2: 1}},
                diverged={(64, True, x) for x in (3e-3, 1e-2, 3e-2)},
            )
        )
        == []
    )


def test_swept_fields_that_results_csv_keeps_as_outcomes_split_groups():
    """A sweep over the token budget: results.csv has `tokens` only as an outcome, so the
    runner passes each run's swept values; the two budgets are judged apart."""
    small = rows_for({(64, True): {3e-3: 1.0, 1e-2: 1.5, 3e-2: 2.0}})  # best: the smallest LR
    large = rows_for({(64, True): {3e-3: 0.9, 1e-2: 0.2, 3e-2: 0.3}})  # best: inside
    for r in large:
        r["run_id"] += "-big"
    rows = small + large
    assert edge_warnings(rows) == []  # pooled, the two budgets hide the problem (best 1e-2)
    swept = {r["run_id"]: {"tokens": 2000 if r["run_id"].endswith("-big") else 1000} for r in rows}
    assert edge_warnings(rows, swept=swept) == [
        "warning: best lr for tokens=1000 is 3e-3, the smallest in the grid (3e-3 .. 3e-2): "
        "the optimum may lie outside it"
    ]


def test_a_run_bracketing_added_in_another_shard_joins_its_cell():
    """A row of no point of this invocation (LR bracketing's, added by another shard) takes the
    swept fields from its own row: the bracket at 1e-1 makes 3e-2 interior, no edge warning."""
    rows = rows_for({(64, True): {1e-2: 1.0, 3e-2: 0.5, 1e-1: 0.8}}, lrs=(1e-2, 3e-2, 1e-1))
    for r in rows:
        r["tokens"] = 1000
    swept = {r["run_id"]: {"tokens": 1000, "lr": r["lr"]} for r in rows if r["lr"] != 1e-1}
    (best,) = best_lrs(rows, swept=swept)
    assert (best.lr, best.grid) == (3e-2, (1e-2, 3e-2, 1e-1))
    assert edge_warnings(rows, swept=swept) == []


def test_swept_values_read_linked_and_prefixed_axes_from_configs():
    from spamlang.train.config import TrainConfig

    config = TrainConfig(
        preset="tiny",
        language="cycle",
        vocab_size=64,
        seq_len=32,
        tokens=4096,
        language_params={"k": 3},
    )
    assert swept_values([("a", config)], ["vocab_size,seq_len", "tokens", "param.k", "lr"]) == {
        "a": {"vocab_size": 64, "seq_len": 32, "tokens": 4096, "param.k": 3, "lr": config.lr}
    }


def _fake_training(config, out_dir, quiet=True):
    """A stand-in trainer: writes config.json and result.json, the loss 1 / lr (best: the
    largest LR)."""
    import json

    result = {"final_eval_loss": 1.0 / config.lr, "diverged": False}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(json.dumps(config.to_json()))
    (out_dir / "result.json").write_text(json.dumps(result))
    return result


def test_run_sweep_prints_the_warnings(tmp_path, monkeypatch, capsys):
    """The runner's summary ends with the warning lines; a stand-in trainer writes the runs."""
    from spamlang.sweep import Sweep, run_sweep
    from spamlang.train import run as train_run
    from spamlang.train.config import TrainConfig

    monkeypatch.setattr(train_run, "run_training", _fake_training)
    sweep = Sweep(
        "edge",
        TrainConfig(preset="tiny", vocab_size=16),
        {"vocab_size": [16, 32], "lr": [3e-3, 1e-2, 3e-2]},
    )
    run_sweep(sweep, tmp_path, quiet=True, vmap=False)
    assert capsys.readouterr().err.splitlines() == [
        f"warning: best lr for vocab_size={v} is 3e-2, the largest in the grid (3e-3 .. 3e-2): "
        "the optimum may lie outside it"
        for v in (16, 32)
    ]


def test_warnings_list_numeric_settings_in_numeric_order():
    # results.csv sorts run ids as text (V1024 before V256); the warnings sort V as a number.
    losses = {(v, True): {3e-3: 3.0, 1e-2: 2.0, 3e-2: 1.0} for v in (1024, 256, 4096, 64)}
    lines = edge_warnings(rows_for(losses))
    assert [line.split("vocab_size=")[1].split(" ")[0] for line in lines] == [
        "64",
        "256",
        "1024",
        "4096",
    ]


def test_cell_lines_write_settings_as_typed_and_lrs_as_run_ids():
    from spamlang.sweep.best_lr import cell_lines

    rows = []
    for b2 in (0.95, 0.999):
        for row in rows_for({(64, True): {3e-3: 3.0, 1e-2: 2.0, 3e-2: 2.5}}):
            rows.append({"b2": b2, **row, "run_id": f"{row['run_id']}-b2{b2}"})
    lines = cell_lines(rows)
    assert [line.split(":")[0] for line in lines] == ["b2=0.95", "b2=0.999"]
    assert "best lr 1e-2 of 3e-3 .. 3e-2" in lines[0]


def test_bracketing_of_another_shard_joins_its_cell_by_its_own_config(
    tmp_path, monkeypatch, capsys
):
    """Shard 0 brackets its cell (model.n_layers=1) upwards; shard 1's summary, gathering the
    whole directory, reads those runs' swept field from their config.json (results.csv calls
    it `n_layers`), so the cell is one line with its whole grid, not a second cell of None."""
    from spamlang.sweep import Sweep, run_sweep
    from spamlang.train import run as train_run
    from spamlang.train.config import TrainConfig

    monkeypatch.setattr(train_run, "run_training", _fake_training)
    sweep = Sweep(
        "depth",
        TrainConfig(preset="tiny", vocab_size=16),
        {"model.n_layers": [1, 2], "lr": [3e-3, 1e-2, 3e-2]},
    )
    run_sweep(sweep, tmp_path, (0, 2), quiet=True, vmap=False, bracket_lr=1)
    capsys.readouterr()
    run_sweep(sweep, tmp_path, (1, 2), quiet=True, vmap=False, bracket_lr=1)
    lines = capsys.readouterr().err.splitlines()
    warnings = [line for line in lines if line.startswith("warning:")]
    assert [w.split(" is ")[0] for w in warnings] == [
        f"warning: best lr for n_layers={n}, model.n_layers={n}" for n in (1, 2)
    ], lines
    assert all("is 1e-1, the largest in the grid (3e-3 .. 1e-1)" in w for w in warnings), lines


def test_the_law_the_heatmap_and_the_summary_pick_one_best_lr_past_a_diverged_run(tmp_path):
    """One rule (`spamlang.rundir.reading.best_over`): at 1e-2 one seed diverged (its loss still
    finite) and the other ended lowest of all; an LR with a diverged run never wins, so the law's
    cells, its forecast comparison, the heatmap and the sweep summary all pick 3e-3."""
    import _synthetic_law as synthetic  # tests/_synthetic_law.py

    from spamlang.law import cells
    from spamlang.law.forecast import compare
    from spamlang.plots import layout
    from spamlang.results import load

    one = {k: values[:1] for k, values in synthetic.GRID.items()}
    frame = synthetic.frame(noise=0.0, grid=one)
    best = frame.loc[frame["lr"] == 3e-3, "final_eval_loss"].min()
    at = (frame["lr"] == 1e-2).to_numpy()
    frame["diverged"] = at & (frame["seed"] == 0).to_numpy()
    frame.loc[at, "final_eval_loss"] = [50.0, best / 2]  # seed 0 diverged, seed 1 lowest
    frame.to_csv(tmp_path / "results.csv", index=False)
    table = load(tmp_path)
    runs = layout.group_points(layout.finished_runs(tmp_path))
    forecast = {"cell": "base", "predicted_loss": "1", "predicted_class": "partial"}
    picked = {
        "law": cells(table)["best_lr"].tolist(),
        "compare": [compare([forecast], table)[0]["best_lr"]],
        "heatmap": [p.best for p in layout.best_over(runs, "lr", "final_eval_loss")],
        "summary": [b.lr for b in best_lrs(table.to_dict("records"))],
    }
    assert picked == dict.fromkeys(picked, [3e-3])
