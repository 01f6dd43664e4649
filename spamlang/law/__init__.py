"""The law of issue #31: a SpamLang cell's best-LR loss from its return time, Adam's memory and
its updates per symbol (the formula: `spamlang.law.formula`).

    import spamlang.law, spamlang.results
    law = spamlang.law.fit([spamlang.results.load("runs/beta2_vocab"), ...])
    print(law)                                   # the formula, each constant ± its error
    p = law.predict(TrainConfig(vocab_size=4096, b2=0.999, ...))   # p.loss, p.extrapolation
    law.save("law.json"); law = spamlang.law.load("law.json")    # load(): the shipped law

Modules: `formula` (the math), `cells` (runs -> best-LR seed means, `fill_from_configs`),
`law` (`Law`, `Prediction`, files, text), `fitting` (`fit`, `leave_one_out`; its figure is `spamlang.plots.validation`),
`forecast` (a forecast CSV written before a sweep, `compare` with what it measured),
`symbols` (the symbol-level law: each symbol's loss from its history; `SymbolLaw`).
Runs of a known law, to test the fit, are tests/_synthetic_law.py. Imports no JAX: numpy here, scipy, pandas and matplotlib
where a function needs them.
"""

from spamlang.law.cells import cells, fill_from_configs
from spamlang.law.fitting import classify, fit, fit_cells, leave_one_out, summary
from spamlang.law.law import Law, Prediction, load, shipped
from spamlang.law.symbols import SymbolLaw

__all__ = [
    "Law",
    "Prediction",
    "SymbolLaw",
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
