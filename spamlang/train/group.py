"""Several learning rates (and seeds) in one program: K runs stacked and vmapped.

Runs that differ only in `lr` and `seed` share the model shape, data shape and schedule, so
their states stack on a leading K axis and `jax.vmap` of the single-run step trains them
together: every matmul is one batched launch instead of K small ones, which fills an
accelerator that one small model leaves idle. On CPU it does not pay: one `small` run already
keeps both cores of the development machine busy, and a vmapped group of 4 measured 0.9-1.0x
(`small`, V = 1,024) and 0.6x (`tiny`, V = 4,096) the throughput of the same runs one by one
(`benchmarks/bench_group.py`), so sweeps vmap only on accelerators by default
(`run_sweep(vmap=...)`, `--vmap`). The step is the same pure function `make_step_fn` that
`Trainer` jits, so each member computes what its sequential run computes (equal within float
rounding of the batched matmuls), and each member freezes on its own when it diverges while
the others keep training.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import nnx

from spamlang.errors import UserError
from spamlang.train.config import TrainConfig
from spamlang.train.step import State, Trainer, with_floor

_MAY_DIFFER = ("lr", "seed")


def check_groupable(configs: list[TrainConfig]) -> None:
    """UserError unless `configs` is non-empty and differs only in lr and seed."""
    if not configs:
        raise UserError("a run group needs at least one config")
    first = configs[0]
    for i, other in enumerate(configs[1:], start=1):
        for f in dataclasses.fields(TrainConfig):
            if f.name not in _MAY_DIFFER and getattr(first, f.name) != getattr(other, f.name):
                raise UserError(
                    f"configs in a run group may differ only in lr and seed; config {i} differs "
                    f"in {f.name} ({getattr(first, f.name)!r} vs {getattr(other, f.name)!r})")


class GroupTrainer:
    """K runs trained together; the `Trainer` interface with a leading K axis.

    State leaves and step metrics have a leading K axis; `evaluate` returns one dict per
    member; `member(state, i)` / `stack(states)` convert to and from single-run states (the
    structure `Trainer` uses), so each member can be checkpointed in its own run directory.
    """

    def __init__(self, configs: list[TrainConfig], mesh: jax.sharding.Mesh | None = None):
        configs = list(configs)
        check_groupable(configs)
        self.configs = configs
        self.size = len(configs)
        # Member 0 stands for all: everything but lr and seed is shared, and those two live
        # in the state (lr) or only enter the initial state (seed).
        self.base = Trainer(configs[0], mesh)
        self.mesh, self.replicated = self.base.mesh, self.base.replicated
        self.optimal_loss = self.base.optimal_loss
        self.member_flops_per_step = self.base.flops_per_step  # one member's FLOPs per step
        self.flops_per_step = self.base.flops_per_step * self.size  # the whole group's


    # ----- state ---------------------------------------------------------------------------
    def init_state(self) -> State:
        """Each member's step-0 state (from its own seed and lr), stacked."""
        return self.stack([self.base.init_state(seed=c.seed, lr=c.lr) for c in self.configs])

    def abstract_state(self) -> State:
        """Shapes/dtypes/shardings of the stacked state (leading K axis), for orbax restore."""
        return jax.tree.map(
            lambda s: jax.ShapeDtypeStruct((self.size, *s.shape), s.dtype, sharding=self.replicated),
            self.base.abstract_state())

    def member(self, state: State, i: int) -> State:
        """Member i's state, in the structure of a single `Trainer` state."""
        if not 0 <= i < self.size:
            raise IndexError(f"member {i} out of range for a group of {self.size}")
        return jax.tree.map(lambda x: x[i], state)

    def stack(self, states: list[State]) -> State:
        """Inverse of `member`: K single-run states -> one group state (replicated)."""
        if len(states) != self.size:
            raise UserError(f"expected {self.size} member states, got {len(states)}")
        stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
        return jax.device_put(stacked, self.replicated)

    def model(self, state: State, i: int = 0) -> nnx.Module:
        """Member i's model."""
        return self.base.model(self.member(state, i))

    # ----- step and evaluation -------------------------------------------------------------
    def step(self, state: State) -> tuple[State, dict]:
        """One step of every member; state donated; metrics are device arrays of shape [K]."""
        return self.base.program.group_step_jit(state, self.base._rest)

    def evaluate(self, state: State) -> list[dict[str, float]]:
        """Each member's eval metrics (the keys of `Trainer.evaluate`), in member order."""
        out = jax.device_get(self.base.program.group_eval_jit(state["params"], self.base._rest))
        return [with_floor({k: float(v[i]) for k, v in out.items()}, self.optimal_loss)
                for i in range(self.size)]
