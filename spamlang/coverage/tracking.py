"""The mechanism diagnostic: how each step moves a few symbols' rows along themselves.

For a tracked id s with row e_s, the step's applied update u_s (LR, decay and clipping
included) has the component <u_s, e_s> / |e_s|, to first order the change of the row's norm.
Summed over the steps with and without s, it says whether the pull-up when s occurs or the
push-down between its appearances wins (track.jsonl, `spamlang plot track`).
"""

from __future__ import annotations


def _tables(params, vocab_size: int) -> dict:  # {"embed": E, "head": W (untied)}
    import jax
    import jax.numpy as jnp

    from spamlang.optim import _path_name

    found = {}
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        name = _path_name(path)
        if jnp.ndim(leaf) != 2 or leaf.shape[0] != vocab_size:
            continue
        for table in ("embed", "head"):
            if name.startswith(table) and table not in found:
                found[table] = leaf
    return found


def row_updates(old_params, new_params, ids: list[int], vocab_size: int) -> dict:
    """{"track_embed", "track_head" (untied)}: each tracked row's update along its own direction."""
    import jax.numpy as jnp

    idx = jnp.asarray(ids)
    old, new = _tables(old_params, vocab_size), _tables(new_params, vocab_size)
    out = {}
    for table, before in old.items():
        rows_kxD = before[idx].astype(jnp.float32)
        delta_kxD = new[table][idx].astype(jnp.float32) - rows_kxD
        norm_k = jnp.linalg.norm(rows_kxD, axis=-1)
        out[f"track_{table}"] = jnp.sum(delta_kxD * rows_kxD, axis=-1) / jnp.maximum(norm_k, 1e-30)
    return out
