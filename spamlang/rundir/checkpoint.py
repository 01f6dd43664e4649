"""Orbax checkpoints of one run directory: a member's state plus a small JSON sidecar, and
the newest checkpoint that reads back, skipping damaged ones with a warning.

Each checkpoint step holds `state` (one member's state, restored against
`Program.abstract_state()` so every array lands with its sharding) and `meta` (JSON: time
spent so far and the train metrics of steps not yet logged, so that a resumed run writes
exactly the metrics.jsonl of an uninterrupted one). Every run directory checkpoints on its
own, so the members of a vmapped group resume from their own steps.

Saves are synchronous: the next step donates the state's buffers, and a checkpoint is
written every few hundred steps, so the simplicity is worth more than the overlap.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

import orbax.checkpoint as ocp

from spamlang.errors import UserError, describe


class RunCheckpoints:
    """The `checkpoints/` folder of one run directory: orbax's CheckpointManager as it is."""

    def __init__(self, directory: str | Path, keep: int, *, read_only: bool = False):
        """read_only: never delete or clean up anything (for readers such as `load_run`)."""
        self.directory = Path(directory).absolute()
        self.read_only = read_only
        options = ocp.CheckpointManagerOptions(
            max_to_keep=keep, enable_async_checkpointing=False,
            # Leftovers of a save killed half-way are invisible to orbax; clean them up.
            cleanup_tmp_directories=not read_only, create=not read_only)
        self._manager = ocp.CheckpointManager(self.directory, options=options)

    def steps(self) -> list[int]:
        """Steps with a committed checkpoint, ascending."""
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

    def restore_latest(self, abstract_state: Any, legacy: tuple | None = None
                       ) -> tuple[int, Any, dict] | None:
        """(step, state, meta) of the newest checkpoint that reads back, or None if none exist.

        `legacy` = (abstract state, upgrade): an older layout that a step which does not read
        back against `abstract_state` is tried with next, and the function that turns such a
        state into the current layout (checkpoints of earlier versions of the package).

        An unreadable step is skipped and, with everything newer, deleted (the resumed run
        writes them again); once an older step reads back, each skipped one is reported by a
        one-line warning. UserError when checkpoints exist but none reads back (its message
        names the newest one's error, and its cause is that error, for debugging): more likely
        a code or config change than damage, and restarting silently would discard work.
        """
        failures: list[tuple[int, Exception]] = []
        layouts = [(abstract_state, None)] + ([legacy] if legacy else [])
        for step in reversed(self.steps()):
            errors = []
            for abstract, upgrade in layouts:
                args = ocp.args.Composite(state=ocp.args.StandardRestore(abstract),
                                          meta=ocp.args.JsonRestore())
                try:
                    restored = self._manager.restore(step, args=args)
                except Exception as e:  # orbax raises many types (ValueError, KeyError, ...)
                    errors.append(e)
                    continue
                break
            else:
                # The current layout's error says what is wrong; the legacy one's only that
                # the checkpoint is not of that layout either.
                failures.append((step, errors[0]))
                continue
            state = restored.state if upgrade is None else upgrade(restored.state)
            for bad, e in failures:
                warnings.warn(f"checkpoint {self.directory / str(bad)} is unreadable "
                              f"({describe(e)}); falling back to the one before", stacklevel=2)
            self._delete_after(step)
            return step, state, dict(restored.meta or {})
        if failures:
            step, e = failures[0]
            raise UserError(f"no checkpoint can be restored (newest: {self.directory / str(step)}: "
                            f"{describe(e)}); delete the checkpoints/ folder to restart the run "
                            f"from scratch") from e
        return None

    def _delete_after(self, step: int) -> None:
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
