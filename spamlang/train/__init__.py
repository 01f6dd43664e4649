"""Training: config, the state with a member axis and its one step, evaluation, the run loop.

    from spamlang.train import TrainConfig, run_training
    result = run_training(TrainConfig(vocab_size=64, tokens="200K"), "runs/v64")

Names are imported lazily (PEP 562): `spamlang.train.config` alone pulls in no JAX."""

from __future__ import annotations

import importlib

_EXPORTS = {
    "TrainConfig": "spamlang.train.config",
    **dict.fromkeys(("Program", "program"), "spamlang.train.step"),
    **dict.fromkeys(("run_training", "run_group", "load_run"), "spamlang.train.run"),
    "parse_count": "spamlang.notation",
    "Interrupted": "spamlang.errors",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'spamlang.train' has no attribute {name!r}")
    globals()[name] = value = getattr(importlib.import_module(_EXPORTS[name]), name)
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
