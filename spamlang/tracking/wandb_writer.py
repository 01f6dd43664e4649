"""Weights & Biases: one W&B run per run directory, in the group of its sweep, its id derived
from the run directory so that a resumed run continues its own W&B run (`resume="allow"`).

Resuming: online, rows from the run's next step on are logged; offline (WANDB_MODE=offline),
W&B cannot say which steps it holds, so rows after the restored step are logged.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from spamlang.errors import UserError
from spamlang.tracking import common
from spamlang.tracking.common import INSTALL, TrackerSpec, flat_config


def check(verify: bool = False) -> None:
    """UserError naming the fix when W&B cannot start here; `verify`: ask its server too."""
    try:
        import wandb
    except ImportError as e:
        raise UserError(f"--tracker wandb needs wandb ({e}): {INSTALL['wandb']}") from None
    if not _online():
        return
    if not (os.environ.get("WANDB_API_KEY") or wandb.login(prompt=False, verify=False)):
        raise UserError(
            "--tracker wandb has no W&B API key: run `wandb login` or set "
            "WANDB_API_KEY, or set WANDB_MODE=offline to log to disk"
        )
    if verify:
        try:
            wandb.login(prompt=False, verify=True, timeout=30)
        except Exception as e:  # noqa: BLE001 (a bad key, no network: the same advice)
            wandb.teardown()  # else W&B's service process keeps this one from exiting
            text = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise UserError(
                f"--tracker wandb cannot log in ({text}): check the network and "
                "the key (`wandb login --relogin`), or set WANDB_MODE=offline to "
                "log to disk and `wandb sync` later"
            ) from None


def _online() -> bool:
    return os.environ.get("WANDB_MODE", "online").lower() not in ("offline", "disabled", "dryrun")


def run_id(run_dir: Path) -> str:
    """A W&B run id naming the run directory: its name and a hash of its resolved path."""
    digest = hashlib.sha1(str(run_dir.resolve()).encode()).hexdigest()[:10]
    return f"{re.sub(r'[^A-Za-z0-9_-]', '_', run_dir.name)[:50]}-{digest}"


class Writer(common.Writer):
    def __init__(self, spec: TrackerSpec, run_dir: Path, config, records: list, restored_step: int):
        check()
        import wandb

        spec.root.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(
            id=run_id(run_dir),
            name=run_dir.name,
            group=spec.group,
            resume="allow",
            dir=str(spec.root),
            config=flat_config(config),
            reinit="create_new",
            settings=wandb.Settings(silent=True, console="off"),
        )
        # The first step not logged yet: online W&B knows it; offline, the restored step's next.
        self.next = int(self.run.step) if _online() else restored_step + 1 if restored_step else 0
        super().__init__(records)

    def log(self, step: int, values: dict) -> None:
        if step >= self.next:
            self.run.log(values, step=step)

    def finish(self, result: dict) -> None:
        super().finish(result)
        self.run.summary.update(
            {k: v for k, v in result.items() if isinstance(v, (int, float, str, bool))}
        )

    def close(self) -> None:
        self.run.finish()
