"""`--seq-len`: the same sweep at another length, for position-invariant languages only."""

from __future__ import annotations

from pathlib import Path

import pytest

from spamlang.cli.sweep_cmd import main as sweep_main
from spamlang.errors import UserError
from spamlang.sweep import Sweep, load_sweep_file
from spamlang.sweep.files import at_seq_len
from spamlang.train.config import TrainConfig

REPO = Path(__file__).resolve().parents[1]
BASE = TrainConfig(preset="tiny", vocab_size=64, seq_len=64, batch_size=8, tokens=8 * 64 * 25)


def test_paper_grid_at_length_2_keeps_every_batch_and_step_count():
    sweep, _, _ = load_sweep_file(REPO / "sweeps" / "paper_fig5.py")
    short = at_seq_len(sweep, 2)
    assert short.name == "paper_fig5-L2" and len(short.points()) == len(sweep.points()) == 80
    for (id_a, a), (id_b, b) in zip(sweep.points(), short.points()):
        assert id_a == id_b and b.seq_len == 2 and a.seq_len == 256
        assert (a.steps, a.batch_size, a.lr, a.vocab_size) == (
            b.steps,
            b.batch_size,
            b.lr,
            b.vocab_size,
        )
        assert a.updates_per_symbol == b.updates_per_symbol
    assert short.base.tokens == 2_500 * 64 * 2


def test_linked_token_budgets_are_scaled_per_point():
    sweep = Sweep(
        "s",
        BASE,
        {"batch_size,tokens": [[8, 8 * 64 * 10], [16, 16 * 64 * 30]], "lr": [1e-2]},
        bracket_lr=2,
    )
    short = at_seq_len(sweep, 4)
    assert [(c.batch_size, c.steps, c.seq_len) for _, c in short.points()] == [
        (8, 10, 4),
        (16, 30, 4),
    ]
    assert short.bracket_lr == 2


@pytest.mark.parametrize(
    "sweep, needle",
    [
        (
            Sweep("s", BASE.replace(language="cycle", language_params={"k": 3}), {"lr": [1e-2]}),
            "'cycle', whose positions differ",
        ),
        (Sweep("s", BASE, {"language": ["spam", "noisy-spam"]}), "'noisy-spam'"),
        (Sweep("s", BASE, {"seq_len": [16, 64]}), "varies seq_len itself"),
        # one budget over batch sizes that it does not split evenly: the step counts would change
        # (2,304 tokens: 4 steps of 8 x 64 and 3 of 12 x 64; at L = 2, 64 tokens give 2 of 12 x 2)
        (Sweep("s", BASE.replace(tokens=2304), {"batch_size": [8, 12]}), "from 3 to 2 steps"),
    ],
)
def test_refusals(sweep, needle):
    with pytest.raises(UserError, match=needle):
        at_seq_len(sweep, 2)


def test_zipf_spam_is_invariant_too():
    sweep = Sweep("s", BASE.replace(language="zipf-spam"), {"lr": [1e-2]})
    assert at_seq_len(sweep, 2).base.seq_len == 2


def test_flag_on_a_script_and_its_errors(tmp_path, capsys):
    sweep, _, _ = load_sweep_file(REPO / "sweeps" / "paper_fig5.py")
    assert sweep_main(sweep, ["--seq-len", "2", "--dry-run", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[:5] == ["V1024-lr1e-4-tied", "new", "0", "2500", "320,000"]
    assert sweep_main(sweep, ["--seq-len", "1", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--seq-len must be an integer >= 2" in err[0]
