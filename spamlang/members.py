"""The member axis: K runs that share one compiled program carry their states stacked along a
leading axis, and every per-run function is mapped over it."""

from __future__ import annotations

import jax


def over_members(member_fn):
    """`member_fn` mapped over the leading member axis: `jax.vmap`, but one member squeezed (XLA:CPU
    keeps vmap's size-1 batch in every dot). Optional `shared` (whole) and `mapped` (sliced)
    args."""
    batched = jax.vmap(member_fn)

    def fn(tree, shared=None, mapped=None):
        extra = () if shared is None and mapped is None else (shared, mapped)
        if jax.tree.leaves(tree)[0].shape[0] != 1:
            if not extra:
                return batched(tree)
            return jax.vmap(member_fn, in_axes=(0, None, 0))(tree, *extra)
        one = jax.tree.map(lambda x: x[0], (tree, mapped))
        out = member_fn(one[0], shared, one[1]) if extra else member_fn(one[0])
        return jax.tree.map(lambda x: x[None], out)

    return fn
