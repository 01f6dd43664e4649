"""GroupTrainer: K runs vmapped in one program equal their sequential runs (tiny shapes)."""

import jax
import numpy as np
import pytest

from spamlang.errors import UserError
from spamlang.train.config import TrainConfig
from spamlang.train.group import GroupTrainer, check_groupable
from spamlang.train.step import Trainer

STEPS = 24
BASE = TrainConfig(vocab_size=64, seq_len=16, batch_size=16, tokens=16 * 16 * STEPS,
                   schedule="constant", warmup_frac=0.0, eval_sequences=24)
# Two healthy members with different lr AND seed, and one with an absurd LR that must diverge.
CONFIGS = [BASE.replace(lr=3e-3), BASE.replace(lr=1e-2, seed=1), BASE.replace(lr=1e4)]


@pytest.fixture(scope="module")
def group_run():
    group = GroupTrainer(CONFIGS)
    state = group.init_state()
    losses = []
    for _ in range(STEPS):
        state, metrics = group.step(state)
        assert metrics["loss"].shape == (len(CONFIGS),)
        losses.append(metrics["loss"])
    return group, state, np.array(jax.device_get(losses))  # [steps, K]


@pytest.fixture(scope="module")
def sequential():
    """The sequential Trainer of member 0; member 1 differs only in the state's lr and seed."""
    return Trainer(CONFIGS[0])


@pytest.mark.parametrize("i", [0, 1])
def test_members_equal_sequential_runs(group_run, sequential, i):
    group, state, losses = group_run
    trainer = sequential
    single = trainer.init_state(seed=CONFIGS[i].seed, lr=CONFIGS[i].lr)
    seq = []
    for _ in range(STEPS):
        single, metrics = trainer.step(single)
        seq.append(metrics["loss"])
    seq = np.array(jax.device_get(seq))
    np.testing.assert_allclose(losses[:, i], seq, rtol=1e-5)
    assert seq[-1] < 0.8 * seq[0]  # it trained: the curves are not trivially equal
    # (No element-wise parameter check: on SpamLang every value vector is the same, so the
    # query/key gradients are pure rounding noise that Adam normalises to +-lr steps.)
    if i == 0:  # one evaluation is enough to check the vmapped eval against the single one
        ours, theirs = group.evaluate(state)[i], trainer.evaluate(single)
        for key in theirs:
            assert ours[key] == pytest.approx(theirs[key], rel=1e-5, abs=1e-6), key


def test_absurd_lr_member_diverges_alone(group_run):
    group, state, losses = group_run
    diverged = np.asarray(state["diverged"])
    assert diverged.tolist() == [False, False, True]
    at = int(state["diverged_step"][2])
    assert 0 < at < STEPS and np.asarray(state["diverged_step"])[:2].tolist() == [-1, -1]
    assert np.all(np.isfinite(losses[:, :2])) and losses[-1, 0] < losses[0, 0]
    # The diverged member is frozen: its params are those it had when it diverged.
    member = group.member(state, 2)
    assert int(member["step"]) == STEPS and bool(member["diverged"])


def test_member_and_stack_are_inverse(group_run):
    group, state, _ = group_run
    members = [group.member(state, i) for i in range(group.size)]
    assert jax.tree.structure(members[0]) == jax.tree.structure(group.base.abstract_state())
    assert float(members[1]["lr"]) == pytest.approx(1e-2)
    back = group.stack(members)
    for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(state)):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    abstract = group.abstract_state()
    for a, b in zip(jax.tree.leaves(abstract), jax.tree.leaves(state)):
        assert a.shape == b.shape and a.dtype == b.dtype


def test_only_lr_and_seed_may_differ():
    check_groupable([BASE, BASE.replace(lr=1.0, seed=3)])
    with pytest.raises(UserError, match="vocab_size"):
        check_groupable([BASE, BASE.replace(vocab_size=128)])
    with pytest.raises(UserError, match="tie_embeddings"):
        GroupTrainer([BASE, BASE.replace(lr=2e-3), BASE.replace(tie_embeddings=True)])
    with pytest.raises(UserError, match="at least one"):
        GroupTrainer([])


def test_micro_batched_group_equals_sequential_runs():
    """The vmapped step scans micro-batches per member exactly as the single-run step does."""
    configs = [c.replace(micro_batch=4, tokens=16 * 16 * 6) for c in CONFIGS[:2]]
    group = GroupTrainer(configs)
    state = group.init_state()
    grouped = []
    for _ in range(6):
        state, metrics = group.step(state)
        grouped.append(metrics["loss"])
    grouped = np.array(jax.device_get(grouped))
    trainer = Trainer(configs[0])
    for i, config in enumerate(configs):
        single, seq = trainer.init_state(seed=config.seed, lr=config.lr), []
        for _ in range(6):
            single, metrics = trainer.step(single)
            seq.append(metrics["loss"])
        np.testing.assert_allclose(grouped[:, i], np.array(jax.device_get(seq)), rtol=1e-5)
