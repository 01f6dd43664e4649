"""The law of issue #31: a SpamLang cell's best-LR loss from its return time, Adam's memory and
its updates per symbol (`formula`: the math; `cells`: runs -> best-LR seed means; `law`: `Law`,
its files and text; `fitting`: `fit`, `leave_one_out`; `forecast`: forecasts and `compare`).
`law = spamlang.law.fit([spamlang.results.load("runs/beta2_vocab")])`, `law.predict(config)`,
`law.save("law.json")`, `spamlang.law.load()`: the shipped law. Imports no JAX.
"""

from spamlang.law.cells import cells, fill_from_configs
from spamlang.law.fitting import classify, fit, fit_cells, leave_one_out, summary
from spamlang.law.law import Law, Prediction, load, shipped

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
