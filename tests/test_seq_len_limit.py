"""A sequence longer than the model accepts is refused, never raised silently (the eval would
then decode thousands of tokens per sequence with nothing said)."""

import pytest

from spamlang.cli import main
from spamlang.errors import UserError
from spamlang.train import TrainConfig


def test_seq_len_beyond_the_presets_max_names_the_flag_to_raise_it():
    with pytest.raises(
        UserError,
        match=r"seq_len 4096 exceeds preset tiny's max_seq_len "
        r"\(2048\); raise it with --model max_seq_len=4096",
    ):
        TrainConfig(seq_len=4096, batch_size=1, tokens=4096)
    raised = TrainConfig(seq_len=4096, batch_size=1, tokens=4096, model={"max_seq_len": 4096})
    assert raised.model_config().max_seq_len == 4096
    # Within the preset's limit nothing changes: the preset's own max_seq_len is kept.
    assert TrainConfig(seq_len=64).model_config().max_seq_len == 2048


def test_the_cli_refuses_it_with_one_line_and_status_2(tmp_path, capsys):
    argv = ["train", "--seq-len", "4096", "--batch-size", "1", "--tokens", "4096", "--dry-run"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "--model max_seq_len=4096" in lines[0], err
