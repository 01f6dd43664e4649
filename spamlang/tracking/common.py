"""What both trackers share: which tracker and where (`TrackerSpec`), a run's config, rows and
result as the flat numbers and strings trackers take, and the writer's row bookkeeping."""

from __future__ import annotations

import dataclasses
from pathlib import Path

KINDS = ("tensorboard", "wandb")
# The one line per tracker that says how to get it (a missing extra).
INSTALL = {"tensorboard": 'pip install -e ".[tensorboard]"', "wandb": 'pip install -e ".[wandb]"'}


@dataclasses.dataclass(frozen=True)
class TrackerSpec:
    """Which tracker this process's runs use, and where."""

    kind: str  # "tensorboard" or "wandb"
    # True: the user asked for it (--tracker), so a tracker that cannot start stops the command;
    # False: a default (Sweep(tracker=...)), so the runs go on without it after one warning.
    explicit: bool
    root: Path  # the experiment's folder: a sweep directory, or the run directory of a train
    # W&B group (the sweep's name; None for a single `spamlang train`).
    group: str | None = None


def flat_config(config) -> dict:
    """The config as flat hyperparameters: nested dicts as `outer.inner`, lists as text, None
    as "none" (trackers take numbers, booleans and strings)."""
    data = config.to_json() if hasattr(config, "to_json") else dataclasses.asdict(config)
    out = {}

    def put(prefix: str, value) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                put(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, (bool, int, float, str)):
            out[prefix] = value
        else:
            out[prefix] = "none" if value is None else str(value)

    put("", data)
    return out


class Writer:
    """A run's writer: each metrics row's numbers as {"<kind>/<key>": float} at its step (lists,
    text and nulls left out), result.json's as {"result/<column>": float} at the last step.
    `records`: the rows before this process (a resume), given to `row` first."""

    def __init__(self, records: list):
        self.step = 0
        for record in records:
            self.row(record)

    def row(self, record: dict) -> None:
        self.step = step = int(record.get("step", 0))
        kind = record.get("kind", "train")
        self.log(
            step,
            {
                f"{kind}/{k}": float(v)
                for k, v in record.items()
                if k not in ("kind", "step") and isinstance(v, (int, float))
            },
        )

    def finish(self, result: dict) -> None:
        numbers = {k: float(v) for k, v in result.items() if isinstance(v, (int, float))}
        self.log(self.step, {f"result/{k}": v for k, v in numbers.items()})

    def log(self, step: int, values: dict) -> None:
        raise NotImplementedError
