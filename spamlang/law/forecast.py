"""Forecasts: a law's prediction of every cell of a sweep, written as CSV before the sweep runs
(`spamlang law predict --csv`), and its comparison with what the sweep then measured, cell by
cell (`spamlang law compare`); or a law set beside a finished sweep's cells (`against`). The CSV
names the law file by its sha256 and the git commit that last changed it, so that a committed
forecast can be shown to predate its runs.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any

from spamlang.errors import UserError
from spamlang.law.law import written

COLUMNS = tuple(
    "cell predicted_loss predicted_class extrapolation R M n law_sha256 law_commit".split()
)

NO_CLASS = "none"  # the predicted class outside the law's scope
_FIELD = re.compile(r"[^\s=]+=\S+")
# The columns `against` adds after a cell's label, and `spamlang law compare SWEEP_DIR` shows.
AGAINST_COLUMNS = tuple(
    "predicted_loss predicted_class memory_ratio measured seeds best_lr class_measured error "
    "extrapolation".split()
)


def law_source(path: Path) -> dict[str, str]:
    """{"law_sha256", "law_commit"} of a law file: what made a forecast."""
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
    """One forecast row per cell ({label: a TrainConfig of it})."""
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
    """A forecast CSV's rows; UserError naming the file (and line) otherwise."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = [(reader.line_num, row) for row in reader]  # line_num: the row's last line
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise UserError(f"cannot read forecast {path}: {e}") from None
    first = rows[0][1] if rows else {}
    absent = [c for c in ("cell", "predicted_loss", "predicted_class") if rows and c not in first]
    if not rows or absent:
        raise UserError(
            f"{path} is not a forecast ({'no rows' if not rows else 'no ' + ', '.join(absent)}): "
            "write one with `spamlang law predict SWEEP_FILE --csv FILE`"
        )
    lines: dict[str, int] = {}
    for line, row in rows:
        _check_row(row, f"{path} line {line}")
        if row["cell"] in lines:
            raise UserError(
                f"{path} line {line}: cell {row['cell']!r} again (first on line "
                f"{lines[row['cell']]}): a forecast names each cell once"
            )
        lines[row["cell"]] = line
    return [row for _, row in rows]


def _check_row(row: dict, where: str) -> None:
    """UserError (`where: ...`) unless `row` is a forecast row."""
    from spamlang.fields import as_float, in_range, one_of
    from spamlang.law.fitting import CLASSES

    label = row["cell"] or ""
    if label != "base" and not (label.split() and all(map(_FIELD.fullmatch, label.split()))):
        raise UserError(f"{where}: cell {label!r} is not `name=value ...` (or base)")
    kind = one_of("predicted_class", row["predicted_class"], (*CLASSES, NO_CLASS), owner=where)
    loss = row["predicted_loss"] or ""
    if (loss.strip() == "") != (kind == NO_CLASS):
        raise UserError(
            f"{where}: predicted_loss {loss!r} with predicted_class {kind}: a forecast leaves "
            f"the loss empty exactly where the class is {NO_CLASS} (outside the law's scope)"
        )
    if kind != NO_CLASS:
        in_range("predicted_loss", as_float("predicted_loss", loss, owner=where), ge=0, owner=where)


def _fields(label: str) -> list[tuple[str, str]]:  # `preset=tiny-w32 b2=0.95`: its pairs
    return [] if label == "base" else re.findall(r"(\S+?)=(\S+)", label)


def _matches(value: Any, written: str) -> bool:
    """Does a results.csv value equal a label's value as `law predict` writes it?"""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, str):
        return value == written
    try:
        return json.dumps(value) == written or float(value) == float(written)
    except (TypeError, ValueError):
        return False


def compare(rows: list[dict], frame) -> list[dict]:
    """Each forecast row with what results.csv (`frame`) measured in its cell at the one best-LR
    rule (measured None: no finished run). A label field names a column, or its model field; one
    the table lacks, or text for numbers, is a UserError."""
    import pandas as pd
    from pandas.api.types import is_numeric_dtype

    from spamlang.law.fitting import classify
    from spamlang.law.formula import error
    from spamlang.rundir.reading import best_over

    out = []
    for row in rows:
        mine = frame
        for name, text in _fields(row["cell"]):
            column = name if name in frame.columns else name.removeprefix("model.")
            if column not in frame.columns:
                raise UserError(f"cell {row['cell']!r}: results.csv has no column {column!r}")
            if is_numeric_dtype(frame[column]) and not _number_text(text):
                raise UserError(
                    f"cell {row['cell']!r}: {name} {text!r} is not a number, and results.csv's "
                    f"{column} holds numbers"
                )
            mine = mine.loc[[_matches(v, text) for v in mine[column]]]
        loss = pd.to_numeric(mine["final_eval_loss"], errors="coerce").to_numpy(float, copy=True)
        if "diverged" in mine.columns:  # a diverged seed has no loss to average
            loss[[d is True or d == 1 for d in mine["diverged"]]] = math.nan
        runs = pd.DataFrame({"cell": 0, "lr": mine["lr"].to_numpy(float), "loss": loss})
        best = best_over(runs, "cell", "lr", "loss")
        predicted = float(row["predicted_loss"] or "nan")
        got = {"measured": None, "low": None, "high": None, "seeds": 0, "best_lr": None, "lrs": ""}
        if len(best):
            b = best.iloc[0]
            got = {
                "measured": float(b["mean"]),
                "low": float(b["min"]),
                "high": float(b["max"]),
                "seeds": int(b["count"]),
                "best_lr": float(b["lr"]),
                "lrs": " ".join(f"{lr:g}" for lr in sorted(set(runs.dropna()["lr"]))),
                "class_measured": classify(float(b["mean"]), int(mine["vocab_size"].iloc[0])),
                "error": float(error(predicted, b["mean"])),
            }
        out.append({**row, **got})
    return out


def _number_text(written: str) -> bool:
    """Is a label's value a number, a flag (true) or unset (null) as JSON writes it?"""
    try:
        value = json.loads(written)
    except ValueError:
        return False
    return value is None or isinstance(value, (int, float))


def against(law, frame) -> list[dict]:
    """A finished sweep's cells beside what `law` predicts for each, in `compare`'s shape."""
    from spamlang.law.cells import cells
    from spamlang.law.fitting import classify
    from spamlang.law.formula import error

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
                "error": math.nan if none else float(error(p.loss, measured)),
                "extrapolation": "; ".join(p.extrapolation),
            }
        )
    return out


def summary(compared: list[dict]) -> str:
    """One line: the measured cells classified right, and the RMS error, over all and per class."""
    from spamlang.law.fitting import CLASSES
    from spamlang.law.formula import ERROR_UNIT

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
        f"RMS error {rms(done):.3f} in {ERROR_UNIT} ("
        + ", ".join(f"{c} {rms(rows):.3f} over {len(rows)}" for c, rows in by_class.items() if rows)
        + ")"
    )
