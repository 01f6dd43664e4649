"""`spamlang plot recency`: per-symbol loss against steps since last appearance, from fake run
directories written with numpy (nothing trained)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from spamlang.cli import main
from spamlang.plots.symbols import recency_figure
from spamlang.rundir.schema import SYMBOLS

STEPS = 50
VOCAB = 16


def write_run(root, name, *, lr=1e-2, seed=0, b2=0.95, loss=1.0, symbols=True, rng_seed=0):
    d = root / name
    d.mkdir(parents=True)
    config = dict(
        vocab_size=VOCAB,
        lr=lr,
        seed=seed,
        b2=b2,
        batch_size=4,
        optimizer="adamw",
        sampling="iid",
        tie_embeddings=False,
    )
    (d / "config.json").write_text(json.dumps(config))
    result = dict(final_eval_loss=loss, diverged=False, adam_memory_steps=1 / (1 - b2))
    (d / "result.json").write_text(json.dumps(result))
    rng = np.random.default_rng(rng_seed)
    last = rng.integers(1, STEPS + 1, VOCAB).astype(np.int32)
    last[0] = -1  # never shown
    if symbols:
        np.savez(
            d / SYMBOLS,
            loss=rng.uniform(0.01, 3, VOCAB).astype(np.float32),
            probability=np.full(VOCAB, 1 / VOCAB),
            appearances=np.where(last > 0, rng.integers(1, 20, VOCAB), 0).astype(np.int32),
            last_step=last,
            steps=np.int32(STEPS),
        )
    return d, last


def scatter(ax, gid):
    (collection,) = [c for c in ax.collections if c.get_gid() == gid]
    return collection.get_offsets()


def test_x_is_steps_since_last_appearance_never_shown_apart(tmp_path):
    run, last = write_run(tmp_path, "run")
    (ax,) = [a for a in recency_figure([run]).axes if a.get_label() != "<colorbar>"]
    shown = last >= 0
    np.testing.assert_array_equal(scatter(ax, "shown")[:, 0], STEPS - last[shown])
    assert len(scatter(ax, "never")) == int((~shown).sum())
    memory = [ln for ln in ax.lines if "Adam memory" in (ln.get_label() or "")]
    assert memory and memory[0].get_xdata()[0] == pytest.approx(1 / (1 - 0.95))


def test_best_lr_seed_zero_of_each_cell(tmp_path):
    sweep = tmp_path / "sweep"
    for lr, loss in ((1e-2, 2.0), (3e-2, 1.0)):  # 3e-2 is best
        for seed in (0, 1):
            write_run(
                sweep,
                f"lr{lr:g}-s{seed}",
                lr=lr,
                seed=seed,
                loss=loss + seed / 10,
                rng_seed=int(lr * 1e3) + seed,
            )
    _, want = write_run(tmp_path / "copy", "x", rng_seed=30)  # the best run's arrays
    (ax,) = [a for a in recency_figure([sweep]).axes if a.get_label() != "<colorbar>"]
    np.testing.assert_array_equal(scatter(ax, "shown")[:, 0], STEPS - want[want >= 0])


def test_runs_without_symbols_warn_once_and_none_exits_2(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    write_run(sweep, "a", b2=0.9)
    write_run(sweep, "b", b2=0.99, symbols=False)
    recency_figure([sweep])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(": b")

    bare = tmp_path / "bare"
    write_run(bare, "c", symbols=False)
    assert main(["plot", "recency", str(bare), "-o", str(tmp_path / "r.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and SYMBOLS in err[0]


def test_a_damaged_symbols_file_is_named_as_damaged_not_missing(tmp_path, capsys):
    """plot recency, a sweep's gather and a rerun of the run each say the file cannot be read
    (before: 'without symbols.npz', and nothing at all from the gather and the rerun)."""
    from spamlang.sweep.results_csv import gather

    sweep = tmp_path / "sweep"
    write_run(sweep, "a", b2=0.9)
    broken, _ = write_run(sweep, "b", b2=0.99)
    (broken / SYMBOLS).write_bytes((broken / SYMBOLS).read_bytes()[:100])  # cut short
    recency_figure([sweep])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot be read: b (" in err[0] and "without" not in err[0]
    gather(sweep)
    err = capsys.readouterr().err.strip().splitlines()
    assert [line for line in err if SYMBOLS in line and "b" in line and "cannot read" in line]


def test_help(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["plot", "recency", "--help"])
    assert stop.value.code == 0
    assert "steps since" in capsys.readouterr().out
