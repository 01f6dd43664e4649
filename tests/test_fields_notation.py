"""One notation for numbers (issue #22, item 9): every integer flag and field reads K/M/B counts
as `--tokens` does (K = 1,000), float fields read numeric text, and figures print counts so
that they read back; help that says what flags mean; a close flag suggested for a typo."""

from __future__ import annotations

import json

import pytest

from spamlang import notation
from spamlang.cli import main
from spamlang.errors import UserError
from spamlang.sweep.spec import Sweep
from spamlang.train.config import TrainConfig


def run_cli(argv, capsys) -> tuple[int, str, str]:
    """(status, stdout, stderr) of `spamlang ARGV`; argparse's own refusals exit with 2."""
    try:
        status = main(argv)
    except SystemExit as e:
        status = e.code
    out = capsys.readouterr()
    return status, out.out, out.err


def dry_run(tmp_path, capsys, *flags) -> dict:
    status, out, err = run_cli(["train", *flags, "--dry-run", "--out", str(tmp_path / "r")], capsys)
    assert status == 0, err
    return json.loads(out)


def test_every_integer_flag_reads_k_and_m(tmp_path, capsys):
    config = dry_run(
        tmp_path,
        capsys,
        "--vocab-size",
        "4K",
        "--tokens",
        "100K",
        "--batch-size",
        "1_024",
        "--eval-sequences",
        "1.5K",
    )
    # A vocabulary counts in binary as it is written (4K = 4,096), a token budget in decimal.
    assert (config["vocab_size"], config["tokens"], config["batch_size"]) == (4096, 100_000, 1024)
    assert config["eval_sequences"] == 1500
    status, out, err = run_cli(
        ["preview", "spam", "--vocab-size", "1K", "-n", "2", "--seq-len", "3"], capsys
    )
    assert status == 0 and out.startswith("# spam(vocab_size=1024)"), err
    assert len(out.strip().splitlines()) == 3


@pytest.mark.parametrize("value", ["1.5", "4Ki", "four"])
def test_a_bad_integer_flag_is_one_line_that_shows_the_notation(tmp_path, capsys, value):
    status, _, err = run_cli(
        ["train", "--batch-size", value, "--dry-run", "--out", str(tmp_path / "r")], capsys
    )
    assert status == 2
    assert err == (
        f"spamlang train: error: argument --batch-size: invalid int value: {value!r}; "
        "expected an integer such as 4096 or 4K (K/M/B = 1e3/1e6/1e9)\n"
    )
    status, _, err = run_cli(
        ["train", "--vocab-size", value, "--dry-run", "--out", str(tmp_path / "r")], capsys
    )
    assert status == 2 and "1,024" in err and "vocabulary" in err and len(err.splitlines()) == 1


def test_json_configs_read_numeric_text_for_every_number(tmp_path, capsys):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"lr": "3e-3", "vocab_size": "4K", "tokens": "100K"}))
    config = dry_run(tmp_path, capsys, "--config", str(good))
    assert (config["lr"], config["vocab_size"], config["tokens"]) == (3e-3, 4096, 100_000)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"lr": "fast"}))
    status, _, err = run_cli(
        ["train", "--config", str(bad), "--dry-run", "--out", str(tmp_path / "r")], capsys
    )
    assert (status, err) == (2, "spamlang train: error: lr must be a number, got 'fast'\n")


def test_fields_and_sweeps_read_the_same_text():
    assert TrainConfig(vocab_size="1K", lr="1e-2", seq_len=8, batch_size=2).vocab_size == 1024
    ((_, config),) = Sweep(
        "s", TrainConfig(seq_len=8, batch_size=2), {"vocab_size": ["2k"]}
    ).points()
    assert config.vocab_size == 2048  # a sweep's "2k" trained V2000 before
    assert TrainConfig(tokens="2K", seq_len=8, batch_size=2).tokens == 2000  # budgets: decimal
    with pytest.raises(UserError, match="vocab_size must be an integer"):
        TrainConfig(vocab_size="1B")  # no binary B
    with pytest.raises(UserError, match=r"^vocab_size must be an integer, got '1\.5K5'$"):
        TrainConfig(vocab_size="1.5K5")
    with pytest.raises(UserError, match=r"^lr must be finite, got 'nan'$"):
        TrainConfig(lr="nan")


def test_counts_print_so_that_they_read_back():
    counts = [
        0,
        7,
        64,
        999,
        1000,
        1024,
        1500,
        1550,
        4096,
        100_000,
        131_072,
        1_048_576,
        1_200_000,
        2_000_000,
        41_000_000,
        3_000_000_000,
    ]
    printed = [notation.format_count(n) for n in counts]
    assert printed[4:10] == ["1K", "1024", "1.5K", "1550", "4096", "100K"]
    assert all(notation.parse_int(text) == n for text, n in zip(printed, counts))
    assert notation.format_lr(0.005) == "5e-3" and notation.format_lr(2.5e-4) == "2.5e-4"


def test_train_help_means_something_to_a_user(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split()).replace("non- embedding", "non-embedding")
    assert "state array" not in text and "device->host" not in text
    assert "--vocab-size 32K is 32,768" in text  # the count notation, stated once
    assert "--tokens 2M is 2,000,000" in text
    assert "tiny (d_model 16, 2 layers, 7.76K non-embedding params)" in text
    assert "smollm2-106m (d_model 576, 30 layers, 106M non-embedding params)" in text
    assert "(default: 1e-3)" in text  # the LR default as LRs are written everywhere


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["train", "--tokenz", "5", "--out", "r"], "--tokens"),
        (["train", "--vocab-sise", "5", "--out", "r"], "--vocab-size"),
        (["plot", "heatmap", "d", "-o", "x.png", "--metirc", "a"], "--metric"),
        (["sample", "r", "--greddy"], "--greedy"),
    ],
)
def test_an_unknown_flag_suggests_the_closest(capsys, argv, flag):
    status, _, err = run_cli(argv, capsys)
    assert status == 2 and err.endswith(f" (did you mean {flag}?)\n") and err.count("\n") == 1
    status, _, err = run_cli(["train", "--zzz", "--out", "r"], capsys)
    assert status == 2 and "did you mean" not in err
