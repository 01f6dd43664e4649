"""The run loop: run directory contents, exact resume, skip, divergence, groups, load_run."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
from pathlib import Path

import pytest

from spamlang.coverage.symbols import RESULT_KEYS as SYMBOL_KEYS
from spamlang.errors import UserError
from spamlang.perf import cpu_model
from spamlang.rundir.lock import hold_run_dirs
from spamlang.rundir.schema import COVERAGE_COLUMNS as COVERAGE_KEYS
from spamlang.rundir.schema import HELDOUT_COLUMNS as HOLDOUT_KEYS
from spamlang.rundir.schema import RESULT_COLUMNS, RESULT_EXTRAS
from spamlang.train import Interrupted, TrainConfig, load_run, run_group, run_training

TIMING = ("tokens_per_s", "mfu", "wall_seconds")
RESULT_KEYS = {
    "final_train_loss",
    "final_eval_loss",
    "eval_method",
    "loss_above_floor",
    "optimal_loss",
    "repetition_accuracy",
    "eval_accuracy",
    "diverged",
    "diverged_step",
    "steps",
    "tokens",
    "tokens_per_s",
    "wall_seconds",
    "cpu",
    "cores",
    *COVERAGE_KEYS,
    "kernel_fraction",
    "projected_cosine",
    "head_rank",
    *HOLDOUT_KEYS,
    *SYMBOL_KEYS,
    "symbol_history",  # every evaluation's symbols binned by their history (coverage.history)
    "target_buckets",  # a corpus run's val loss by each token's fate (spamlang.corpus.buckets)
    "corpus",  # a corpus run's corpus: name, tokens, epochs, the val unigram loss
}
# 60 steps; logs every 5, checkpoints at 20/40 and the end (keep 2: 40 and 60). A constant
# schedule without warmup makes the compiled step independent of the step count, so the
# longer runs of test_cli_train reuse these executables from the compilation cache.
CFG = TrainConfig(
    vocab_size=32,
    seq_len=16,
    batch_size=8,
    tokens=8 * 16 * 60,
    lr=3e-3,
    schedule="constant",
    warmup_frac=0.0,
    log_every=5,
    checkpoint_every=20,
    eval_sequences=16,
    model={"n_layers": 1},  # one layer: nothing here depends on depth, and it compiles faster
)
ABSURD_LR = 1e6


@pytest.fixture(scope="module", autouse=True)
def no_peak_measurement():
    """MFU needs a matmul peak; a fixed one skips a few seconds of measuring (conftest.py
    already shares compiled programs between the runs through a compilation cache)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPAMLANG_PEAK_FLOPS", "1e11")
        yield


def rows(run_dir, *, timing=False):
    out = [json.loads(line) for line in (Path(run_dir) / "metrics.jsonl").read_text().splitlines()]
    return out if timing else [{k: v for k, v in r.items() if k not in TIMING} for r in out]


def numbers(result):
    return {k: v for k, v in result.items() if k not in TIMING}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted run that the other tests compare against."""
    out = tmp_path_factory.mktemp("runs") / "ref"
    return out, run_training(CFG, out, quiet=True)


def copy_unfinished(src, dst):
    """A copy of a finished run dir that looks like a crash after its final checkpoint."""
    shutil.copytree(src, dst)
    (dst / "result.json").unlink()
    return dst


def test_run_directory_contract(reference):
    out, result = reference
    assert sorted(p.name for p in out.iterdir()) == [
        "checkpoints",
        "config.json",
        "metrics.jsonl",
        "result.json",
        "symbol_evals.jsonl",
        "symbols.npz",
    ]
    assert json.loads((out / "config.json").read_text()) == CFG.to_json()
    assert json.loads((out / "result.json").read_text()) == result
    assert set(result) == RESULT_KEYS == {*RESULT_COLUMNS, *RESULT_EXTRAS}  # the one contract
    assert sorted(int(p.name) for p in (out / "checkpoints").iterdir()) == [40, 60]
    train = [r for r in rows(out, timing=True) if r["kind"] == "train"]
    evals = [r for r in rows(out) if r["kind"] == "eval"]
    assert [r["step"] for r in train] == list(range(5, 61, 5))
    assert all(r["tokens"] == r["step"] * 128 for r in train)
    assert {"loss", "lr", "grad_norm", "tokens_per_s", "mfu", "accuracy"} <= set(train[-1])
    assert train[-1]["tokens_per_s"] > 0 and 0 < train[-1]["mfu"]
    assert [r["step"] for r in evals] == [60]  # eval_every=0: only at the end
    assert result["final_eval_loss"] == evals[0]["eval_loss"]
    assert result["loss_above_floor"] == evals[0]["loss_above_floor"]
    assert {k: result[k] for k in COVERAGE_KEYS} == {k: evals[0][k] for k in COVERAGE_KEYS}
    assert result["updates_per_symbol"] == 60 * 8 / 32 == CFG.updates_per_symbol
    # A symbol returns every V / B steps; AdamW's second moment remembers 1 / (1 - b2).
    assert result["symbol_return_steps"] == 32 / 8
    assert result["adam_memory_steps"] == pytest.approx(1 / (1 - CFG.b2))
    assert result["kernel_fraction"] is None  # no diag_every: not measured
    # final train loss: mean of the last 10% (here 2 of 12) of the logged losses
    assert result["final_train_loss"] == pytest.approx((train[-1]["loss"] + train[-2]["loss"]) / 2)
    assert result["steps"] == 60 and result["tokens"] == 60 * 128
    assert result["diverged"] is False and result["diverged_step"] is None
    assert result["final_train_loss"] < math.log(32) - 0.5  # it learned something
    assert result["wall_seconds"] > 0 and result["tokens_per_s"] > 0
    # ... and where they were measured, so that a timing read elsewhere says so
    assert (result["cpu"], result["cores"]) == (cpu_model(), os.cpu_count())


def test_interrupted_run_resumes_exactly(reference, tmp_path):
    out = tmp_path / "run"
    # 37 is not a log step: the loop stops at the next one, 40, with every row written, so
    # a checkpoint never holds unlogged metrics.
    with pytest.raises(Interrupted) as info:
        run_training(CFG, out, quiet=True, stop_after_step=37)
    assert info.value.step == 40 and info.value.exit_status == 130
    assert not (out / "result.json").exists()
    assert 40 in [int(p.name) for p in (out / "checkpoints").iterdir()]
    assert max(r["step"] for r in rows(out)) == 40
    result = run_training(CFG, out, quiet=True)
    assert rows(out) == rows(reference[0])
    assert numbers(result) == numbers(reference[1])


def test_corrupt_latest_checkpoint_falls_back(reference, tmp_path):
    # Also a crash after logging up to 60: the lines past the step-40 checkpoint are dropped
    # and written again, once.
    out = copy_unfinished(reference[0], tmp_path / "run")
    for f in (out / "checkpoints" / "60").rglob("*"):
        if f.is_file():
            f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    with pytest.warns(UserWarning, match="unreadable"):
        result = run_training(CFG, out, quiet=True)
    assert rows(out) == rows(reference[0])
    assert numbers(result) == numbers(reference[1])


def test_crash_before_result_json_finishes_without_new_rows(reference, tmp_path):
    out = copy_unfinished(reference[0], tmp_path / "run")
    result = run_training(CFG, out, quiet=True)
    assert rows(out) == rows(reference[0])
    assert numbers(result) == numbers(reference[1])


def test_finished_run_is_returned_without_training(reference):
    out, result = reference
    before = (out / "metrics.jsonl").stat().st_mtime_ns
    assert run_training(CFG, out, quiet=True) == result
    assert (out / "metrics.jsonl").stat().st_mtime_ns == before
    # ... and without its lock: held here (a second open() of the lock file conflicts as
    # another process's would), a finished run is still returned.
    with hold_run_dirs([out]):
        assert run_training(CFG, out, quiet=True) == result


def test_different_config_is_refused_naming_the_field(reference):
    with pytest.raises(UserError, match=r"lr: 0\.003 -> 0\.01"):
        run_training(CFG.replace(lr=1e-2), reference[0], quiet=True)
    # Eight fields differ: six with their values, the other two by name.
    changed = CFG.replace(
        lr=1e-2, seed=3, b1=0.8, b2=0.9, eps=1e-6, grad_clip=2.0, weight_decay=0.0, warmup_frac=0.1
    )
    with pytest.raises(UserError, match=r"; and 2 more: warmup_frac, weight_decay\); choose"):
        run_training(changed, reference[0], quiet=True)


def test_unwritable_out_is_a_user_error(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="cannot create run directory"):
        run_training(CFG, tmp_path / "file" / "run", quiet=True)

    def read_only(*args, **kwargs):  # chmod cannot stop root, who runs these tests in CI
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("spamlang.rundir.tempfile.mkstemp", read_only)
    with pytest.raises(UserError, match="cannot write to run directory .*Permission denied"):
        run_training(CFG, tmp_path / "ro", quiet=True)


def test_divergence_is_a_result(tmp_path):
    out = tmp_path / "run"
    result = run_training(CFG.replace(lr=ABSURD_LR), out, quiet=True)
    assert result["diverged"] is True
    at = result["diverged_step"]
    assert isinstance(at, int) and 1 <= at < 60
    # steps and tokens count what trained, up to the diverging batch ...
    assert result["steps"] == at and result["tokens"] == at * CFG.tokens_per_step
    # ... though the run stopped at the first log after it
    train = [r for r in rows(out) if r["kind"] == "train"]
    assert at <= train[-1]["step"] < at + CFG.log_every
    assert json.loads((out / "result.json").read_text()) == result


def test_group_matches_sequential_runs_and_resumes(reference, tmp_path):
    configs = [CFG, CFG.replace(lr=ABSURD_LR, seed=1)]
    dirs = [tmp_path / "a", tmp_path / "b"]
    with pytest.raises(Interrupted):
        run_group(configs, dirs, quiet=True, stop_after_step=23)
    # the diverging member stopped alone (at its first log), with its own result
    diverged = json.loads((dirs[1] / "result.json").read_text())
    assert diverged["diverged"] is True and diverged["steps"] == diverged["diverged_step"] <= 5
    assert [r["step"] for r in rows(dirs[1]) if r["kind"] == "train"] == [5]
    # the other resumes from its checkpoint (alone now: finished members are skipped)
    results = run_group(configs, dirs, quiet=True)
    assert results[1] == diverged
    assert results[0]["diverged"] is False and results[0]["steps"] == 60
    ref_rows, got_rows = rows(reference[0]), rows(dirs[0])
    assert [(r["kind"], r["step"]) for r in got_rows] == [(r["kind"], r["step"]) for r in ref_rows]
    for got, ref in zip(got_rows, ref_rows):
        for key, value in ref.items():
            if isinstance(value, float):
                assert got[key] == pytest.approx(value, rel=1e-5, abs=1e-6), (ref["step"], key)
    for key in ("final_train_loss", "final_eval_loss", "repetition_accuracy"):
        assert results[0][key] == pytest.approx(reference[1][key], rel=1e-5)
    assert json.loads((dirs[0] / "config.json").read_text()) == CFG.to_json()
    assert run_group(configs, dirs, quiet=True) == results


def _assert_rows_match(got_dir, ref_dir):
    ref_rows, got_rows = rows(ref_dir), rows(got_dir)
    assert [(r["kind"], r["step"]) for r in got_rows] == [(r["kind"], r["step"]) for r in ref_rows]
    for got, ref in zip(got_rows, ref_rows):
        for key, value in ref.items():
            if isinstance(value, float):
                assert got[key] == pytest.approx(value, rel=1e-5, abs=1e-6), (ref["step"], key)


def test_group_resume_keeps_every_members_work(tmp_path):
    """Members at different steps and a member added later resume without losing work.

    lr 3e-3 and 1e-2 stop at the log step 25, lr 1e-2 goes on alone to step 30, and lr 5e-3
    is new: each of the three starting steps (0, 25, 30) trains as its own subgroup to the
    end. Every member ends equal to an uninterrupted group, and the old members' rows are
    untouched.
    """
    lrs = (3e-3, 1e-2, 5e-3)
    configs = [CFG.replace(lr=lr, seed=i) for i, lr in enumerate(lrs)]
    ref_dirs = [tmp_path / f"ref{i}" for i in range(3)]
    ref = run_group(configs, ref_dirs, quiet=True)
    dirs = [tmp_path / f"run{i}" for i in range(3)]
    with pytest.raises(Interrupted):
        run_group(configs[:2], dirs[:2], quiet=True, stop_after_step=23)
    with pytest.raises(Interrupted):
        run_training(configs[1], dirs[1], quiet=True, stop_after_step=30)
    before = [(d / "metrics.jsonl").read_text() for d in dirs[:2]]
    results = run_group(configs, dirs, quiet=True)
    for d, text in zip(dirs[:2], before):
        # earlier rows kept as written (a retrained row would differ in its timing fields)
        assert (d / "metrics.jsonl").read_text().startswith(text)
    for i in range(3):
        _assert_rows_match(dirs[i], ref_dirs[i])
        for key in ("final_train_loss", "final_eval_loss", "repetition_accuracy"):
            assert results[i][key] == pytest.approx(ref[i][key], rel=1e-5), (i, key)


def test_diag_rows(tmp_path):
    out = tmp_path / "run"
    # A crash before the first checkpoint restarts from scratch: the row at init stays single.
    with pytest.raises(Interrupted):
        run_training(CFG.replace(diag_every=30), out, quiet=True, stop_after_step=5)
    shutil.rmtree(out / "checkpoints")
    run_training(CFG.replace(diag_every=30), out, quiet=True)
    diag = [r for r in rows(out) if r["kind"] == "diag"]
    assert [r["step"] for r in diag] == [0, 30, 60]  # at init, along training, at the end
    assert 0 <= diag[-1]["kernel_fraction"] <= 1 and "grad_norm/head" in diag[-1]


@pytest.mark.filterwarnings("ignore:Sharding info not provided")
def test_load_run(reference, tmp_path):
    import jax
    import numpy as np
    import orbax.checkpoint as ocp
    from flax import nnx

    with hold_run_dirs([reference[0]]):  # reading a run needs no lock (it may be training)
        config, model = load_run(reference[0])
    assert config == CFG
    # the parameters are those of the newest checkpoint (step 60)
    saved = ocp.PyTreeCheckpointer().restore(reference[0] / "checkpoints" / "60" / "state")
    loaded = jax.tree.leaves(nnx.state(model, nnx.Param))
    assert len(loaded) == len(jax.tree.leaves(saved["params"])) > 0
    for a, b in zip(loaded, jax.tree.leaves(saved["params"])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(UserError, match="does not exist"):
        load_run(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no config.json"):
        load_run(tmp_path / "empty")


def test_signals_become_a_flag_then_act_as_usual():
    from spamlang.train.run import stop_requests

    before = signal.getsignal(signal.SIGTERM)
    with stop_requests() as received:
        os.kill(os.getpid(), signal.SIGTERM)
        assert received == [signal.SIGTERM]
        assert signal.getsignal(signal.SIGTERM) is before  # a second one is not caught
    assert signal.getsignal(signal.SIGTERM) is before
    assert Interrupted(7, signal.SIGTERM).exit_status == 143
    assert Interrupted(7, signal.SIGINT).exit_status == 130


def test_mfu_divides_by_the_peak_of_the_runs_dtype(tmp_path, monkeypatch):
    """A bfloat16 run's MFU uses the bfloat16 peak, never the float32 one."""
    from spamlang.perf import KNOWN_PEAKS, flops_per_token, peak_flops

    monkeypatch.setenv("SPAMLANG_PEAK_FLOPS_BF16", "4e11")
    assert peak_flops("bfloat16") == 4e11 and peak_flops("float32") == 1e11
    config = CFG.replace(dtype="bfloat16", tokens=8 * 16 * 20, checkpoint_every=0)
    run_training(config, tmp_path / "bf16", quiet=True)
    train = [r for r in rows(tmp_path / "bf16", timing=True) if r["kind"] == "train" and r["mfu"]]
    per_token = flops_per_token(config.model_config(), config.seq_len)
    assert len(train) >= 3, train  # 4 log steps; only the first may lack a rate (the compile)
    for r in train:
        assert r["mfu"] == pytest.approx(r["tokens_per_s"] * per_token / 4e11, rel=1e-6)
    assert KNOWN_PEAKS["H100"]["bfloat16"] > KNOWN_PEAKS["H100"]["float32"]


def test_known_accelerators_use_their_datasheet_peak(monkeypatch):
    import jax

    from spamlang import perf

    class Device:
        device_kind = "NVIDIA H200"

    monkeypatch.delenv("SPAMLANG_PEAK_FLOPS", raising=False)
    monkeypatch.delenv("SPAMLANG_PEAK_FLOPS_BF16", raising=False)
    monkeypatch.setattr(jax, "devices", lambda *a: [Device()])
    assert perf.peak_flops("bfloat16") == perf.KNOWN_PEAKS["H200"]["bfloat16"]
    assert perf.peak_flops("float32") == perf.KNOWN_PEAKS["H200"]["float32"]


def test_a_run_written_before_a_config_field_existed_is_still_the_same_run(reference, tmp_path):
    """config.json without a field added later (kernels) reads with its default: the finished
    run is returned, not refused as a different config."""
    out = tmp_path / "older"
    shutil.copytree(reference[0], out)
    written = json.loads((out / "config.json").read_text())
    del written["kernels"]
    (out / "config.json").write_text(json.dumps(written))
    assert run_training(CFG, out, quiet=True) == reference[1]
    with pytest.raises(UserError, match="different config"):
        run_training(CFG.replace(kernels="xla"), out, quiet=True)


# Orbax's failed restore can leave a coroutine whose event loop has closed; Python reports it
# as unraisable when it is collected, at a moment that varies run to run.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_bit_flipped_checkpoint_is_unreadable_and_falls_back(reference, tmp_path):
    """64 bytes XORed in the middle of every data file of the newest checkpoint's state: either
    the store's decompression or the checksums saved beside the values catch it (which one
    depends on whether the bytes land in a compressed chunk), and the run resumes from the
    checkpoint before, ending as the uninterrupted run does. Every data file, not only the
    largest: the middle of one file can hold bytes that a restore never reads (a CI run saw
    no warning once)."""
    out = copy_unfinished(reference[0], tmp_path / "run")
    state = out / "checkpoints" / "60" / "state"
    files = [f for f in state.rglob("*") if f.is_file() and f.parent.name == "d"]
    assert files, sorted(p.relative_to(state) for p in state.rglob("*"))
    for f in files:
        data = bytearray(f.read_bytes())
        middle = len(data) // 2
        data[middle : middle + 64] = bytes(b ^ 0xFF for b in data[middle : middle + 64])
        f.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match=r"checkpoints/60 is unreadable "):
        result = run_training(CFG, out, quiet=True)
    assert rows(out) == rows(reference[0])
    assert numbers(result) == numbers(reference[1])


def test_readable_values_that_are_not_the_saved_ones_fail_their_checksum(reference, tmp_path):
    """The silent case the checksums exist for: the newest checkpoint's state replaced by the
    one before (every chunk decompresses, the values are wrong). The checksums say so and the
    run falls back to step 40, ending as the uninterrupted run does."""
    out = copy_unfinished(reference[0], tmp_path / "run")
    shutil.rmtree(out / "checkpoints" / "60" / "state")
    shutil.copytree(out / "checkpoints" / "40" / "state", out / "checkpoints" / "60" / "state")
    with pytest.warns(UserWarning, match=r"checkpoints/60 is unreadable .*fail their checksum"):
        result = run_training(CFG, out, quiet=True)
    assert rows(out) == rows(reference[0])
    assert numbers(result) == numbers(reference[1])
