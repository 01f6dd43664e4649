"""Forecasts: a law's prediction of every cell of a sweep, written as CSV before the sweep runs
(`spamlang law predict --csv`), and its comparison with what the sweep then measured, cell by
cell (`spamlang law compare`); or a law set beside a finished sweep's cells (`against`). The CSV names the law file by its sha256 and the git commit
that last changed it, so that a committed forecast can be shown to predate its runs.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any

from spamlang.errors import UserError

# A forecast CSV's columns, in order.
COLUMNS = (
    "cell",
    "predicted_loss",
    "predicted_class",
    "extrapolation",
    "R",
    "M",
    "n",
    "law_sha256",
    "law_commit",
)


# The predicted class of a cell outside the law's scope, where it predicts nothing.
NO_CLASS = "none"
# The columns `against` adds after a cell's label, and `spamlang law compare SWEEP_DIR` shows.
AGAINST_COLUMNS = (
    "predicted_loss",
    "predicted_class",
    "memory_ratio",
    "measured",
    "seeds",
    "best_lr",
    "class_measured",
    "error",
    "extrapolation",
)


def law_source(path: Path) -> dict[str, str]:
    """{"law_sha256": the file's hash, "law_commit": the git commit that last changed it, or
    "uncommitted" when the file differs from it, or "unknown" outside a git checkout}: which
    law made a forecast, so that a forecast can be shown to predate the runs it forecasts."""
    import hashlib
    import subprocess

    data = path.read_bytes()
    where = dict(cwd=path.parent, capture_output=True, text=True)
    try:
        last = subprocess.run(["git", "log", "-1", "--format=%H", "--", path.name], **where)
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", path.name], **where)
    except OSError:  # no git on this machine
        last = dirty = None
    if last is None or last.returncode or not last.stdout.strip():
        commit = "unknown"
    else:
        commit = last.stdout.strip() if dirty.returncode == 0 else "uncommitted"
    return {"law_sha256": hashlib.sha256(data).hexdigest(), "law_commit": commit}


def forecast_rows(law, cells: dict[str, Any], source: dict[str, str]) -> list[dict]:
    """One forecast row per cell ({label: a TrainConfig of it}): the prediction, its class
    (`fitting.classify`), why it extrapolates, R, M, n and the law's `source`."""
    from spamlang.law.fitting import classify

    rows = []
    for label, config in cells.items():
        p = law.predict(config)
        none = math.isnan(p.loss)  # outside the law's scope: flagged, no number
        rows.append(
            {
                "cell": label,
                "predicted_loss": "" if none else f"{p.loss:.4g}",
                "predicted_class": NO_CLASS if none else classify(p.loss, config.vocab_size),
                "extrapolation": "; ".join(p.extrapolation),
                "R": f"{p.R:.5g}",
                "M": f"{p.M:.5g}",
                "n": f"{p.n:.5g}",
                **source,
            }
        )
    return rows


def read(path: str | Path) -> list[dict]:
    """A forecast CSV's rows; UserError when it is absent or lacks a column."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise UserError(f"cannot read forecast {path}: {e}") from None
    absent = [c for c in ("cell", "predicted_loss", "predicted_class") if rows and c not in rows[0]]
    if not rows or absent:
        raise UserError(
            f"{path} is not a forecast ({'no rows' if not rows else 'no ' + ', '.join(absent)}): "
            "write one with `spamlang law predict SWEEP_FILE --csv FILE`"
        )
    return rows


def _fields(label: str) -> list[tuple[str, str]]:
    """A cell label's (axis field, value as written) pairs: `preset=tiny-w32 b2=0.95`."""
    return [] if label == "base" else re.findall(r"(\S+?)=(\S+)", label)


def _matches(value: Any, written: str) -> bool:
    """Does a results.csv value equal a label's value (written as `law predict` writes it)?"""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, str):
        return value == written
    try:
        return json.dumps(value) == written or float(value) == float(written)
    except (TypeError, ValueError):
        return False


def compare(rows: list[dict], frame) -> list[dict]:
    """Each forecast row with what the sweep's results.csv (`frame`, a DataFrame) measured in its
    cell: the best LR's seed-mean final eval loss, its seeds' min and max, the seeds, the best
    LR and the LRs tried, the measured class and the error log(L_pred + 0.01) - log(L + 0.01);
    measured None for a cell with no finished run yet. A label field names a results.csv
    column, or its model field (model.n_layers: n_layers)."""
    from spamlang.law.fitting import classify
    from spamlang.law.formula import log_loss

    out = []
    for row in rows:
        mine = frame
        for name, written in _fields(row["cell"]):
            column = name if name in frame.columns else name.removeprefix("model.")
            if column not in frame.columns:
                raise UserError(f"cell {row['cell']!r}: results.csv has no column {column!r}")
            mine = mine.loc[[_matches(v, written) for v in mine[column]]]
        if "diverged" in mine.columns:  # a diverged seed has no loss to average
            mine = mine.loc[[d is not True and d != 1 for d in mine["diverged"]]]
        losses = mine.groupby("lr")["final_eval_loss"] if len(mine) else None
        means = losses.mean().dropna() if losses is not None else None
        predicted = float(row["predicted_loss"] or "nan")
        got = {"measured": None, "low": None, "high": None, "seeds": 0, "best_lr": None, "lrs": ""}
        if means is not None and len(means):
            best = float(means.idxmin())
            seeds = mine[mine["lr"] == best]["final_eval_loss"]
            V = int(mine["vocab_size"].iloc[0])
            got = {
                "measured": float(means.min()),
                "low": float(seeds.min()),
                "high": float(seeds.max()),
                "seeds": int(seeds.size),
                "best_lr": best,
                "lrs": " ".join(f"{lr:g}" for lr in sorted(means.index)),
                "class_measured": classify(float(means.min()), V),
                "error": float(log_loss(predicted) - log_loss(means.min())),
            }
        out.append({**row, **got})
    return out


def against(law, frame) -> list[dict]:
    """A finished sweep's cells (`frame`: its results.csv, settings filled in) beside what `law`
    predicts for each: rows with "cell" (the settings that differ between the sweep's cells,
    `name=value ...`; "base" for one cell) and AGAINST_COLUMNS, in `compare`'s shape so that
    `summary` counts them. Runs outside the law's scope are left out with a warning."""
    from spamlang.law.cells import cells
    from spamlang.law.fitting import classify
    from spamlang.law.formula import log_loss

    table = cells(frame)
    fixed = ("loss", "best_lr", "seeds", "R", "M", "n")
    varied = [
        c
        for c in table.columns
        if c not in fixed and table[c].astype(str).nunique() > 1 and c != "preset"
    ]
    out = []
    for cell in table.to_dict("records"):
        p = law.predict_row(cell)
        label = " ".join(f"{c}={written(cell[c])}" for c in varied) or "base"
        measured, V = float(cell["loss"]), int(cell["vocab_size"])
        none = math.isnan(p.loss)
        out.append(
            {
                "cell": label,
                "predicted_loss": p.loss,
                "predicted_class": NO_CLASS if none else classify(p.loss, V),
                "memory_ratio": p.memory_ratio,
                "measured": measured,
                "seeds": int(cell["seeds"]),
                "best_lr": float(cell["best_lr"]),
                "class_measured": classify(measured, V),
                "error": math.nan if none else float(log_loss(p.loss) - log_loss(measured)),
                "extrapolation": "; ".join(p.extrapolation),
            }
        )
    return out


def written(value: Any) -> str:
    """A setting as a cell label writes it (as `law predict` does: JSON but for strings)."""
    if hasattr(value, "item"):
        value = value.item()
    return value if isinstance(value, str) else json.dumps(value)


def summary(compared: list[dict]) -> str:
    """One line: how many measured cells the forecast classified right, and its RMS error,
    over all and over the cells of each measured class."""
    from spamlang.law.fitting import CLASSES

    measured = [r for r in compared if r["measured"] is not None]
    done = [r for r in measured if r["predicted_class"] != NO_CLASS]
    if not done:
        return f"0 of {len(compared)} cells measured (and predicted) yet"
    right = sum(r["class_measured"] == r["predicted_class"] for r in done)
    optimistic = sum(r["error"] < 0 for r in done if r["class_measured"] != r["predicted_class"])
    unpredicted = len(measured) - len(done)

    def rms(rows: list[dict]) -> float:
        return math.sqrt(sum(r["error"] ** 2 for r in rows) / len(rows))

    by_class = {c: [r for r in done if r["class_measured"] == c] for c in CLASSES}
    return (
        f"{len(done)} of {len(compared)} cells measured"
        + (f" ({unpredicted} more outside the law's scope)" if unpredicted else "")
        + f": {right} classified right "
        f"({len(done) - right - optimistic} pessimistic and {optimistic} optimistic misses), "
        f"RMS error {rms(done):.2f} in log(L + 0.01) ("
        + ", ".join(f"{c} {rms(rows):.2f} over {len(rows)}" for c, rows in by_class.items() if rows)
        + ")"
    )
