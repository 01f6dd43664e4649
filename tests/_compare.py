"""Comparing two evaluations (`Program.evaluate` rows) that should be the same computation."""

from __future__ import annotations

import math

import numpy as np


def _close(a, b, rel: float) -> bool:
    if isinstance(b, float) and math.isnan(b):
        return isinstance(a, float) and math.isnan(a)  # an empty seen / unseen side on both
    return abs(a - b) <= rel * max(1.0, abs(b))


def assert_same_eval(ours: dict, theirs: dict, rel: float = 1e-5, where: str = "") -> None:
    """Numbers within `rel` (NaN equals NaN), the bins of symbol_curve and the per-symbol
    losses likewise, anything else (None, the updates_to_learn bound) exactly; both rows must
    have the same keys."""
    assert set(ours) == set(theirs), (where, set(ours) ^ set(theirs))
    for key, b in theirs.items():
        a = ours[key]
        if isinstance(b, (np.ndarray, list)):  # per-symbol losses (lists after JSON)
            np.testing.assert_allclose(a, b, rtol=rel, atol=rel, err_msg=f"{where} {key}")
        elif isinstance(b, dict):
            assert set(a) == set(b), (where, key)
            for k in b:
                assert len(a[k]) == len(b[k]) and all(
                    _close(x, y, rel) for x, y in zip(a[k], b[k])
                ), (where, key, k)
        elif isinstance(b, (int, float)) and not isinstance(b, bool) and a is not None:
            assert _close(a, b, rel), (where, key, a, b)
        else:
            assert a == b, (where, key, a, b)
