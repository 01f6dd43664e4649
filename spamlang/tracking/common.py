"""What both trackers share: which tracker and where (`TrackerSpec`), and a run's config, rows
and result as the flat numbers and strings trackers take."""

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


def scalars(record: dict) -> dict:
    """A metrics row's numbers as {"<kind>/<key>": float} (lists, text and nulls are left out)."""
    kind = record.get("kind", "train")
    return {
        f"{kind}/{k}": float(v)
        for k, v in record.items()
        if k not in ("kind", "step") and isinstance(v, (int, float))
    }


def result_scalars(result: dict) -> dict:
    """result.json's numeric columns as {"result/<column>": float}."""
    return {f"result/{k}": float(v) for k, v in result.items() if isinstance(v, (int, float))}
