"""A prediction in a line of text, and the column `spamlang sweep --dry-run` adds with it."""

from __future__ import annotations

import json
from typing import Any

from spamlang.errors import UserError
from spamlang.law.law import Prediction, shipped


def text(p: Prediction) -> str:
    """`0.0512`, or `0.0512 extrapolation: reason; reason` when the law is outside its range."""
    return f"{p.loss:.3g}" + (
        f" extrapolation: {'; '.join(p.extrapolation)}" if p.extrapolation else ""
    )


def dry_run_notes(points: list[tuple[str, Any]]) -> dict[str, str]:
    """{run id: the shipped law's prediction for its cell, as `text`} for a dry run's points;
    {} while the package ships no law, so that the dry run shows nothing of it. A point the
    law cannot read (not a TrainConfig) gets "?"."""
    law = shipped()
    if law is None:
        return {}
    notes, by_cell = {}, {}
    for run_id, config in points:
        try:  # one prediction per cell: its runs differ only in lr and seed
            data = config.to_json()
            key = json.dumps(
                {k: v for k, v in data.items() if k not in ("lr", "seed")},
                sort_keys=True,
                default=str,
            )
            if key not in by_cell:
                by_cell[key] = text(law.predict(config))
            notes[run_id] = by_cell[key]
        except (AttributeError, TypeError, UserError):
            notes[run_id] = "?"
    return notes


def cell_lines(law, cells: dict[str, Any]) -> list[str]:
    """One aligned line per cell ({label: a TrainConfig of it}): its label, the predicted
    loss, R, M, n, and the extrapolation mark where the law is outside its range."""
    rows = [(label, law.predict(config)) for label, config in cells.items()]
    width = max(len("cell"), *(len(label) for label, _ in rows))
    lines = [f"{'cell':<{width}}  {'loss':>8}  {'R':>8}  {'M':>8}  {'n':>8}"]
    for label, p in rows:
        mark = f"  extrapolation: {'; '.join(p.extrapolation)}" if p.extrapolation else ""
        lines.append(
            f"{label:<{width}}  {p.loss:>8.3g}  {p.R:>8.4g}  {p.M:>8.4g}  {p.n:>8.3g}{mark}"
        )
    return lines
