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


def test_a_checkpoint_holding_part_of_the_state_is_an_older_layout_anything_else_is_not(tmp_path):
    """Fewer arrays than the current state, all of them its own: written by an older layout
    (one line, nothing deleted). Other arrays: the generic message of a code or config change."""
    ckpt = RunCheckpoints(tmp_path / "older" / "checkpoints", 2)
    ckpt.save(4, {"a": STATE["a"]}, {"final": False})
    with pytest.raises(UserError, match="older spamlang layout") as caught:
        ckpt.restore_latest(ABSTRACT)
    ckpt.close()
    assert "\n" not in str(caught.value) and caught.value.__cause__ is not None
    assert ckpt.steps() == [4]
    other = RunCheckpoints(tmp_path / "other" / "checkpoints", 2)
    other.save(4, {"a": STATE["a"], "c": STATE["b"]}, {"final": False})
    with pytest.raises(UserError, match="no checkpoint can be restored") as caught:
        other.restore_latest(ABSTRACT)
    other.close()
    assert "older spamlang layout" not in str(caught.value)


def _older_layout(state):
    """A train state as spamlang wrote it before b1, b2, eps and momentum were state arrays
    (only the learning rate injected) and before the state held a symbol's history
    (last_seen, first_seen, max_gap)."""
    import optax

    def lr_only(node):
        if isinstance(node, optax.InjectStatefulHyperparamsState):
            return node._replace(hyperparams={"learning_rate": node.hyperparams["learning_rate"]})
        if isinstance(node, tuple) and not hasattr(node, "_fields"):
            return tuple(lr_only(x) for x in node)
        return node

    old = {k: v for k, v in state.items() if k not in ("last_seen", "first_seen", "max_gap")}
    return {**old, "opt_state": lr_only(state["opt_state"])}


def test_a_run_checkpointed_by_an_older_layout_is_one_line_saying_what_to_do(tmp_path):
    """Resuming (`restore_latest`) and reading (`load_run`) an older run's checkpoint: one
    UserError naming the older layout, that result.json is still read, and both ways out."""
    from spamlang import rundir
    from spamlang.rundir.checkpoint import older_layout_message
    from spamlang.train.config import TrainConfig
    from spamlang.train.run import load_run
    from spamlang.train.step import Program

    config = TrainConfig(vocab_size=16, seq_len=2, batch_size=8, tokens=8 * 2 * 6, b2=0.99)
    program = Program(config)
    run = rundir.prepare(rundir.make_dir(tmp_path / "run"), config, write=True)
    ckpt = RunCheckpoints(run / "checkpoints", 2)
    ckpt.save(5, _older_layout(program.init_member(0, 3e-2)), {"final": True})
    message = older_layout_message(run.absolute() / "checkpoints")
    for attempt in (lambda: ckpt.restore_latest(program.abstract_state()), lambda: load_run(run)):
        with pytest.raises(UserError) as caught:
            attempt()
        assert str(caught.value) == message
    ckpt.close()
    assert ckpt.steps() == [5]  # nothing deleted: the older version can still finish it
    assert "\n" not in message
    for words in ("b1, b2, eps and momentum", "last_seen, first_seen and max_gap", "result.json"):
        assert words in message
    assert "version that wrote" in message and "delete the checkpoints/ folder" in message
