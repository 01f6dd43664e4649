"""spamlang.law's fit: the constants of runs drawn from a known law come back, each within its
standard error's reach; what the runs cannot tell is held, not guessed."""

from __future__ import annotations

import subprocess
import sys

import _synthetic_law as synthetic  # tests/_synthetic_law.py
import numpy as np
import pandas as pd
import pytest

from spamlang.errors import UserError
from spamlang.law import cells, classify, fit, leave_one_out, summary
from spamlang.law.formula import NAMES

# How many standard errors a recovered constant may sit from the truth (a 4-sigma miss in 9
# constants happens by chance about once in 1,800 fits).
SIGMAS = 4


def test_noiseless_runs_give_back_the_law_exactly():
    law = fit(synthetic.frame(noise=0.0, seeds=1))
    for name in NAMES:
        assert law.constants[name] == pytest.approx(synthetic.CONSTANTS[name], abs=1e-6)
    assert law.rms < 1e-6


@pytest.mark.parametrize("seed", [0, 1])
def test_noisy_runs_give_back_the_law_within_its_standard_errors(seed):
    law = fit(synthetic.frame(noise=0.05, seed=seed))
    for name in NAMES:
        error = law.errors[name]
        assert 0 < error < 0.1  # a measured, useful error on every constant
        assert abs(law.constants[name] - synthetic.CONSTANTS[name]) < SIGMAS * error, name
    assert law.unpinned() == ()
    # The residual is the noise of a seed mean, on the log(L + 0.01) scale (a bit below it).
    assert 0.3 * 0.05 / np.sqrt(2) < law.rms < 0.05


def test_a_term_the_cells_do_not_vary_is_held_at_zero_and_flagged():
    law = fit(synthetic.frame(noise=0.01, grid={"d_model": (32,), "weight_decay": (0.1,)}))
    assert law.errors["c_D"] is None and law.constants["c_D"] == 0
    assert law.errors["a_iD"] is None and law.constants["a_iD"] == 0  # 1 / D: one width too
    assert "a_iD    = +0  (not fitted: every cell had the same width)" in str(law)
    assert law.errors["c_wd"] is None and law.constants["c_wd"] == 0
    assert law.errors["a_wd"] is None and law.constants["a_wd"] == 0
    assert law.ranges["D"] == [32, 32] and law.covered["decayed"] == [True]
    assert "not fitted" in str(law)


def test_cells_are_the_best_lr_of_the_seed_means():
    frame = synthetic.frame(
        noise=0.1,
        seeds=3,
        grid={
            "vocab_size": (256,),
            "batch_size": (32,),
            "n": (16,),
            "b2": (0.99,),
            "d_model": (16,),
            "weight_decay": (0.1,),
            "n_layers": (2,),
        },
    )
    table = cells(frame)
    assert len(table) == 2  # tied and untied; lr and seed collapsed
    for tied, cell in zip(table["tie_embeddings"], table.to_dict("records")):
        runs = frame[frame["tie_embeddings"] == tied]
        means = runs.groupby("lr")["final_eval_loss"].mean()
        assert cell["loss"] == pytest.approx(means.min()) and cell["best_lr"] == means.idxmin()
        assert cell["seeds"] == 3


def test_a_diverged_seed_takes_its_lr_out_of_the_running():
    frame = synthetic.frame(
        noise=0.0,
        grid={
            "vocab_size": (256,),
            "batch_size": (32,),
            "n": (16,),
            "b2": (0.99,),
            "d_model": (16,),
            "tie_embeddings": (True,),
            "weight_decay": (0.1,),
            "n_layers": (2,),
        },
    )
    best = cells(frame)["best_lr"].item()
    frame.loc[(frame["lr"] == best) & (frame["seed"] == 0), "final_eval_loss"] = float("nan")
    assert cells(frame)["best_lr"].item() != best


def test_bad_frames_are_user_errors():
    frame = synthetic.frame(grid={"vocab_size": (256,), "n": (16,)})
    with pytest.raises(UserError, match="empty"):
        fit(frame.iloc[:0])
    with pytest.raises(UserError, match="final_eval_loss"):
        fit(frame.drop(columns="final_eval_loss"))
    with pytest.raises(UserError, match="scope"):
        fit(frame.assign(language="cycle"))
    with pytest.raises(UserError, match="more cells than constants"):
        fit(frame.iloc[:12])
    # A table without tying would fit tied runs as untied: refused, not defaulted.
    with pytest.raises(UserError, match="missing column.*tie_embeddings"):
        fit(frame.drop(columns="tie_embeddings"))
    with pytest.raises(UserError, match="missing column.*b2"):
        fit(frame.drop(columns=["b2", "adam_memory_steps"]))
    broken = frame.copy()
    broken.loc[3, "final_eval_loss"] = float("inf")
    with pytest.raises(UserError, match=f"{broken['run_id'][3]}: final_eval_loss is inf"):
        fit(broken)
    # Marked diverged, an infinite loss takes its LR out of the running, as NaN does.
    assert len(cells(broken.assign(diverged=[i == 3 for i in range(len(broken))]))) > 0


def test_runs_outside_the_scope_are_left_out_with_a_warning():
    frame = synthetic.frame(noise=0.0, seeds=1)
    other = frame.assign(language="cycle", final_eval_loss=0.0)
    with pytest.warns(UserWarning, match="outside the law's scope"):
        table = cells(__import__("pandas").concat([frame, other], ignore_index=True))
    assert len(table) == len(cells(frame))


def test_classify_splits_at_a_tenth_and_half_of_chance():
    V = 1024
    chance = np.log(V)
    assert classify(0.05 * chance, V) == "learned"
    assert classify(0.3 * chance, V) == "partial"
    assert classify(0.9 * chance, V) == "failed"


def test_leave_one_sweep_out_predicts_each_sweep_from_the_others():
    frame = synthetic.frame(noise=0.02, grid={"d_model": (16,), "weight_decay": (0.1,)})
    # Each half holds cells on both sides of the boundary: a half of only learned cells (b2
    # 0.99 and 0.999 alone) cannot tell the boundary's steepness from c, let alone s_R.
    odd = frame["b2"].isin([0.9, 0.99])
    sweeps = {"b2_0.9_0.99": frame[odd], "b2_0.95_0.999": frame[~odd]}
    table = leave_one_out(sweeps)
    assert set(table["sweep"]) == set(sweeps)
    assert len(table) == sum(len(cells(f)) for f in sweeps.values())
    per_sweep = summary(table).set_index("sweep")
    # The law is the truth here: every sweep is predicted to about the noise, and classified.
    assert (per_sweep["rms"] < 0.1).all() and (per_sweep["classified"] > 0.9).all()
    assert list(per_sweep.index)[-1] == "all" and per_sweep.loc["all", "cells"] == len(table)
    assert per_sweep.loc["all", "rms"] == pytest.approx((table["error"] ** 2).mean() ** 0.5)
    for c in ("learned", "partial", "failed"):  # and over each measured class's cells alone
        errors = table.loc[table["class_measured"] == c, "error"]
        expected = (errors**2).mean() ** 0.5 if len(errors) else np.nan
        assert per_sweep.loc["all", f"rms_{c}"] == pytest.approx(expected, nan_ok=True), c
    # M of the held-out sweep lies outside what the other saw, and the table says so.
    assert (table["extrapolation"].str.contains("M ")).any()
    with pytest.raises(UserError, match="at least 2"):
        leave_one_out({"one": frame})


# Its halves split b2 at 0.99, so a fold keeps no cell where D / V moves the boundary: c_DV is
# not pinned down there, and the fold says so (the warning is tested on its own below).
@pytest.mark.filterwarnings("ignore:fitted without")
def test_leave_one_sweep_out_never_fits_on_a_copy_of_a_held_out_cell():
    frame = synthetic.frame(noise=0.05, grid={"d_model": (16,), "weight_decay": (0.1,)})
    low, high = frame[frame["b2"] < 0.99], frame[frame["b2"] >= 0.99]
    # "copy" repeats every cell of "low" (other seeds' noise aside, the same cells to the law):
    # predicting "low" must use "high" alone, exactly as if "copy" were not there.
    copy = synthetic.frame(noise=0.05, seed=1, grid={"d_model": (16,), "weight_decay": (0.1,)})
    copy = copy[copy["b2"] < 0.99]
    with_copy = leave_one_out({"low": low, "high": high, "copy": copy})
    without = leave_one_out({"low": low, "high": high})
    got = with_copy[with_copy["sweep"] == "low"]["predicted"].to_numpy()
    np.testing.assert_allclose(got, without[without["sweep"] == "low"]["predicted"].to_numpy())


def test_importing_the_law_imports_no_jax():
    code = (
        "import sys, spamlang.law, spamlang.law.fitting, spamlang.law.law; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'jax'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_sweep_the_law_does_not_cover_is_left_out_of_a_fit_of_several():
    frame = synthetic.frame(noise=0.02, grid={"d_model": (16,), "weight_decay": (0.1,)})
    sgd = frame.assign(optimizer="sgd")
    with pytest.warns(UserWarning, match="1 of 2 sweeps have no cell"):
        law = fit([frame, sgd], sources=["adam", "sgd"])
    assert law.sources == ["adam"] and law.cells == len(cells(frame))
    with pytest.raises(UserError, match="no run the law covers"):
        fit([sgd, sgd])


def test_runs_with_a_head_control_are_left_out_of_the_cells():
    """A head b2 0.999 run at b2 0.95 is not a b2 0.95 cell: fitted as one, it would teach the
    law that b2 0.95 learns (`head_remedy` has such runs beside its AdamW arm)."""
    frame = synthetic.frame(noise=0.02, grid={"d_model": (16,), "weight_decay": (0.1,)})
    other_b2 = np.where(frame["b2"] == 0.999, 0.95, 0.999)  # each run's head b2 off its b2
    remedy = frame.assign(head_b2=other_b2, final_eval_loss=1e-6)
    same = frame.assign(head_b2=frame["b2"], head_weight_decay=0.1)
    plain = cells(frame)
    with pytest.warns(UserWarning, match="outside the law's scope"):
        kept = cells(pd.concat([frame, remedy], ignore_index=True))
    pd.testing.assert_frame_equal(kept[plain.columns], plain)
    pd.testing.assert_frame_equal(cells(same)[plain.columns], plain)


def test_constants_the_cells_do_not_pin_down_are_named_in_a_warning():
    """Without weight decay, only learned cells far from the boundary (R = 0.5): nothing says
    where c lies for them, so c0 and c_wd trade off freely (on the committed sweeps, leaving
    out `memory_width_wd0` did this: c0 = +78 ± 2e4). The fit says so, and so does each
    leave-one-sweep-out fold that it happens to."""
    import warnings

    from spamlang.law.law import UNPINNED

    frame = synthetic.frame(noise=0.02, grid={"d_model": (16,), "n_layers": (2,)})
    bare = frame["weight_decay"] == 0
    far = frame[bare & (frame["vocab_size"] == 256) & (frame["batch_size"] == 512)]
    far = far[far["b2"] == 0.999]
    with pytest.warns(UserWarning, match=r"do not pin down c0 = \S+ ± \S+, c_wd = "):
        law = fit([frame[~bare], far])
    assert set(law.unpinned()) == {"c0", "c_wd"} and law.errors["c0"] > UNPINNED
    # Cells without decay on both sides of the boundary pin them down (other V: no copies).
    near = frame[bare & (frame["vocab_size"] >= 1024)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert fit([frame[~bare], far, near]).unpinned() == ()
        leave_one_out({"decay": frame[~bare], "far": far, "near": near})
    said = [str(w.message) for w in caught if "pin down" in str(w.message)]
    assert len(said) == 1 and said[0].startswith("fitted without near, the other cells do not")
