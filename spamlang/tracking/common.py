"""What both trackers share: which tracker and where (`TrackerSpec`), a run's config, rows and
result as the flat numbers and strings trackers take, and the writer's row bookkeeping."""

from __future__ import annotations

import dataclasses
from pathlib import Path

KINDS = ("tensorboard", "wandb")
INSTALL = {"tensorboard": 'pip install -e ".[tensorboard]"', "wandb": 'pip install -e ".[wandb]"'}


@dataclasses.dataclass(frozen=True)
class TrackerSpec:  # which tracker this process's runs use, and where
    kind: str  # "tensorboard" or "wandb"
    explicit: bool  # --tracker: one that cannot start stops the command; a default warns
    root: Path  # the experiment's folder: a sweep directory, or the run directory of a train
    group: str | None = None  # W&B group (the sweep's name; None for a single train)


def flat_config(config) -> dict:
    """The config as flat hyperparameters: `outer.inner`, lists as text, None as "none"."""
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
    """A run's writer: rows' numbers as "<kind>/<key>" at their step, result.json's as
    "result/<key>"; `records`: the rows before this process."""

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
