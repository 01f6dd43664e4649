"""The law's formula (`FORMULA`): a cell's best-LR seed-mean final eval loss from its settings.
Numpy only: the math, shared by the fit, the prediction and the tests. How each term was chosen
(left out one sweep at a time, then tested blind) is in docs/findings.md, "The law, and how
well it predicts"."""

from __future__ import annotations

import numpy as np

# A cell whose symbols return within c M steps reaches l(n), a slower one sits at chance: the
# boundary is a logistic in log(c M / R), a state of the cell, not of each symbol's age.
FORMULA = """\
    R = V / B                        steps between a symbol's returns
    M = min(1 / (1 - b2), steps)     Adam's effective memory (it cannot remember past the run)
    n = B x steps / V                updates per symbol
    c = exp(c0 + c_tied*tied + c_D*log(D/16) + c_wd*[wd > 0] + c_L*log(layers/2)
            + c_DV*min(D/V, 1))
    l(n) = min(log V, exp(log_a + a_tied*tied + a_D*log(D/16) + a_wd*[wd > 0]
                          + a_iD*(16/D - 1)) * n^-k)
                                     the loss n updates reach, never above chance
    p = 1 / (1 + (c M / R)^s)        the cell's share at chance (iid),
                                     s = exp(log_s + s_R*log(R/128))
    p = max(0, 1 - c M / R)          the same when every symbol comes once an epoch
    q = exp(-n) (iid), max(0, 1 - n) (epochs)      the share of symbols never shown
    L = q * log V + (1 - q) * (p * log V + (1 - p) * l(n))"""

# The constants, in the order of the fit's parameter vector.
NAMES = ("log_a", "a_tied", "a_D", "a_wd", "k", "c0", "c_tied", "c_D", "c_wd", "c_L", "log_s")
NAMES += ("s_R", "c_DV", "a_iD")
# The width, depth and return time the constants refer to: the `tiny` preset, V 4,096 at B 32.
D_REF, LAYERS_REF, R_REF = 16, 2, 128
# What a constant multiplies, where the fit's cells may not vary it: then it is held at 0.
FEATURE_OF = {
    "a_tied": "tied",
    "a_D": "log_width",
    "a_wd": "decayed",
    "c_tied": "tied",
    "c_D": "log_width",
    "c_wd": "decayed",
    "c_L": "log_depth",
    "s_R": "log_return",
    "c_DV": "width_share",
    "a_iD": "inverse_width",
}
# Those features in words, for a constant held at 0 ("every cell had the same width").
FEATURE_WORDS = {
    "tied": "tying",
    "log_width": "width",
    "decayed": "sign of weight decay",
    "log_depth": "depth",
    "log_return": "return time",
    "width_share": "width against vocabulary",
    "inverse_width": "width",
}
EPOCH_ORDERS = ("permuted", "cyclic")
# log(L + 0.01): a learned cell at 0.001 and one at 0.01 are not as far apart as learned and failed.
LOG_OFFSET = 0.01
# The one unit of the law's error wherever it is printed, as the findings quote it.
ERROR_UNIT = "log10(L + 0.01)"
ERROR_COLUMN = "error_log10"  # the error's column where a table is printed
LN10 = float(np.log(10.0))


def features(
    V, B, steps, memory, D, tied, decayed, permuted=False, layers=LAYERS_REF
) -> dict[str, np.ndarray]:
    """The formula's inputs as float arrays; `memory`: 1 / (1 - b2), uncapped."""
    V, B, steps = (np.asarray(x, dtype=float) for x in (V, B, steps))
    return {
        "V": V,
        "R": V / B,
        "M": np.minimum(np.asarray(memory, dtype=float), steps),
        "n": B * steps / V,
        "tied": np.asarray(tied, dtype=float),
        "log_width": np.log(np.asarray(D, dtype=float) / D_REF),
        "decayed": np.asarray(decayed, dtype=float),
        "log_depth": np.log(np.asarray(layers, dtype=float) / LAYERS_REF) + 0 * V,
        "log_return": np.log(V / B / R_REF),
        # the share of the logit space the head's rank spans: 1 once D >= V
        "width_share": np.minimum(np.asarray(D, dtype=float) / V, 1.0),
        # 0 at the reference width, so log_a keeps its meaning there (empirical)
        "inverse_width": D_REF / np.asarray(D, dtype=float) - 1.0 + 0 * V,
        "permuted": np.broadcast_to(np.asarray(permuted, dtype=bool), V.shape),
    }


def features_of(x) -> dict[str, np.ndarray]:
    """`features` of a mapping or table of the law's inputs (`cells.row_inputs`' names)."""
    same = [x[k] for k in "vocab_size batch_size steps M d_model tie_embeddings".split()]
    epochs = np.isin(np.asarray(x["sampling"]), EPOCH_ORDERS)
    return features(*same, x["weight_decay"] > 0, epochs, x["n_layers"])


def memory_ratio(theta: dict[str, float], x: dict[str, np.ndarray]) -> np.ndarray:
    """c M / R: the memory, scaled by c, against the return time; the boundary lies at 1."""
    # log-linear: c's known misses are multiplicative
    c = np.exp(
        theta["c0"]
        + theta["c_tied"] * x["tied"]
        + theta["c_D"] * x["log_width"]
        + theta["c_wd"] * x["decayed"]
        + theta["c_L"] * x["log_depth"]
        + theta["c_DV"] * x["width_share"]
    )
    return c * x["M"] / x["R"]


def log_level(theta: dict[str, float], x: dict[str, np.ndarray]) -> np.ndarray:
    """log l(n) before the cap."""
    return (
        theta["log_a"]
        + theta["a_tied"] * x["tied"]
        + theta["a_D"] * x["log_width"]
        + theta["a_wd"] * x["decayed"]
        + theta["a_iD"] * x["inverse_width"]
        - theta["k"] * np.log(x["n"])
    )


def level(theta: dict[str, float], x: dict[str, np.ndarray]) -> np.ndarray:
    """l(n): the loss the seen symbols of a cell reach when none is at chance, capped at log V."""
    # capped at chance in the log, so a fit's trial step neither overflows nor warns
    return np.exp(np.minimum(log_level(theta, x), np.log(np.log(x["V"]))))


def loss(theta: dict[str, float], x: dict[str, np.ndarray], level_of=level) -> np.ndarray:
    """L of FORMULA for the constants `theta` at `x`; `level_of`: the seen symbols' level."""
    floor = level_of(theta, x)
    ratio = memory_ratio(theta, x)
    permuted = x.get("permuted", False)
    # 1 / (1 + ratio^s) through tanh, which neither overflows nor divides by 0.
    steepness = np.exp(theta["log_s"] + theta["s_R"] * x["log_return"])
    logistic = 0.5 * (1 - np.tanh(0.5 * steepness * np.log(ratio)))
    forgotten = np.where(permuted, np.clip(1 - ratio, 0.0, 1.0), logistic)
    # Symbols training never showed are at chance whatever the optimizer.
    unseen = np.where(permuted, np.clip(1 - x["n"], 0.0, 1.0), np.exp(-x["n"]))
    seen = forgotten * np.log(x["V"]) + (1 - forgotten) * floor
    return unseen * np.log(x["V"]) + (1 - unseen) * seen


def log_loss(values) -> np.ndarray:
    """log(L + 0.01), the natural log: the fit's scale (and `Law.rms`'s)."""
    return np.log(np.asarray(values, dtype=float) + LOG_OFFSET)


def error(predicted, measured) -> np.ndarray:
    """log10(L_pred + 0.01) - log10(L + 0.01): the law's error as printed (ERROR_UNIT)."""
    return (log_loss(predicted) - log_loss(measured)) / LN10


def in_error_unit(natural) -> float:
    """An error in the natural log(L + 0.01) in ERROR_UNIT."""
    return float(natural) / LN10
