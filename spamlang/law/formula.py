"""The law's formula (`FORMULA`): a cell's best-LR seed-mean final eval loss from its settings.
Numpy only: the math, shared by the fit, the prediction and the tests. How each term was chosen
(left out one sweep at a time, then tested blind) is in docs/findings.md, "The law, and how
well it predicts"."""

from __future__ import annotations

import numpy as np

# A cell whose symbols come back within c M steps, Adam's memory scaled by c, reaches l(n); one
# whose return time R is longer sits at chance, log V. The boundary is a logistic in log(c M / R),
# not the share of symbols away longer than c M: failing is a state of the cell, not of each
# symbol's age. Every symbol once an epoch (sampling "permuted", "cyclic") keeps the same c under
# another data order, a prediction the fit does not tune.
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

# The constants, in the order of the fit's parameter vector; s_R, c_DV and a_iD came with
# formats 3, 4 and 5 of the law's file, each chosen left out one sweep at a time.
NAMES = ("log_a", "a_tied", "a_D", "a_wd", "k", "c0", "c_tied", "c_D", "c_wd", "c_L", "log_s")
NAMES += ("s_R", "c_DV", "a_iD")
# The width c0 refers to: the `tiny` preset's, that of most CPU sweeps.
D_REF = 16
# The depth c0 refers to: the `tiny` preset's, that of every CPU sweep before `sweeps/depth.py`
# (depth enters c alone: a depth term in l(n) as well did not predict better).
LAYERS_REF = 2
# The return time log_s refers to: the default cell's, V = 4,096 at B = 32.
R_REF = 128
# What a constant multiplies, for the constants that vanish when the fit's cells do not vary
# it (every cell untied, one width, one sign of weight decay): they are held at 0, unfitted.
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
# Data orders that show every symbol once an epoch (`TrainConfig.sampling`).
EPOCH_ORDERS = ("permuted", "cyclic")
# The offset of the fitted loss's log: log(L + 0.01), so that a learned cell at 0.001 and one
# at 0.01 do not count as far apart as a learned and a failed one.
LOG_OFFSET = 0.01
# The one unit of the law's error wherever it is printed (`error`): log10 of that, as the
# findings and README quote it; the natural log read 2.3x larger for the same law.
ERROR_UNIT = "log10(L + 0.01)"
ERROR_COLUMN = "error_log10"  # the error's column where a table is printed
LN10 = float(np.log(10.0))


def features(
    V, B, steps, memory, D, tied, decayed, permuted=False, layers=LAYERS_REF
) -> dict[str, np.ndarray]:
    """The formula's inputs as float arrays: V, R, M, n, the terms of log c and the data order.
    `memory`: 1 / (1 - b2) (uncapped); the run's length caps it here."""
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
        # D / V, the share of the logit space the head's rank spans: 1 once D >= V (full rank)
        "width_share": np.minimum(np.asarray(D, dtype=float) / V, 1.0),
        # D_REF / D - 1: 0 at the reference width, so log_a keeps its meaning there; it lets the
        # learned level stop falling with the width (empirical: nothing here says why)
        "inverse_width": D_REF / np.asarray(D, dtype=float) - 1.0 + 0 * V,
        "permuted": np.broadcast_to(np.asarray(permuted, dtype=bool), V.shape),
    }


def features_of(x) -> dict[str, np.ndarray]:
    """`features` of a mapping or table of the law's inputs (`cells.row_inputs`' names)."""
    return features(
        x["vocab_size"],
        x["batch_size"],
        x["steps"],
        x["M"],
        x["d_model"],
        x["tie_embeddings"],
        x["weight_decay"] > 0,
        np.isin(np.asarray(x["sampling"]), EPOCH_ORDERS),
        x["n_layers"],
    )


def memory_ratio(theta: dict[str, float], x: dict[str, np.ndarray]) -> np.ndarray:
    """c M / R: the memory, scaled by c, against the return time. The boundary lies at 1 (the
    logistic's middle; under epochs the share at chance reaches 0 there), and near it the loss
    moves most with c, so a cell's distance from 1 says how much a small error in c costs."""
    # log-linear: c's known misses are multiplicative (it grows with D, moves with tying and
    # decay, and grows as D nears V: c_DV, empirical, capped where the head reaches full rank)
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
    """log l(n) before the cap: the log of a n^-k with every setting's term in log a (tying and
    weight decay move the level of learned cells by large factors at equal n)."""
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
    # capped at chance (uncapped, a cell with n far below the fitted range was predicted at
    # hundreds of nats), in the log, at log(log V): a fit's trial step neither overflows nor warns
    return np.exp(np.minimum(log_level(theta, x), np.log(np.log(x["V"]))))


def loss(theta: dict[str, float], x: dict[str, np.ndarray], level_of=level) -> np.ndarray:
    """L of FORMULA for the constants `theta` (by name) at the features `x`.
    `level_of(theta, x)`: the seen symbols' level, `level` unless an analysis compares another
    (docs/analysis/law_errors.py, section 10)."""
    floor = level_of(theta, x)
    ratio = memory_ratio(theta, x)
    permuted = x.get("permuted", False)
    # 1 / (1 + ratio^s) written through tanh, which neither overflows nor divides by 0; the
    # steepness falls as R grows (s_R < 0: the transition is wider where symbols return rarely).
    steepness = np.exp(theta["log_s"] + theta["s_R"] * x["log_return"])
    logistic = 0.5 * (1 - np.tanh(0.5 * steepness * np.log(ratio)))
    forgotten = np.where(permuted, np.clip(1 - ratio, 0.0, 1.0), logistic)
    # Symbols training never showed are at chance whatever the optimizer: a share exp(-n) of
    # them under iid draws, none under permuted order once n >= 1. No constant is fitted.
    unseen = np.where(permuted, np.clip(1 - x["n"], 0.0, 1.0), np.exp(-x["n"]))
    seen = forgotten * np.log(x["V"]) + (1 - forgotten) * floor
    return unseen * np.log(x["V"]) + (1 - unseen) * seen


def log_loss(values) -> np.ndarray:
    """log(L + 0.01), the natural log: the scale the fit's residuals are measured on (and
    `Law.rms` stored in); what the law reports is `error`, in ERROR_UNIT."""
    return np.log(np.asarray(values, dtype=float) + LOG_OFFSET)


def error(predicted, measured) -> np.ndarray:
    """log10(L_pred + 0.01) - log10(L + 0.01): the law's error, as every command prints it (in
    ERROR_UNIT). The fit's least squares in the natural log has the same optimum (a factor
    ln 10 between the two), and the findings and README quote log10."""
    return (log_loss(predicted) - log_loss(measured)) / LN10


def in_error_unit(natural) -> float:
    """An error in the natural log(L + 0.01) (`Law.rms`, as a law file stores it) in ERROR_UNIT."""
    return float(natural) / LN10
