"""`spamlang.rundir.checkpoint`: verification fails closed, and pruning is the caller's."""

from __future__ import annotations

import json

import jax.numpy as jnp
import pytest

from spamlang.errors import UserError
from spamlang.rundir.checkpoint import OLDER_LAYOUT, RunCheckpoints

STATE = {"a": jnp.arange(3.0), "b": jnp.ones((2, 2), jnp.int32)}
ABSTRACT = {"a": jnp.zeros(3), "b": jnp.zeros((2, 2), jnp.int32)}


def _two_steps(tmp_path):
    ckpt = RunCheckpoints(tmp_path / "checkpoints", 2)
    ckpt.save(1, STATE, {"final": False})
    ckpt.save(2, {"a": STATE["a"] + 1, "b": STATE["b"]}, {"final": False})
    ckpt.close()
    return tmp_path / "checkpoints" / "2" / "meta" / "metadata"


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text.replace('"checksums"', '"checksumr"'),  # one bit of the record's key
        lambda text: text.replace("\"['a']\"", "\"['c']\""),  # one array's key
    ],
)
def test_a_damaged_checksum_record_counts_as_a_damaged_checkpoint(tmp_path, damage):
    meta = _two_steps(tmp_path)
    meta.write_text(damage(meta.read_text()))
    ckpt = RunCheckpoints(tmp_path / "checkpoints", 2)
    with pytest.warns(UserWarning, match=r"checkpoints/2 is unreadable .*checksum record"):
        step, state, _ = ckpt.restore_latest(ABSTRACT)
    ckpt.close()
    assert step == 1 and jnp.array_equal(state["a"], STATE["a"])


def test_only_an_explicit_older_layout_restores_without_checksums(tmp_path):
    meta = _two_steps(tmp_path)
    data = json.loads(meta.read_text())
    del data["checksums"]
    for path in (meta, tmp_path / "checkpoints" / "1" / "meta" / "metadata"):
        path.write_text(json.dumps(data))
    ckpt = RunCheckpoints(tmp_path / "checkpoints", 2)
    with pytest.raises(UserError, match="no checkpoint can be restored .*no checksum record"):
        ckpt.restore_latest(ABSTRACT)
    meta.write_text(json.dumps({**data, "layout": OLDER_LAYOUT}))
    assert ckpt.restore_latest(ABSTRACT)[0] == 2
    ckpt.close()


def test_saves_keep_every_step_until_pruned(tmp_path):
    ckpt = RunCheckpoints(tmp_path / "checkpoints", 1)
    for step in (1, 2, 3):
        ckpt.save(step, STATE, {})
    assert ckpt.steps() == [1, 2, 3]
    ckpt.prune()
    assert ckpt.steps() == [3]
    ckpt.close()
