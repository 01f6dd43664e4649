"""`spamlang.perf`: the peak that MFU divides by, from SPAMLANG_PEAK_FLOPS(_BF16)."""

from __future__ import annotations

import pytest

from spamlang import perf
from spamlang.cli import main
from spamlang.cli.sweep_cmd import main as sweep_main
from spamlang.errors import UserError
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

TRAIN = [
    "train",
    "--vocab-size",
    "64",
    "--seq-len",
    "2",
    "--batch-size",
    "4",
    "--tokens",
    "16",
    "--eval-sequences",
    "8",
]
BAD = ["-5", "0", "nan", "inf", "garbage"]


@pytest.mark.parametrize("value", BAD)
def test_a_bad_peak_is_refused(monkeypatch, value):
    monkeypatch.setenv("SPAMLANG_PEAK_FLOPS", value)
    with pytest.raises(UserError, match="SPAMLANG_PEAK_FLOPS must be a positive number"):
        perf.peak_flops("float32")
    with pytest.raises(UserError):
        perf.check_peak_env()
    monkeypatch.setenv("SPAMLANG_PEAK_FLOPS", "2e11")
    assert perf.peak_flops("float32") == 2e11


@pytest.mark.parametrize("value", BAD)
def test_train_with_a_bad_peak_is_one_line_exit_2_and_no_directory(
    tmp_path, monkeypatch, capsys, value
):
    monkeypatch.setenv("SPAMLANG_PEAK_FLOPS", value)
    out = tmp_path / "run"
    assert main([*TRAIN, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "SPAMLANG_PEAK_FLOPS must be a positive number" in err[0], err
    assert not out.exists()


def test_sweep_with_a_bad_peak_leaves_no_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPAMLANG_PEAK_FLOPS_BF16", "-5")
    base = TrainConfig(vocab_size=64, seq_len=2, batch_size=4, tokens=16, eval_sequences=8)
    out = tmp_path / "sweep"
    assert sweep_main(Sweep("p", base, {"lr": [1e-3]}), ["--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "SPAMLANG_PEAK_FLOPS_BF16 must be a positive number" in err[0], err
    assert not out.exists()
