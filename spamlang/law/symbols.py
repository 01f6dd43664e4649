"""A law of symbols: each symbol's final loss from its own history, and a cell's loss as the
mean over its symbols (the cell law of `formula` describes a cell as a mixture of forgotten and
learned symbols; failed cells have almost no learned symbol, so this law models one symbol).

    tau = c M        c = exp(c0 + c_tied*tied + c_D*log(D/16) + c_L*log(layers/2)
                             + c_wd*[wd > 0])                                      (steps)
    P   = exp(p0 + p_tied*tied + p_D*log(D/16) + p_L*log(layers/2) + p_M*log(M/20)
              + p_wd*[wd > 0])                                                     (nats)
    z   = P * sum over its appearances i of exp(-(age at the end of appearance i) / tau)
    l   = log(1 + (V - 1) exp(-z))                  its loss: chance log V at z = 0
    L   = the mean of l over the V symbols

The mechanism it encodes: an appearance pulls the symbol's own logit up by P nats; while the
symbol is away, every step pushes its logit down (its row's gradient is small, but Adam divides
it by a second moment that decays with memory M = min(1 / (1 - b2), steps)), undoing the pull
over about tau = c M steps. A symbol is learned when its pulls pile up faster than they leak
away: when its gaps are short against tau, or it came often. M enters twice, as the issue's
probe measured: b2 sets both how fast v forgets (tau) and how large a rare pull is (p_M).

The fit reads the binned summaries a sweep commits (`spamlang.coverage.history`: symbols.csv.gz,
at the last evaluation the symbols binned by appearances, longest gap and age, each bin's mean
gap and mean loss), of each cell's best-LR runs, and treats a bin as one symbol at the bin's
middle appearances and age, with its mean gap between appearances. A cell's prediction draws
the appearance times of `DRAWN` symbols from the data order (iid, shuffled or cyclic epochs) and
averages their losses: a pure function of the cell, the same on every call.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from spamlang.errors import UserError
from spamlang.law.cells import _plain
from spamlang.law.formula import D_REF, LAYERS_REF, log_loss
from spamlang.law.law import COVERED, Law

# The constants, in the order of the fit's parameter vector: P's, then c's.
NAMES = ("p0", "p_tied", "p_D", "p_L", "p_M", "p_wd", "c0", "c_tied", "c_D", "c_L", "c_wd")
# The feature each constant but p0, c0 multiplies: held at 0 when the fit's cells hold it fixed.
FEATURE_OF = {
    "p_tied": "tied",
    "p_D": "log_width",
    "p_L": "log_depth",
    "p_M": "log_memory",
    "p_wd": "decayed",
    "c_tied": "tied",
    "c_D": "log_width",
    "c_L": "log_depth",
    "c_wd": "decayed",
}
PULL = tuple(n for n in NAMES[1:] if n.startswith("p_"))
LEAK = tuple(n for n in NAMES[1:] if n.startswith("c_"))
# What makes a cell to the law (the settings; a run is a cell at one seed).
CELL_INPUTS = ("vocab_size", "batch_size", "steps", "M", "d_model", "n_layers", "tie_embeddings")
CELL_INPUTS += ("sampling",)
# The memory P refers to: b2 0.95's, the language-model default.
M_REF = 20.0
# Symbols whose histories a cell's prediction draws (a fixed seed: the same numbers each call).
DRAWN = 4096
# Starting points of (p0, c0): a pull of 1 or 5 nats, undone within 1x or 4x the memory.
STARTS = tuple((math.log(p), math.log(c)) for p in (1.0, 5.0) for c in (1.0, 4.0))
FORMULA = __doc__.split("\n\n")[1]


def cell_features(D, layers, tied, M, decayed=True) -> dict[str, Any]:
    """The features of a cell (or, as arrays, of many) that the constants multiply."""
    return {
        "tied": np.asarray(tied, dtype=float),
        "log_width": np.log(np.asarray(D, dtype=float) / D_REF),
        "log_depth": np.log(np.asarray(layers, dtype=float) / LAYERS_REF),
        "log_memory": np.log(np.asarray(M, dtype=float) / M_REF),
        "decayed": np.asarray(decayed, dtype=float),
    }


def pull_and_tau(theta: Mapping[str, float], f: Mapping[str, Any], M):
    """(P in nats, tau in steps) of cells with features `f` and memory `M`."""
    log_p = theta["p0"] + sum(theta[n] * f[FEATURE_OF[n]] for n in PULL)
    log_c = theta["c0"] + sum(theta[n] * f[FEATURE_OF[n]] for n in LEAK)
    # The fit's trial steps reach huge constants; inf is the right limit there (a pull that
    # learns any symbol seen, a leak that never forgets), not a warning line for the user.
    with np.errstate(over="ignore"):
        return np.exp(log_p), np.exp(log_c) * np.asarray(M, dtype=float)


def symbol_loss(z, V) -> np.ndarray:
    """log(1 + (V - 1) exp(-z)): chance at z = 0, never below 0 nor above log V for z >= 0."""
    z = np.asarray(z, dtype=float)
    return np.logaddexp(0.0, np.log(np.asarray(V, dtype=float) - 1) - z)


def margin_regular(P, tau, appearances, age, gap) -> np.ndarray:
    """z of symbols that came `appearances` times, `gap` steps apart on average, the last one
    `age` steps before the end: P e^(-age/tau) (1 - s^m) / (1 - s), s = e^(-gap/tau)."""
    m = np.asarray(appearances, dtype=float)
    age, gap = np.asarray(age, dtype=float), np.nan_to_num(np.asarray(gap, dtype=float))
    s = np.exp(-gap / tau)
    # m identical pulls when the gap is 0 (s = 1): the series' limit, not 0 / 0.
    series = np.where(s < 1 - 1e-12, (1 - s**m) / np.maximum(1 - s, 1e-300), m)
    return np.where(m > 0, P * np.exp(-age / tau) * series, 0.0)


def draw_ages(V: int, B: int, steps: int, sampling: str, drawn: int = DRAWN, seed: int = 0):
    """float[drawn, K] (NaN-padded): for `drawn` symbols of a cell, the age at the end of
    training (steps since) of each of their appearances, under the data order `sampling`:
    "iid" (each of the B x steps rows a uniform symbol), "permuted" (every epoch of V / B steps
    deals each symbol once, at a uniform place), "cyclic" (the same place every epoch)."""
    rng = np.random.default_rng(seed)
    R = V / B
    if sampling == "iid":
        counts = rng.binomial(B * steps, 1.0 / V, size=drawn)
        K = max(int(counts.max()), 1)
        t = rng.integers(0, steps, size=(drawn, K)).astype(float)
        t[np.arange(K)[None, :] >= counts[:, None]] = np.nan
    elif sampling in ("permuted", "cyclic"):
        epochs = int(math.ceil(steps / R))
        phase = rng.random((drawn, 1 if sampling == "cyclic" else epochs))
        t = np.floor((np.arange(epochs)[None, :] + phase) * R)
        t[t >= steps] = np.nan
    else:
        raise UserError(f"sampling {sampling!r}: the symbol law knows iid, permuted and cyclic")
    return steps - 1 - t


def predict_cell(
    theta, *, V, B, steps, M, D, layers, tied, decayed=True, sampling="iid", drawn=DRAWN
) -> float:
    """The cell's loss: the mean of `symbol_loss` over `drawn` symbols' drawn histories."""
    P, tau = pull_and_tau(theta, cell_features(D, layers, tied, M, decayed), M)
    ages = draw_ages(int(V), int(B), int(steps), sampling, drawn)
    z = P * np.nansum(np.exp(-ages / tau), axis=1)
    return float(symbol_loss(z, V).mean())


@dataclasses.dataclass(frozen=True)
class SymbolLaw(Law):
    """The symbol-level law (module docstring), fitted: a `Law` whose cell loss is the mean of
    its symbols' (`spamlang law fit --symbols`; `law predict`, `compare` read it as any law)."""

    KIND: ClassVar[str] = "symbols"
    NAMES: ClassVar[tuple[str, ...]] = NAMES
    FEATURE_OF: ClassVar[dict[str, str]] = FEATURE_OF
    FORMULA: ClassVar[str] = FORMULA

    def cell_loss(self, x: Mapping[str, Any]) -> float:
        return predict_cell(
            self.constants,
            V=x["vocab_size"],
            B=x["batch_size"],
            steps=x["steps"],
            M=x["M"],
            D=x["d_model"],
            layers=x["n_layers"],
            tied=x["tie_embeddings"],
            decayed=x["weight_decay"] > 0,
            sampling=x["sampling"],
        )

    def memory_ratio(self, x: Mapping[str, Any]) -> float:
        """tau / R: how long a pull lasts against how long the symbol stays away."""
        f = cell_features(
            x["d_model"], x["n_layers"], x["tie_embeddings"], x["M"], x["weight_decay"] > 0
        )
        return float(pull_and_tau(self.constants, f, x["M"])[1] / x["R"])

    def summary_line(self) -> str:
        P, tau = pull_and_tau(self.constants, cell_features(D_REF, LAYERS_REF, 0.0, M_REF), M_REF)
        Pt, taut = pull_and_tau(self.constants, cell_features(D_REF, LAYERS_REF, 1.0, M_REF), M_REF)
        return (
            f"  P = {float(P):.3g} nats untied, {float(Pt):.3g} tied; tau = {float(tau):.3g} "
            f"steps untied, {float(taut):.3g} tied (c = {float(tau) / M_REF:.3g}, "
            f"{float(taut) / M_REF:.3g}), at D = {D_REF}, {LAYERS_REF} layers, M = {M_REF:g}, "
            "weight decay"
        )


def bin_middle(lower) -> np.ndarray:
    """The middle of a power-of-two bin [k, 2k) of integers by its lower edge k: 0 for 0,
    1 for 1, else 1.5 k - 0.5."""
    k = np.asarray(lower, dtype=float)
    return np.where(k <= 1, k, 1.5 * k - 0.5)


def fit(bins, sources: Sequence[str] = (), *, starts=STARTS) -> SymbolLaw:
    """The law of symbol bins: the constants by least squares on log(l + 0.01), each run's bins
    weighted by their share of its symbols and every run alike. `bins`: one row per bin of a
    run's last evaluation (`bins_of`: the cell's settings, R, M, n, run_id, and the bin's
    appearances, age, mean_gap, symbols and loss_mean, edges as symbols.csv.gz has them)."""
    from scipy.optimize import least_squares

    if len(bins) == 0:
        raise UserError("no symbol bins to fit")
    runs = bins.groupby("run_id")["symbols"].transform("sum").to_numpy(float)
    weight = np.sqrt(bins["symbols"].to_numpy(float) / runs / bins["run_id"].nunique())
    M = bins["M"].to_numpy(float)
    decayed = bins["weight_decay"].to_numpy(float) > 0
    f = cell_features(bins["d_model"], bins["n_layers"], bins["tie_embeddings"], M, decayed)
    free = [n for n in NAMES if n not in FEATURE_OF or np.ptp(f[FEATURE_OF[n]]) > 0]
    m = bin_middle(bins["appearances"].clip(lower=0))
    age = bin_middle(bins["age"].clip(lower=0))
    gap, V = bins["mean_gap"].to_numpy(float), bins["vocab_size"].to_numpy(float)
    target = log_loss(bins["loss_mean"])

    def theta(p) -> dict[str, float]:
        return {**dict.fromkeys(NAMES, 0.0), **dict(zip(free, map(float, p)))}

    def residuals(p):
        # A trial step can overflow the pull to inf, or meet a leak of 0 (inf x 0): least_squares
        # shrinks a step whose residuals are not finite, so that is handled, not a warning line
        # for the user (`law validate --symbols` printed dozens of them).
        with np.errstate(all="ignore"):
            P, tau = pull_and_tau(theta(p), f, M)
            z = margin_regular(P, tau, m, age, gap)
            return weight * (log_loss(symbol_loss(z, V)) - target)

    best = None
    for p0, c0 in starts:
        start = np.array([{"p0": p0, "c0": c0}.get(n, 0.0) for n in free])
        result = least_squares(residuals, start, method="trf", x_scale="jac")
        if best is None or result.cost < best.cost:
            best = result
    # Standard errors as for unweighted least squares on the weighted residuals (invariant to
    # the weights' scale); bins of one run are not independent, so they are a lower bound.
    variance = float(best.fun @ best.fun) / max(len(best.fun) - len(free), 1)
    cov = np.linalg.pinv(best.jac.T @ best.jac) * variance
    errors = dict(zip(free, np.sqrt(np.maximum(np.diag(cov), 0.0)).tolist()))
    cells = bins.drop_duplicates("run_id").assign(decayed=lambda t: t["weight_decay"] > 0)
    ranged = {"D": "d_model", "V": "vocab_size", "R": "R", "M": "M", "n": "n"}
    return SymbolLaw(
        constants=theta(best.x),
        errors={n: errors.get(n) for n in NAMES},
        cells=len(cells[[*CELL_INPUTS, "weight_decay"]].drop_duplicates()),
        rms=float(np.sqrt(np.average((best.fun / weight) ** 2, weights=weight**2))),
        ranges={
            **{k: [float(cells[c].min()), float(cells[c].max())] for k, c in ranged.items()},
            "n_layers": [float(cells["n_layers"].min()), float(cells["n_layers"].max())],
        },
        covered={c: sorted({_plain(v) for v in cells[c]}, key=str) for c in COVERED},
        sources=list(sources),
    )


def bins_of(frame, summary) -> Any:
    """The fit's rows (`fit`) of one sweep: the last evaluation's bins of `summary` (its
    symbols.csv.gz as a DataFrame) of every run of `frame` (its results.csv, settings filled in:
    `spamlang.law.fill_from_configs`) at its cell's best LR (`spamlang.law.cells`), with the
    cell's settings, M, R, n, batch_size, steps and sampling."""
    from spamlang.law.cells import cells

    table = cells(frame)
    keys = [c for c in table.columns if c in frame.columns and c not in ("lr", "seed")]
    best = table[[*keys, "best_lr", "M", "R", "n"]].rename(columns={"best_lr": "lr"})
    runs = frame.merge(best, on=[*keys, "lr"])
    last = summary[summary["step"] == summary.groupby("run_id")["step"].transform("max")]
    last = last[last["max_gap"].notna()]  # the last evaluation's bins split by longest gap too
    columns = ["run_id", "seed", "vocab_size", "batch_size", "steps", "d_model", "n_layers"]
    columns += ["tie_embeddings", "weight_decay", "b2", "M", "R", "n", *COVERED[:4]]
    return last.merge(runs[columns], on="run_id")


def fit_on_bins(bins_by_sweep: Mapping[str, Any]):
    """`leave_one_out`'s `fit_on` for the symbol law: (names, held cell keys) -> the law of
    those sweeps' bins (`bins_of`) less the held cells'; sweeps without bins add nothing."""
    import pandas as pd

    from spamlang.law.fitting import cell_key

    def fit_on(names: list[str], held: set) -> SymbolLaw:
        parts = [bins_by_sweep[n] for n in names if n in bins_by_sweep]
        if not parts:
            raise UserError("no other sweep has symbol histories (symbols.csv.gz) to fit on")
        bins = pd.concat(parts, ignore_index=True)
        keep = [cell_key(r) not in held for r in bins.to_dict("records")]
        return fit(bins[keep], [n for n in names if n in bins_by_sweep])

    return fit_on
