"""The law of issue #31: a SpamLang cell's best-LR loss from its return time, Adam's memory and
its updates per symbol (the formula: `spamlang.law.formula`).

    import spamlang.law, spamlang.results
    law = spamlang.law.fit([spamlang.results.load("runs/beta2_vocab"), ...])
    print(law)                                   # the formula, each constant ± its error
    p = law.predict(TrainConfig(vocab_size=4096, b2=0.999, ...))   # p.loss, p.extrapolation
    law.save("law.json"); law = spamlang.law.load("law.json")    # load(): the shipped law

Modules: `formula` (the math), `cells` (runs -> best-LR seed means), `fitting` (`fit`),
`law` (`Law`, `Prediction`, files), `validate` (`classify`, `leave_one_out`, `summary`),
`frames` (settings results.csv leaves out, from config.json), `figure`. Imports no JAX:
numpy here, scipy and pandas where a function needs them.
"""

from spamlang.law.cells import cells
from spamlang.law.fitting import fit, fit_cells
from spamlang.law.frames import fill_from_configs
from spamlang.law.law import Law, Prediction, load, shipped
from spamlang.law.validate import classify, leave_one_out, summary

__all__ = [
    "Law",
    "Prediction",
    "cells",
    "classify",
    "fill_from_configs",
    "fit",
    "fit_cells",
    "leave_one_out",
    "load",
    "shipped",
    "summary",
]
