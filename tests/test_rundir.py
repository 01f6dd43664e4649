"""`spamlang.rundir`: metrics.jsonl is cut back on resume, and only a torn last line may go."""

from __future__ import annotations

import json

import pytest

from spamlang import rundir
from spamlang.errors import UserError

ROWS = [{"kind": "train", "step": s, "loss": 1.0 / s} for s in (1, 2, 3)]


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))


def test_a_torn_last_line_is_cut_on_resume(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS) + '{"kind": "tr')
    log = rundir.MetricsLog(tmp_path, 2)
    log.close()
    assert [json.loads(line) for line in path.read_text().splitlines()] == ROWS[:2]


@pytest.mark.parametrize("bad", ['{"kind": "tr', "garbage", "[1, 2]"])
def test_a_bad_line_before_the_last_is_an_error_naming_it_and_nothing_is_deleted(tmp_path, bad):
    path = tmp_path / "metrics.jsonl"
    _write(path, [json.dumps(ROWS[0]), bad, json.dumps(ROWS[1]), json.dumps(ROWS[2])])
    before = path.read_bytes()
    with pytest.raises(UserError, match=rf"{path} line 2 is not a metrics row"):
        rundir.MetricsLog(tmp_path, 3)
    with pytest.raises(UserError, match="line 2"):
        rundir.MetricsLog(tmp_path, 1)  # cutting back does not hide it either
    assert path.read_bytes() == before
