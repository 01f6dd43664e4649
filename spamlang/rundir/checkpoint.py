"""Orbax checkpoints of one run directory: a member's state plus a small JSON meta, and the
newest checkpoint that reads back, skipping damaged ones with a warning.

Every array's checksum (computed on the device) is checked on restore; a mismatch is damage
like an unreadable step, and a meta without a checksum record is damaged unless it says it is
of the older, unchecked layout (`OLDER_LAYOUT`).
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import orbax.checkpoint as ocp

from spamlang.errors import UserError, describe, no_space

# A checkpoint's meta that states it was written without checksums (before they existed):
# `meta["layout"] == OLDER_LAYOUT`. Any other meta must carry a whole checksum record.
OLDER_LAYOUT = "unchecked"


class RunCheckpoints:
    """The `checkpoints/` folder of one run directory: orbax's CheckpointManager as it is."""

    def __init__(self, directory: str | Path, keep: int, *, read_only: bool = False):
        """read_only: never delete or clean up anything (for readers such as `load_run`)."""
        self.directory = Path(directory).absolute()
        self.read_only, self.keep = read_only, keep
        options = ocp.CheckpointManagerOptions(
            max_to_keep=None,
            # Synchronous: the next step donates the state's buffers. `prune` keeps `keep`.
            enable_async_checkpointing=False,
            # Leftovers of a save killed half-way are invisible to orbax; clean them up.
            cleanup_tmp_directories=not read_only,
            create=not read_only,
        )
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def steps(self) -> list[int]:
        """Steps with a committed checkpoint, ascending."""
        return sorted(self._manager.all_steps())

    def save(self, step: int, state: Any, meta: dict) -> None:
        """Write the checkpoint for `step`; a no-op when that step is already saved."""
        if step in self._manager.all_steps():
            return
        meta = {**meta, "checksums": checksums(state)}
        args = ocp.args.Composite(state=ocp.args.StandardSave(state), meta=ocp.args.JsonSave(meta))
        # force: we decide when to save; orbax's own policy would refuse a step below an
        # existing one, which happens after falling back past a damaged checkpoint.
        try:
            self._manager.save(step, args=args, force=True)
            self._manager.wait_until_finished()
        except Exception as e:
            if (full := no_space(self.directory / str(step), e)) is not None:
                raise full from e
            raise

    def prune(self) -> None:
        """Delete all but the newest `keep` checkpoints. Never called by a save: the loop prunes
        a group's members after all of them saved a step, so a kill between two members' saves
        leaves a step every member still has."""
        self._delete(self.steps()[: -self.keep or None])

    def meta(self, step: int) -> dict:
        """The meta of checkpoint `step` alone ({} when it does not read back)."""
        try:
            meta = self._manager.restore(
                step, args=ocp.args.Composite(meta=ocp.args.JsonRestore())
            ).meta
        except Exception:  # damaged: restore_latest says so when it gets there
            return {}
        return dict(meta) if isinstance(meta, dict) else {}

    def restore_latest(
        self, abstract_state: Any, *, at_most: int | None = None
    ) -> tuple[int, Any, dict] | None:
        """(step, state, meta) of the newest checkpoint that reads back, or None if none exist.
        `at_most`: newer steps are deleted like unreadable ones (a group member ahead of its
        partners). An unreadable step is deleted with all newer, with a warning once an older
        one reads back; none reading back is a UserError (likely a code or config change)."""
        failures: list[tuple[int, Exception]] = []
        if at_most is not None:  # retrained from there, so saved again
            self._delete([s for s in self.steps() if s > at_most])
        args = ocp.args.Composite(
            state=ocp.args.StandardRestore(abstract_state), meta=ocp.args.JsonRestore()
        )
        for step in reversed([s for s in self.steps() if at_most is None or s <= at_most]):
            try:
                restored = self._manager.restore(step, args=args)
            except Exception as e:  # orbax raises many types (ValueError, KeyError, ...)
                failures.append((step, e))
                continue
            if bad := _verify(restored.state, restored.meta):
                failures.append((step, ValueError(bad)))
                continue
            for bad, e in failures:
                warnings.warn(
                    f"checkpoint {self.directory / str(bad)} is unreadable "
                    f"({describe(e)}); falling back to the one before",
                    stacklevel=2,
                )
            self._delete([s for s in self.steps() if s > step])
            return step, restored.state, dict(restored.meta or {})
        if failures:
            step, e = failures[0]
            if self._older_layout(step, abstract_state):
                raise UserError(older_layout_message(self.directory)) from e
            raise UserError(
                f"no checkpoint can be restored (newest: {self.directory / str(step)}: "
                f"{describe(e)}); delete the checkpoints/ folder to restart the run from scratch"
            ) from e
        return None

    def _older_layout(self, step: int, abstract_state: Any) -> bool:
        """Whether checkpoint `step`'s state holds a strict subset of `abstract_state`'s arrays
        (by their paths): a train state of an older spamlang, which only ever added arrays."""
        try:
            saved = ocp.StandardCheckpointHandler().metadata(self.directory / str(step) / "state")
            have = set(ocp.tree.to_flat_dict(saved.tree, sep="."))
        except Exception:  # damaged beyond its metadata: not a layout question
            return False
        return have < set(ocp.tree.to_flat_dict(abstract_state, sep="."))

    def _delete(self, steps: list[int]) -> None:
        if self.read_only:
            return
        for s in steps:
            try:
                self._manager.delete(s)
            except Exception:  # a damaged step may not even read its own metadata
                shutil.rmtree(self.directory / str(s), ignore_errors=True)
        self._manager.reload()

    def close(self) -> None:
        self._manager.wait_until_finished()
        self._manager.close()


def older_layout_message(directory: Path) -> str:
    """The one line for checkpoints that this version's train state does not read back."""
    return (
        f"{directory} was written by an older spamlang layout (before b1, b2, eps and momentum "
        f"became per-member state arrays, and before the train state held last_seen, first_seen "
        f"and max_gap), which this version does not restore; a finished run (result.json) is still read, but to "
        f"resume or sample this one, finish it with the spamlang version that wrote it, or "
        f"delete the checkpoints/ folder to restart the run from scratch"
    )


def checksums(state: Any) -> dict[str, str]:
    """{array path: 8 hex digits} of every array of `state`, computed where the arrays live."""
    leaves = jax.tree_util.tree_flatten_with_path(state)[0]
    # One small program per shape and dtype, not one per state: a state's arrays share a few
    # shapes (every layer's, the moments'), so a new config reuses most of them, where a
    # program over the whole state is compiled again for each config (as long as its init).
    sums = jax.device_get([_fingerprint(x) for _, x in leaves])
    return {jax.tree_util.keystr(path): f"{int(s):08x}" for (path, _), s in zip(leaves, sums)}


@jax.jit
def _fingerprint(x: jax.Array) -> jax.Array:
    """sum(word_i * odd_i) mod 2^32 over the array's 32-bit words, with a distinct odd weight
    per position: a flipped bit changes the sum (2^k times an odd number is never 0 mod 2^32),
    a swap of two words does too, and integer sums are exact in any reduction order."""
    x = jnp.asarray(x)
    if x.dtype == jnp.bool_:
        x = x.astype(jnp.uint8)
    # 8- and 16-bit types (bfloat16, int8): their bits, widened
    unsigned = {1: jnp.uint8, 2: jnp.uint16, 4: jnp.uint32}[x.dtype.itemsize]
    flat = jax.lax.bitcast_convert_type(x, unsigned).astype(jnp.uint32).ravel()
    odd = jnp.arange(flat.size, dtype=jnp.uint32) * jnp.uint32(2654435761) + jnp.uint32(1) | 1
    return jnp.sum(flat * odd, dtype=jnp.uint32)


def _verify(state: Any, meta: Any) -> str | None:
    """Why `state` does not match the checksum record of its `meta`, or None when it does (or
    when the meta states the older, unchecked layout explicitly). Fails closed: no record, a
    record that is not {path: 8 hex digits}, or one naming other arrays is damage."""
    meta = meta if isinstance(meta, dict) else {}
    saved = meta.get("checksums")
    if "checksums" not in meta and meta.get("layout") == OLDER_LAYOUT:
        return None
    if saved is None:
        return (
            "it has no checksum record (a checkpoint written without one must say "
            f'"layout": "{OLDER_LAYOUT}" in its meta)'
        )
    if not isinstance(saved, dict) or not all(
        isinstance(v, str) and len(v) == 8 for v in saved.values()
    ):
        return "its checksum record is damaged"
    now = checksums(state)
    if set(saved) != set(now):
        odd = sorted(set(saved) ^ set(now))
        return f"its checksum record names other arrays ({', '.join(odd[:3])})"
    bad = [path for path, value in now.items() if saved[path] != value]
    return f"{len(bad)} array(s) fail their checksum ({', '.join(bad[:3])})" if bad else None
