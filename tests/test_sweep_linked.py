"""Linked sweep axes: several fields set together ("vocab_size,seq_len": [[V, L], ...])."""

import json

import pytest

from spamlang.errors import UserError
from spamlang.results import extra_axes
from spamlang.sweep import Sweep, load_sweep_file
from spamlang.train.config import TrainConfig

BASE = TrainConfig(preset="tiny", vocab_size=64, seq_len=8, batch_size=4, tokens=4 * 8 * 10)


def test_a_linked_axis_sets_its_fields_together():
    sweep = Sweep(
        "cov",
        BASE,
        {
            "vocab_size,seq_len,batch_size": [[256, 64, 2], (4096, 4, 32)],
            "tie_embeddings": [True, False],
        },
    )
    points = [
        (rid, c.vocab_size, c.seq_len, c.batch_size, c.tie_embeddings) for rid, c in sweep.points()
    ]
    assert points == [
        ("V256-L64-B2-tied", 256, 64, 2, True),
        ("V256-L64-B2-untied", 256, 64, 2, False),
        ("V4096-L4-B32-tied", 4096, 4, 32, True),
        ("V4096-L4-B32-untied", 4096, 4, 32, False),
    ]
    # sweep.json keeps the axis as data; a JSON sweep file with it builds the same points
    data = json.loads(json.dumps(sweep.to_json()))
    assert data["axes"]["vocab_size,seq_len,batch_size"] == [[256, 64, 2], [4096, 4, 32]]


def test_a_linked_axis_in_a_json_sweep_file(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(
        json.dumps(
            {
                "name": "s",
                "base": BASE.to_json(),
                "axes": {"vocab_size,model.d_model": [[128, 16], [128, 32]]},
            }
        )
    )
    sweep, _, _ = load_sweep_file(path)
    assert [rid for rid, _ in sweep.points()] == ["V128-D16", "V128-D32"]
    (tmp_path / "sweep.json").write_text(json.dumps(sweep.to_json()))
    assert extra_axes(tmp_path) == []  # vocab_size and d_model are standard columns


@pytest.mark.parametrize(
    "axes, message",
    [
        ({"vocab_size,seq_len": [[256]]}, "each value must list 2 values"),
        ({"vocab_size,seq_len": [[256, 8]], "seq_len": [4]}, "seq_len set by more than one axis"),
        ({"vocab_size,vocab_size": [[256, 256]]}, "names a field twice"),
        ({"vocab_size,nope": [[256, 8]]}, "unknown axis 'nope'"),
        (
            {"vocab_size,seq_len": [[256, "eight"]]},
            "sweep 'bad': seq_len must be an integer, got 'eight'",
        ),
        ({"vocab_size,seq_len": [[256, 8], [256, 8]]}, "twice"),
    ],
)
def test_bad_linked_axes_are_user_errors(axes, message):
    with pytest.raises(UserError, match=message):
        Sweep("bad", BASE, axes)
