"""Per-symbol sample complexity: how many updates a SpamLang symbol needs before it is learned.

Each symbol's loss on `s s` is binned by its exposure; `updates_to_learn` is the exposure at
which half of the symbols are learned (`crossing`). Under pure coverage a symbol needs the same
number of updates at every V; under the head's bottleneck the number grows with V / rank.
"""

from __future__ import annotations

import math

import numpy as np

LEARNED_FRACTION = 0.1  # a symbol is learned when its loss is under this fraction of log V
MIN_BIN = 32  # symbols a bin pools at least: a learned fraction is not one symbol's coin flip
RESULT_KEYS = ("updates_to_learn", "updates_to_learn_bound", "symbols_learned", "symbol_curve")


def learning_curve(losses_V, exposure_V) -> dict:
    """RESULT_KEYS from one member's symbol losses; "symbol_curve": per exposure bin."""
    losses = np.asarray(losses_V, np.float64)
    exposure = np.asarray(exposure_V)
    threshold = LEARNED_FRACTION * math.log(len(losses))
    learned = losses < threshold
    bins = _bins(exposure)
    curve = {"exposure": [], "loss_median": [], "loss_mean": [], "learned": [], "symbols": []}
    for members in bins:
        curve["exposure"].append(float(exposure[members].mean()))
        curve["loss_median"].append(float(np.median(losses[members])))
        curve["loss_mean"].append(float(losses[members].mean()))
        curve["learned"].append(float(learned[members].mean()))
        curve["symbols"].append(int(members.size))
    seen = [k for k, x in enumerate(curve["exposure"]) if x > 0]
    if len(seen) < len(bins) and curve["learned"][0] >= 0.5:  # it copies never-seen symbols
        value, bound = 0.0, ""
    else:  # never-seen symbols say nothing of how many updates a seen one needs
        value, bound = crossing(
            [curve["exposure"][k] for k in seen], [curve["learned"][k] for k in seen]
        )
    return {
        "updates_to_learn": value,
        "updates_to_learn_bound": bound,
        "symbols_learned": float(learned.mean()),
        "symbol_curve": curve,
    }


def _bins(exposure_S: np.ndarray) -> list[np.ndarray]:
    """Indices by exposure: never-seen alone, then counts pooled to MIN_BIN symbols a group."""
    order = np.argsort(exposure_S, kind="stable")
    counts = exposure_S[order]
    start = int(np.sum(counts == 0))
    groups = [order[:start]] if start else []
    for end in range(1, len(order) + 1):
        at_edge = end == len(order) or counts[end] != counts[end - 1]
        if at_edge and end - start >= MIN_BIN:
            groups.append(order[start:end])
            start = end
    if start < len(order):
        if len(groups) > (counts[0] == 0):
            groups[-1] = np.concatenate([groups[-1], order[start:]])
        else:
            groups.append(order[start:])
    return groups


def crossing(exposure: list[float], learned: list[float]) -> tuple[float | None, str]:
    """(exposure where the learned share first reaches 1/2, bound: "upper" or "not reached")."""
    for k, fraction in enumerate(learned):
        if fraction < 0.5:
            continue
        if k == 0:
            return exposure[0], "upper"
        x0, x1, y0, y1 = exposure[k - 1], exposure[k], learned[k - 1], fraction
        return x0 + (0.5 - y0) * (x1 - x0) / (y1 - y0), ""
    return None, "not reached"
