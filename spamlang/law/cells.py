"""From runs to cells: the law's inputs of a run, and a sweep's runs reduced to one loss a cell
(every setting but the LR and the seed; the loss is the best LR's seed mean, by `best_over`)."""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spamlang.errors import UserError
from spamlang.results import read_runs, records
from spamlang.rundir.reading import best_over, settings_columns

# What the law is a law of: SpamLang (one symbol repeated, position-invariant) trained by an
# Adam-family optimizer (the formula's memory is Adam's second moment) with the softmax head
# (the formula has no term for a head's rank). Runs outside are left out of a fit.
SCOPE = {"language": ("spam",), "optimizer": ("adamw",), "head": ("softmax",)}
# Settings the formula has no term for: a run that moves one off its default is outside the
# law's scope too (lazy_adamw's memory counts a row's own appearances, not steps, so it is out).
FIXED = {"eps": 1e-8, "grad_clip": 1.0, "b1": 0.9}
# The controls on the head alone (`spamlang.optim.head`) change Adam's step on the head rows:
# off is the only value the law covers.
FIXED.update(
    head_amsgrad=False, head_eps=0.0, head_row_clip=0.0, head_v_gated=False, head_lr_scale=1.0
)
# Head controls whose unset value is the run's own setting (a DEFAULTED field): inside the
# scope unset or equal to it, so that a head b2 0.999 run is never fitted as a b2 0.95 cell.
SAME_AS = {"head_b2": "b2", "head_weight_decay": "weight_decay"}
# Columns a fit cannot do without (results.csv always has them).
REQUIRED = ("vocab_size", "batch_size", "d_model", "steps", "lr", "seed", "final_eval_loss")
# Settings a fit will not default: a table without tie_embeddings would fit tied runs as
# untied. Every results.csv lists them; `fill_from_configs` reads them from config.json.
SETTINGS_REQUIRED = ("tie_embeddings", "weight_decay", "language", "optimizer", "head", "sampling")
# Columns a prediction cannot do without; the rest default to TrainConfig's defaults.
PREDICT_REQUIRED = ("vocab_size", "batch_size", "d_model", "steps")
# TrainConfig fields the law reads, defaulted where a row lacks them.
DEFAULTED = ("tie_embeddings", "weight_decay", "b2", "language", "optimizer", "head", "sampling")
# The memory columns of results.csv, most direct first: the capped memory (newer sweeps), then
# 1 / (1 - b2) as every result reports it.
MEMORY_COLUMNS = ("adam_memory_steps_effective", "adam_memory_steps")


def defaults() -> dict[str, Any]:
    """TrainConfig's defaults of the fields in DEFAULTED (its module imports no JAX)."""
    from spamlang.train.config import TrainConfig

    return {f.name: f.default for f in dataclasses.fields(TrainConfig) if f.name in DEFAULTED}


def missing(value: Any) -> bool:
    """An empty cell: None, NaN, or pandas' NA."""
    try:
        return value is None or bool(value != value)
    except (TypeError, ValueError):  # pandas.NA refuses bool()
        return True


def row_inputs(row: Mapping[str, Any], fill: dict | None = None) -> dict[str, Any]:
    """The law's inputs of one run or config (results.csv columns): the DEFAULTED fields,
    defaulted, and the formula's R, M (memory capped at the run's steps) and n."""
    absent = [c for c in PREDICT_REQUIRED if missing(row.get(c))]
    if absent:
        needs = ", ".join(PREDICT_REQUIRED)
        raise UserError(f"missing column(s) {', '.join(absent)}: the law needs {needs}")
    fill = defaults() if fill is None else fill
    out = {c: (fill[c] if missing(row.get(c)) else row[c]) for c in DEFAULTED}
    try:
        V, B, D, steps = (float(row[c]) for c in PREDICT_REQUIRED)
        memory = _memory(row, out)
    except (TypeError, ValueError) as e:
        raise UserError(f"a run's settings are not numbers ({e})") from None
    if min(V, B, D, steps) <= 0:
        raise UserError(
            f"vocab_size, batch_size, d_model and steps must be > 0, got "
            f"{V:g}, {B:g}, {D:g}, {steps:g}"
        )
    out.update(
        n_layers=_depth(row),
        vocab_size=int(V),
        batch_size=int(B),
        d_model=int(D),
        steps=int(steps),
        tie_embeddings=bool(out["tie_embeddings"]),
        weight_decay=float(out["weight_decay"]),
        R=V / B,
        M=min(memory, steps),
        n=B * steps / V,
    )
    return out


def moved(row: Mapping[str, Any], inputs: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """The FIXED and SAME_AS settings that `row` moves off what the law covers, as (name, the
    row's value, the value covered); `inputs` is the row's `row_inputs`."""
    covered = {**FIXED, **{k: inputs[v] for k, v in SAME_AS.items()}}
    return [
        (k, row[k], v) for k, v in covered.items() if not missing(row.get(k)) and float(row[k]) != v
    ]


def _depth(row: Mapping[str, Any]) -> int:
    """The backbone's layers: the row's n_layers, else its preset's, else the default preset's."""
    from spamlang.model.config import preset_fields

    if not missing(row.get("n_layers")):
        return int(row["n_layers"])
    preset = row.get("preset")
    if missing(preset):
        from spamlang.train.config import TrainConfig

        preset = TrainConfig.preset  # the dataclass default, as for DEFAULTED
    try:
        return int(preset_fields(preset)["n_layers"])
    except (UserError, KeyError, TypeError):
        raise UserError(f"unknown preset {preset!r}: the law cannot tell its depth") from None


def _memory(row: Mapping[str, Any], values: dict) -> float:
    """1 / (1 - b2) in steps: from the row's b2, else its MEMORY_COLUMNS, else the default b2."""
    if not missing(row.get("b2")):
        return _steps(float(row["b2"]))
    for column in MEMORY_COLUMNS:
        if not missing(row.get(column)):
            return float(row[column])
    return _steps(float(values["b2"]))


def _steps(b2: float) -> float:
    """1 / (1 - b2) to 10 significant digits, as TrainConfig.return_time reports it (1000)."""
    return float(f"{1 / (1 - b2):.10g}")


def cells(frame) -> Any:
    """The cells of one sweep's runs: each cell's settings and law inputs, loss, best_lr and
    seeds (the runs behind the loss); runs outside SCOPE are left out with a warning."""
    import pandas as pd

    if frame is None or len(frame) == 0:
        raise UserError("no runs to fit: the frame is empty")

    def has(column: str) -> bool:  # an all-empty column tells nothing either
        return column in frame.columns and not frame[column].map(missing).all()

    absent = [c for c in REQUIRED if c not in frame.columns]
    absent += [c for c in SETTINGS_REQUIRED if not has(c)]
    if not any(map(has, ("b2", *MEMORY_COLUMNS))):
        absent.append("b2")
    if absent:
        raise UserError(
            f"missing column(s) {', '.join(absent)}: the law needs a results.csv "
            f"table ({', '.join(REQUIRED)}, and the settings {', '.join(SETTINGS_REQUIRED)}, "
            "b2 that a sweep directory's config.json files fill in)"
        )
    _check_finite(frame)
    settings = [c for c in settings_columns(list(frame.columns)) if c not in ("lr", "seed")]
    fill = defaults()
    groups: dict[tuple, int] = {}  # a cell's settings -> its number, in order of appearance
    runs, outside = [], 0
    for row in frame.to_dict("records"):
        inputs = row_inputs(row, fill)
        if any(inputs[k] not in allowed for k, allowed in SCOPE.items()) or moved(row, inputs):
            outside += 1
            continue
        key = tuple({**{c: _plain(row.get(c)) for c in settings}, **inputs}.items())
        diverged = row.get("diverged")
        lost = missing(row["final_eval_loss"]) or (not missing(diverged) and bool(diverged))
        loss = math.nan if lost else float(row["final_eval_loss"])  # NaN: does not count
        runs.append((groups.setdefault(key, len(groups)), float(row["lr"]), loss))
    scope = "; ".join(
        [f"{k} {', '.join(v)}" for k, v in SCOPE.items()]
        + [f"{k} {v:g}" for k, v in FIXED.items()]
        + [f"{k} unset or {v}'s" for k, v in SAME_AS.items()]
    )
    if not groups:
        raise UserError(f"no run the law covers: all {outside} are outside its scope ({scope})")
    best = best_over(pd.DataFrame(runs, columns=["cell", "lr", "loss"]), "cell", "lr", "loss")
    keys = list(groups)
    records = [
        {**dict(keys[cell]), "loss": mean, "best_lr": lr, "seeds": count}
        for cell, lr, mean, count in best[["cell", "lr", "mean", "count"]].itertuples(index=False)
    ]
    if not records:
        why = "every run in the law's scope has no final_eval_loss (or diverged)"
        raise UserError(f"no cell to fit: {why}")
    if outside:  # said once the rest can be fitted, so that an error stays one line
        warnings.warn(f"{outside} run(s) outside the law's scope left out ({scope})", stacklevel=2)
    return pd.DataFrame.from_records(records)


def _check_finite(frame) -> None:
    """UserError naming the first run whose final_eval_loss is infinite and not marked diverged
    (NaN is a loss the run does not have; infinity is a broken table the fit would choke on)."""
    import numpy as np
    import pandas as pd

    loss = pd.to_numeric(frame["final_eval_loss"], errors="coerce").to_numpy(float)
    flags = frame["diverged"] if "diverged" in frame.columns else [None] * len(frame)
    for i, (value, flag) in enumerate(zip(loss, flags)):
        if np.isinf(value) and (missing(flag) or not bool(flag)):
            who = frame["run_id"].iloc[i] if "run_id" in frame.columns else f"row {i + 1}"
            raise UserError(
                f"{who}: final_eval_loss is {value} but the run is not marked diverged: "
                "a results.csv loss must be finite (or empty)"
            )


def _plain(value: Any) -> Any:
    """A hashable cell value: None for an empty cell, Python scalars for numpy's."""
    if missing(value):
        return None
    return value.item() if hasattr(value, "item") else value


def fill_from_configs(frame, sweep_dir: str | Path):
    """`frame` (results.csv of `sweep_dir`) with the DEFAULTED and FIXED cells it lacks taken
    from each run's config.json: results.csv lists a setting only when it is an axis."""
    frame = frame.copy()
    if "run_id" not in frame.columns:
        return frame
    runs = {r["run_id"]: r for r in records(read_runs(sweep_dir)) if r["path"] is not None}
    configs = [runs.get(str(run_id), {}) for run_id in frame["run_id"]]
    if text := [str(r) for r, c in zip(frame["run_id"], configs) if c.get("corpus")]:
        raise UserError(
            f"{Path(sweep_dir)}: {text[0]} trained on a corpus; the law is fitted on SpamLang cells, "
            "whose return time a corpus does not have"
        )
    for column in (*DEFAULTED, *FIXED, *SAME_AS):
        old = list(frame[column]) if column in frame.columns else [None] * len(frame)
        if any(map(missing, old)):
            frame[column] = [c.get(column) if missing(v) else v for v, c in zip(old, configs)]
    return frame
