"""Orbax checkpoints of run directories: save a train state with a small JSON sidecar, and
restore the newest checkpoint that reads back, skipping damaged ones with a warning.

Each checkpoint step holds two items: `state` (the Trainer's state pytree, restored against
`Trainer.abstract_state()` so every array lands with its sharding) and `meta` (JSON: the
wall-clock time spent so far and the train metrics of steps not yet logged, so that a resumed
run writes exactly the metrics.jsonl of an uninterrupted one).

Saves are synchronous: the next train step donates the state's buffers, and a checkpoint is
written every few hundred steps, so the simplicity is worth more than the overlap.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any, Sequence

import orbax.checkpoint as ocp

from spamlang.errors import UserError


class RunCheckpoints:
    """The `checkpoints/` folder of one run directory, wrapping an orbax CheckpointManager."""

    def __init__(self, directory: str | Path, keep: int, *, read_only: bool = False):
        """read_only: never delete or clean up anything (for readers such as `load_run`)."""
        self.directory = Path(directory).absolute()
        self.read_only = read_only
        options = ocp.CheckpointManagerOptions(
            max_to_keep=keep,
            enable_async_checkpointing=False,
            # Leftovers of a save killed half-way are invisible to orbax; clean them up.
            cleanup_tmp_directories=not read_only,
            create=not read_only,
        )
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def steps(self) -> list[int]:
        """Steps with a (committed) checkpoint, ascending."""
        return sorted(self._manager.all_steps())

    def save(self, step: int, state: Any, meta: dict) -> None:
        """Write the checkpoint for `step`; a no-op when that step is already saved."""
        if step in self._manager.all_steps():
            return
        args = ocp.args.Composite(state=ocp.args.StandardSave(state), meta=ocp.args.JsonSave(meta))
        # force: we decide when to save; orbax's own policy would refuse a step below an
        # existing one, which happens after falling back past a damaged checkpoint.
        self._manager.save(step, args=args, force=True)
        self._manager.wait_until_finished()

    def restore(self, step: int, abstract_state: Any) -> tuple[Any, dict]:
        """Read back (state, meta) of `step`; raises whatever orbax raises on damaged files."""
        args = ocp.args.Composite(
            state=ocp.args.StandardRestore(abstract_state), meta=ocp.args.JsonRestore()
        )
        restored = self._manager.restore(step, args=args)
        return restored.state, dict(restored.meta or {})

    def delete_after(self, step: int) -> None:
        """Remove every checkpoint newer than `step` (damaged ones, or ones a resume recomputes)."""
        if self.read_only:
            return
        for s in self.steps():
            if s > step:
                try:
                    self._manager.delete(s)
                except Exception:  # a damaged step may not even read its own metadata
                    shutil.rmtree(self.directory / str(s), ignore_errors=True)
        self._manager.reload()

    def close(self) -> None:
        self._manager.wait_until_finished()
        self._manager.close()


def restore_latest(
    checkpoints: Sequence[RunCheckpoints], abstract_states: Sequence[Any]
) -> tuple[int, list[Any], list[dict]] | None:
    """Restore every member at the newest step they all have and all read back.

    Returns (step, states, metas), or None when the members share no checkpoint (start from
    scratch). A step that fails to read for any member is skipped with a warning. Checkpoints
    newer than the restored step are deleted, since the resumed run writes them again.
    Raises UserError when checkpoints exist but none of the shared ones can be read: that is
    more likely a code/config change than damage, and silently restarting would discard work.
    """
    common = set(checkpoints[0].steps())
    for c in checkpoints[1:]:
        common &= set(c.steps())
    errors = []
    for step in sorted(common, reverse=True):
        try:
            states, metas = [], []
            for c, abstract in zip(checkpoints, abstract_states):
                state, meta = c.restore(step, abstract)
                states.append(state)
                metas.append(meta)
        except Exception as e:  # orbax raises many types (ValueError, KeyError, OSError, ...)
            where = c.directory / str(step)
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            warnings.warn(
                f"checkpoint {where} is unreadable ({type(e).__name__}: {first[:200]}); "
                "falling back to the one before",
                stacklevel=2,
            )
            errors.append((where, first))
            continue
        for c in checkpoints:
            c.delete_after(step)
        return step, states, metas
    if errors:
        where, first = errors[0]
        raise UserError(
            f"no checkpoint can be restored (newest: {where}: {first[:200]}); "
            f"delete the checkpoints/ folder to restart the run from scratch"
        )
    for c in checkpoints:
        c.delete_after(0)
    return None
