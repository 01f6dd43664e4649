"""The member axis: K runs that share one compiled program carry their states stacked along a
leading axis, and every per-run function is mapped over it."""

from __future__ import annotations

import jax


def over_members(member_fn):
    """`member_fn` mapped over the leading member axis of its one argument: `jax.vmap`, except
    that one member is squeezed rather than batched. The two are the same function, but
    XLA:CPU keeps vmap's degenerate batch dimension in every dot, which slows a single run
    (benchmarks/README.md)."""
    batched = jax.vmap(member_fn)

    def fn(tree):
        if jax.tree.leaves(tree)[0].shape[0] != 1:
            return batched(tree)
        out = member_fn(jax.tree.map(lambda x: x[0], tree))
        return jax.tree.map(lambda x: x[None], out)

    return fn
