"""Training: config, the state with a member axis and its one step, evaluation, the run loop.

    from spamlang.train import TrainConfig, run_training
    result = run_training(TrainConfig(vocab_size=64, tokens="200K"), "runs/v64")

Names are imported lazily (PEP 562): `spamlang.train.config` alone pulls in no JAX.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "TrainConfig": "spamlang.train.config",
    "parse_count": "spamlang.notation",
    "Program": "spamlang.train.step",
    "program": "spamlang.train.step",
    "run_training": "spamlang.train.run",
    "run_group": "spamlang.train.run",
    "load_run": "spamlang.train.run",
    "Interrupted": "spamlang.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'spamlang.train' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
