"""Runs drawn from a known law: what the fit is tested on until the sweeps of issue #31 land.

A grid of cells over V, B, steps, b2, width, tying, weight decay and depth; every LR and seed of a
cell gets the law's loss times log-normal noise, and the LRs off the best one a fixed penalty
on top, so that the best LR's seed mean is the law's loss (with the noise) and the reduction to
cells is exercised as on real sweeps.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from spamlang.law import formula

# A law like the sketch's (c ~ 2.5 untied, ~4.2 tied at D = 16; floors 0.4 and 0.05 at n = 16,
# without weight decay; twice that with it).
CONSTANTS = {
    "log_a": math.log(1.6),
    "a_tied": math.log(0.12),
    "a_D": -1.5,
    "a_wd": math.log(2.0),
    "k": 0.5,
    "c0": math.log(2.5),
    "c_tied": math.log(4.2 / 2.5),
    "c_D": 0.8,
    "c_wd": -0.3,
    # depth: deeper nets hold symbols longer (made up, nonzero so that the fit must find it)
    "c_L": 0.3,
    "log_s": math.log(4.0),  # a boundary steepness near the fitted one (about 6.5)
    # the transition widens at long return times, as the sweeps' fit says (made up size)
    "s_R": -0.5,
    # the width's effect grows as D nears V (made up size; the sweeps' fit says about 8)
    "c_DV": 4.0,
    # the learned level falls steeply below some width and flattens above (made up size; the
    # sweeps' fit says about 7.5)
    "a_iD": 2.0,
}
# The grid: the README's sweeps in miniature (steps = n x V / B for these n).
GRID = {
    "vocab_size": (256, 1024, 4096),
    "batch_size": (32, 128, 512),
    "n": (4, 16, 64),
    "b2": (0.9, 0.95, 0.99, 0.999),
    "d_model": (16, 32, 64),
    "tie_embeddings": (False, True),
    "weight_decay": (0.0, 0.1),
    "n_layers": (2, 8),
}
LRS = (1e-3, 3e-3, 1e-2)  # the middle one is each cell's best
OFF_BEST = 1.5  # loss factor of the LRs off the best


def frame(
    constants: dict | None = None,
    noise: float = 0.02,
    seeds: int = 2,
    seed: int = 0,
    grid: dict | None = None,
):
    """A results.csv-shaped DataFrame of the runs (module docstring); `noise`: the standard
    deviation of the log-normal factor on each run's loss."""
    import pandas as pd

    constants, grid = constants or CONSTANTS, {**GRID, **(grid or {})}
    rng = np.random.default_rng(seed)
    rows = []
    for V, B, n, b2, D, tied, wd, layers in itertools.product(*grid.values()):
        steps = max(1, round(n * V / B))
        x = formula.features(V, B, steps, 1 / (1 - b2), D, tied, wd > 0, layers=layers)
        loss = float(formula.loss(constants, x))
        for lr, s in itertools.product(LRS, range(seeds)):
            factor = 1.0 if lr == LRS[1] else OFF_BEST
            rows.append(
                {
                    "run_id": f"r{len(rows)}",
                    "language": "spam",
                    "preset": "tiny",
                    "d_model": D,
                    "n_layers": layers,
                    "vocab_size": V,
                    "lr": lr,
                    "tie_embeddings": tied,
                    "head": "softmax",
                    "optimizer": "adamw",
                    "sampling": "iid",
                    "seed": s,
                    "seq_len": 2,
                    "batch_size": B,
                    "b2": b2,
                    "weight_decay": wd,
                    "final_eval_loss": loss * factor * math.exp(rng.normal(0, noise)),
                    "steps": steps,
                    "adam_memory_steps": 1 / (1 - b2),
                }
            )
    return pd.DataFrame.from_records(rows)
