"""The member axis: K runs vmapped in one step equal their runs one by one (tiny shapes)."""

import jax
import numpy as np
import pytest
from _compare import assert_same_eval  # tests/_compare.py

from spamlang.errors import UserError
from spamlang.train.config import TrainConfig
from spamlang.train.run import check_groupable
from spamlang.train.step import program

STEPS = 24
BASE = TrainConfig(
    vocab_size=64,
    seq_len=16,
    batch_size=16,
    tokens=16 * 16 * STEPS,
    schedule="constant",
    warmup_frac=0.0,
    eval_sequences=24,
    model={"n_layers": 1},  # one layer: nothing here depends on depth, and it compiles faster
)
# Two healthy members with different lr AND seed, and one with an absurd LR that must diverge.
CONFIGS = [BASE.replace(lr=3e-3), BASE.replace(lr=1e-2, seed=1), BASE.replace(lr=1e4)]


def _train(prog, configs, steps):
    state = prog.init([c.seed for c in configs], [c.lr for c in configs])
    losses = []
    for _ in range(steps):
        state, metrics = prog.step(state)
        assert metrics["loss"].shape == (len(configs),)
        losses.append(metrics["loss"])
    return state, np.array(jax.device_get(losses))  # [steps, K]


@pytest.fixture(scope="module")
def group_run():
    prog = program(CONFIGS[0])
    return (prog, *_train(prog, CONFIGS, STEPS))


@pytest.mark.parametrize("i", [0, 1])
def test_members_equal_their_own_runs(group_run, i):
    prog, state, losses = group_run
    single, seq = _train(prog, [CONFIGS[i]], STEPS)
    np.testing.assert_allclose(losses[:, i], seq[:, 0], rtol=1e-5)
    assert seq[-1, 0] < 0.8 * seq[0, 0]  # it trained: the curves are not trivially equal
    # (No element-wise parameter check: on SpamLang every value vector is the same, so the
    # query/key gradients are pure rounding noise that Adam normalises to +-lr steps.)
    if i == 0:  # one evaluation is enough to check the vmapped eval against the single one
        ours, [theirs] = prog.evaluate(state)[i], prog.evaluate(single)
        assert_same_eval(ours, theirs, rel=1e-5)


def test_absurd_lr_member_diverges_alone(group_run):
    prog, state, losses = group_run
    assert np.asarray(state["diverged"]).tolist() == [False, False, True]
    at = int(state["diverged_step"][2])
    assert 0 < at < STEPS and np.asarray(state["diverged_step"])[:2].tolist() == [-1, -1]
    assert np.all(np.isfinite(losses[:, :2])) and losses[-1, 0] < losses[0, 0]
    member = prog.member(state, 2)
    assert int(member["step"]) == STEPS and bool(member["diverged"])


def test_member_and_stack_are_inverse(group_run):
    prog, state, _ = group_run
    members = [prog.member(state, i) for i in range(len(CONFIGS))]
    assert jax.tree.structure(members[0]) == jax.tree.structure(prog.abstract_state())
    back = prog.stack(members)
    for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(state)):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


def test_only_lr_and_seed_may_differ():
    check_groupable([BASE, BASE.replace(lr=1.0, seed=3)])
    with pytest.raises(UserError, match="vocab_size"):
        check_groupable([BASE, BASE.replace(vocab_size=128)])
    with pytest.raises(UserError, match="tie_embeddings"):
        check_groupable([BASE, BASE.replace(lr=2e-3), BASE.replace(tie_embeddings=True)])
    with pytest.raises(UserError, match="at least one"):
        check_groupable([])


def test_micro_batched_group_equals_its_runs():
    """The vmapped step scans micro-batches per member exactly as the single-run step does."""
    configs = [c.replace(micro_batch=4, tokens=16 * 16 * 6) for c in CONFIGS[:2]]
    prog = program(configs[0])
    assert prog.n_micro == 4
    _, grouped = _train(prog, configs, 6)
    for i, config in enumerate(configs):
        _, seq = _train(prog, [config], 6)
        np.testing.assert_allclose(grouped[:, i], seq[:, 0], rtol=1e-5)
