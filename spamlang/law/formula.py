"""The law's formula: a cell's best-LR seed-mean final eval loss from its settings.

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
    L = q * log V + (1 - q) * (p * log V + (1 - p) * l(n))

A cell whose symbols come back within c M steps, Adam's memory scaled by c, reaches l(n); one
whose return time R is longer sits at chance, log V. The boundary is a threshold in log(c M / R)
smoothed by a logistic of steepness s, not the share of symbols away longer than c M that the
first form, exp(-c M / R), assumed: the cells' own per-symbol columns show failed cells with
almost no symbol learned, even those seen at the last step, so failing is a state of the cell,
not of each symbol's age. Left out one sweep at a time over 290 cells the logistic predicted at
RMS error 0.67 with 91% of cells classified right, against 0.85 and 80% for the exponential
(docs/findings.md). The steepness falls as R grows (the shipped fit: s = 5.0 at R = 128,
s_R = -0.29: the transition is wider where symbols return rarely), an empirical term chosen in
format 3: over the 490 cells of the first 20 sweeps of results/, one steepness fitted on all
of them still erred by 0.276 in log10(L + 0.01) on the same cells, and s_R did best of the
one-constant additions tried left out one sweep at a time (90% right at RMS 0.27 in log10,
against 84% and 0.61; docs/analysis/law_errors.py). When every symbol comes once an epoch (`TrainConfig.sampling`
"cyclic", and "permuted", whose shuffled epochs make gaps R only on average) the share is
max(0, 1 - c M / R): the same c, a different data order, a prediction the fit does not tune.
Capping l(n) at log V keeps every prediction in [0, log V]: uncapped, a cell with n far below
the fitted range predicted hundreds of nats. c is log-linear because its known misses are
multiplicative (it grows with D and moves with tying and weight decay); l(n) gets a tied term
because at equal n the tied and untied levels differ about 8x, and a decay term because
`sweeps/memory_width_wd0.py` found decay raising the level of learned cells up to 100x at
D = 32. Depth enters c through log(layers / 2), 2 being the depth of every CPU sweep before
`sweeps/depth.py`; a depth term in l(n) as well did not predict better (left out: RMS 0.68
with it, 0.67 without) and was dropped. A law fitted at one depth holds c_L at 0 and flags any other.

c_DV (format 4) lets the width's effect grow as D nears V: at one return time and memory
(R = 224, M = 25, 12 updates per symbol, D = 176), halving B and V together cut the loss 5-7x
per halving, and doubling D at V = 3,584 cut it 74-89x (`sweeps/return_or_batch.py`,
`return_or_batch_width.py`), where c D^c_D alone moved the law's number little. Of the one-term
additions compared on the 512 cells of the 23 sweeps of results/ (a power of B, exp(D / 16B),
log(D / 16)^2, exp(D / V); docs/analysis/law_errors.py, section 7), exp(c_DV D / V) erred least
left out one sweep at a time (91% right at RMS 0.273 in log10(L + 0.01), against 90% and 0.312
without it; exp(D / 16B): 92% and 0.283). It is empirical: D / V is the share of the logit space the head's
rank spans, and the term is capped where D reaches V (a full-rank head), but no measurement here
ties its size (c x 2.5 at D / V = 0.1 in the shipped fit) to a mechanism.

a_iD (format 5) lets the learned level stop falling with the width: the level of format 4,
a D^a_D with a_D = -4.3 fitted where most learned cells had D = 16-64, put the learned cells
of `sweeps/law_blind_5.py` (D = 192-240) at 1e-6 to 5e-5 nats where they measured 0.004-0.3,
its forecast's RMS error 0.43 in log10(L + 0.01). With exp(a_iD (16 / D - 1)) beside D^a_D
(the shipped fit: a_iD = 7.45, a_D = +0.83) the level falls 85x from D = 16 to 64 and stays
within 1.7x of its least (D = 144) up to D = 576. Of the level terms compared left out one sweep
at a time over the 528 cells of the 24 sweeps of results/ (a curvature in log D, the
vocabulary, the return time, the memory against the return time), this one erred least: 91%
right at RMS 0.267 in log10, against 0.287 without it (docs/analysis/law_errors.py, section 9);
a term in log(M / R) helped in sample but is not identifiable left out (c of the cells without
weight decay ran off when their sweep was held out). It is empirical: no measurement here says
why the level stops falling there. Blind, it classified 15 of 16 cells right at RMS 0.172 in
log10 on `sweeps/law_blind_6.py` and 15 of 16 at 0.292 on `law_blind_7.py` (format 4: 0.243
and 0.508; docs/findings.md).

Numpy only: the math, shared by the fit, the prediction and the tests."""

from __future__ import annotations

import numpy as np

# The constants, in the order of the fit's parameter vector.
NAMES = ("log_a", "a_tied", "a_D", "a_wd", "k", "c0", "c_tied", "c_D", "c_wd", "c_L", "log_s")
NAMES += ("s_R",)  # added in format 3 of the law's file: a format 2 file holds s_R = 0
NAMES += ("c_DV",)  # added in format 4: a format 2 or 3 file holds c_DV = 0
NAMES += ("a_iD",)  # added in format 5: an older file holds a_iD = 0
# The width c0 refers to: the `tiny` preset's, that of most CPU sweeps.
D_REF = 16
# The depth c0 refers to: the `tiny` preset's.
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
FORMULA = __doc__.split("\n\n")[1]


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
        # D_REF / D - 1: 0 at the reference width, so log_a keeps its meaning there
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
    """log l(n) before the cap: the log of a n^-k with every setting's term in log a."""
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
    # capped in the log, at log(log V): a trial constant far off (a fit's step) neither
    # overflows nor warns
    return np.exp(np.minimum(log_level(theta, x), np.log(np.log(x["V"]))))


def loss(theta: dict[str, float], x: dict[str, np.ndarray], level_of=level) -> np.ndarray:
    """L of the module docstring for the constants `theta` (by name) at the features `x`.
    `level_of(theta, x)`: the seen symbols' level, `level` unless an analysis compares another
    (docs/analysis/law_errors.py, section 10)."""
    floor = level_of(theta, x)
    ratio = memory_ratio(theta, x)
    permuted = x.get("permuted", False)
    # 1 / (1 + ratio^s) written through tanh, which neither overflows nor divides by 0.
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
