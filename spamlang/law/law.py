"""`Law`: fitted constants, their standard errors and the range they were fitted on; its
predictions, each flagged when it leaves that range, as text; saved and loaded as JSON."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from spamlang.errors import UserError
from spamlang.law import formula
from spamlang.law.cells import DEFAULTED, FIXED, SAME_AS, SCOPE, moved, row_inputs
from spamlang.rundir.reading import read_named_json

# Bumped when the file's meaning changes; a file of another format is refused, not misread.
FORMAT = 5
SHIPPED = "fitted.json"  # the package's own law, next to this module
# How far past its fitted widths the law may go unflagged: D enters through one slope.
WIDTH_FACTOR = 2.0
# Numeric inputs a prediction must stay within (inclusive, at the fit's min and max).
RANGED = ("V", "R", "M", "n", "n_layers")
# Settings the law knows only at the values its cells had.
COVERED = ("language", "optimizer", "head", "sampling", "tie_embeddings", "decayed")
# A relative slack on the range's ends, so a cell of the fit is never flagged for rounding.
_SLACK = 1e-9
# A standard error above this (a factor over e^10) means the cells do not pin a constant down.
UNPINNED = 10.0


@dataclasses.dataclass(frozen=True)
class Prediction:  # one predicted cell: the loss and why it should not be trusted
    loss: float  # the best-LR seed-mean final eval loss, in [0, log V]; NaN out of scope
    extrapolation: tuple[str, ...]  # why the cell is outside the fitted range; () inside
    R: float  # return time V / B, in steps
    M: float  # Adam's memory min(1 / (1 - b2), steps), in steps
    n: float  # updates per symbol B x steps / V
    memory_ratio: float = math.nan  # c M / R, the boundary at 1; NaN out of scope


@dataclasses.dataclass(frozen=True)
class Law:
    """The fitted formula (`spamlang.law.formula`) and what it was fitted on."""

    constants: dict[str, float]  # formula.NAMES -> value
    errors: dict[str, float | None]  # standard error of each; None: held at 0 (not fitted)
    cells: int  # cells (best-LR seed means) the fit used
    rms: float  # RMS residual in the natural log(L + 0.01), as files store it; shown in log10
    ranges: dict[str, list[float]]  # "D" and RANGED -> [min, max] seen in the fit
    covered: dict[str, list]  # COVERED -> the values seen in the fit
    sources: list[str] = dataclasses.field(default_factory=list)  # what it was fitted on

    def predict_row(self, row: Mapping[str, Any]) -> Prediction:
        """The prediction for a results.csv row (missing columns: TrainConfig's defaults)."""
        x = row_inputs(row)
        scope = out_of_scope(row, x)
        loss = ratio = math.nan
        if not scope:
            features = formula.features_of(x)
            loss = float(formula.loss(self.constants, features))
            ratio = float(formula.memory_ratio(self.constants, features))
        return Prediction(loss, scope + self.outside(x), x["R"], x["M"], x["n"], ratio)

    def predict(self, config) -> Prediction:
        """The prediction for a `TrainConfig` (its lr and seed do not matter)."""
        fields = ("vocab_size", "batch_size", "steps", *DEFAULTED, *FIXED, *SAME_AS)
        row = {f: getattr(config, f) for f in fields}
        model = config.model_config()
        return self.predict_row({**row, "d_model": model.d_model, "n_layers": model.n_layers})

    def outside(self, x: Mapping[str, Any]) -> tuple[str, ...]:
        """Why the inputs `x` (`row_inputs`) leave the fitted range, in words; () inside."""
        values = {**x, "decayed": x["weight_decay"] > 0}
        reasons = [
            f"{name} {written(values[name])} (fitted: {', '.join(map(written, seen))})"
            for name in COVERED
            if values[name] not in (seen := self.covered[name]) and name not in SCOPE
        ]
        lo, hi = self.ranges["D"]
        if lo == hi != x["d_model"]:  # one width: c_D is not fitted, D is not in the law
            reasons.append(f"D {x['d_model']} (fitted: {lo:g} alone)")
        elif not lo / WIDTH_FACTOR <= x["d_model"] <= hi * WIDTH_FACTOR:
            reasons.append(
                f"D {x['d_model']} more than {WIDTH_FACTOR:g}x beyond the fitted "
                f"widths {lo:g}-{hi:g}"
            )
        named = {"V": x["vocab_size"], **{k: x[k] for k in RANGED if k != "V"}}
        for name in RANGED:
            lo, hi = self.ranges[name]
            if not lo * (1 - _SLACK) <= named[name] <= hi * (1 + _SLACK):
                reasons.append(f"{name} {named[name]:.5g} outside the fitted {lo:.5g}-{hi:.5g}")
        return tuple(reasons)

    def unpinned(self) -> tuple[str, ...]:
        """The fitted constants whose standard error exceeds UNPINNED (or is not finite)."""
        return tuple(n for n, e in self.errors.items() if e is not None and not e <= UNPINNED)

    def unpinned_text(self) -> str:
        return ", ".join(
            f"{n} = {self.constants[n]:+.4g} ± {self.errors[n]:.2g}" for n in self.unpinned()
        )

    def to_json(self) -> dict:
        return {"format": FORMAT, **dataclasses.asdict(self)}

    def save(self, path: str | Path) -> Path:
        """Write the law as JSON (atomically) to `path`, in an existing folder."""
        from spamlang.rundir.atomic import atomic_write_text, check_output_file

        path = check_output_file(path)
        atomic_write_text(path, json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n")
        return path

    @classmethod
    def from_json(cls, data: Any, where: str = "law") -> Law:
        """Inverse of `to_json`; UserError naming `where` for anything else."""
        if not isinstance(data, dict) or data.get("format") != FORMAT or "kind" in data:
            raise UserError(
                f"{where}: not a spamlang law file of format {FORMAT} (older formats and the "
                "retired symbol law are no longer read; docs/findings.md keeps their history)"
            )
        names = [f.name for f in dataclasses.fields(cls)]
        absent = sorted(set(names) - set(data))
        if (
            absent
            or not isinstance(data["constants"], dict)
            or set(data["constants"]) != set(formula.NAMES)
        ):
            raise UserError(
                f"{where}: not a complete law (missing {', '.join(absent) or 'constants'})"
            )
        problem = _invalid(data, formula.NAMES)
        if problem:
            raise UserError(f"{where}: not a valid law: {problem}")
        return cls(**{n: data[n] for n in names})

    def __str__(self) -> str:
        lines = [
            formula.FORMULA,
            "",
            f"fitted on {self.cells} cells"
            + (f" of {', '.join(self.sources)}" if self.sources else "")
            + f"; RMS error {formula.in_error_unit(self.rms):.3f} in {formula.ERROR_UNIT}",
        ]
        for name in formula.NAMES:
            value, error = self.constants[name], self.errors[name]
            lines.append(
                f"  {name:<7} = {value:+.4g}"
                + (f" ± {error:.2g}" if error is not None else f"  (not fitted: {self._why(name)})")
            )
        lines.append(self.summary_line())
        lines.append(
            "range: "
            + "; ".join(
                [f"{n} {self.ranges[n][0]:.5g}-{self.ranges[n][1]:.5g}" for n in ("D", *RANGED)]
                + [f"{n} {', '.join(map(written, self.covered[n]))}" for n in COVERED]
            )
            + f" (D flagged beyond {WIDTH_FACTOR:g}x its range)"
        )
        return "\n".join(lines)

    def _why(self, name: str) -> str:
        feature = formula.FEATURE_OF[name]
        ranged = {"log_return": ("R",), "width_share": ("D", "V"), "inverse_width": ("D",)}
        ranged = ranged.get(feature, ())
        if any(self.ranges[r][0] < self.ranges[r][1] for r in ranged):
            if feature == "inverse_width":  # `fitting.MIN_WIDTHS`: 2 widths give one slope
                return "the cells had fewer than 3 widths, or the law's file predates this term"
            return "the law's file predates this term"
        return f"every cell had the same {formula.FEATURE_WORDS[feature]}"

    def summary_line(self) -> str:
        """The constants in words: c untied and tied, and the boundary's steepness s."""
        c = math.exp(self.constants["c0"])
        at = [
            f"D = {formula.D_REF}" if self.errors["c_D"] is not None else "the fitted width",
            "no weight decay" if self.errors["c_wd"] is not None else "the fitted weight decay",
        ]
        return (
            f"  c = {c:.3g} untied, {c * math.exp(self.constants['c_tied']):.3g} tied "
            f"at {' and '.join(at)}; steepness s = {math.exp(self.constants['log_s']):.3g} "
            f"at R = {formula.R_REF}, x (R / {formula.R_REF})^{self.constants['s_R']:.3g}; "
            f"c x {math.exp(self.constants['c_DV'] / 10):.3g} where D / V = 0.1; "
            f"l(n) x {self.level_factor(256):.3g} at D = 256 against D = {formula.D_REF}"
        )

    def level_factor(self, D: float) -> float:
        """How much l(n) at width D exceeds l(n) at D_REF, other settings equal."""
        x = formula.features(1, 1, 1, 1, [D, formula.D_REF], False, False)
        near, ref = formula.log_level(self.constants, x)
        return math.exp(near - ref)


def _number(value: Any) -> bool:  # finite and real (a bool is not one)
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _invalid(data: dict, names: tuple[str, ...]) -> str:
    """What makes a complete law file's values unusable, in words ("" when nothing does)."""
    constants, errors = data["constants"], data["errors"]
    bad = [n for n in names if not _number(constants[n])]
    if bad:
        return f"constant(s) {', '.join(bad)} not a finite number"
    if not isinstance(errors, dict) or set(errors) != set(names):
        return "errors must name every constant"
    bad = [n for n, e in errors.items() if e is not None and not (_number(e) and e >= 0)]
    if bad:
        return f"error(s) of {', '.join(bad)} neither null nor a finite number >= 0"
    if not (_number(data["cells"]) and data["cells"] >= 1 and _number(data["rms"])):
        return "cells must be a count >= 1 and rms a finite number"
    ranges, covered = data["ranges"], data["covered"]
    if not isinstance(ranges, dict) or not isinstance(covered, dict):
        return "ranges and covered must be objects"
    for name in ("D", *RANGED):
        span = ranges.get(name)
        if not (
            isinstance(span, list)
            and len(span) == 2
            and all(map(_number, span))
            and 0 < span[0] <= span[1]
        ):
            return f"ranges.{name} must be [min, max] with 0 < min <= max"
    for name in COVERED:
        if not isinstance(covered.get(name), list) or not covered[name]:
            return f"covered.{name} must be a non-empty list of the values fitted"
    if not isinstance(data["sources"], list):
        return "sources must be a list"
    return ""


def out_of_scope(row: Mapping[str, Any], x: Mapping[str, Any]) -> tuple[str, ...]:
    """Why a cell is outside what the formula is a law of, in words; () inside."""
    reasons = [
        f"{name} {written(x[name])} (the law covers {', '.join(allowed)})"
        for name, allowed in SCOPE.items()
        if x[name] not in allowed
    ]
    reasons += [
        f"{name} {written(value)} (the law covers {name} {written(covered)} alone)"
        for name, value, covered in moved(row, x)
    ]
    return tuple(reasons)


def written(value: Any) -> str:
    """A setting as a cell label writes it: JSON but for strings."""
    if hasattr(value, "item"):
        value = value.item()
    return value if isinstance(value, str) else json.dumps(value)


def shipped_path():  # an importlib.resources Traversable
    return resources.files(__package__).joinpath(SHIPPED)  # spamlang.law


def load(path: str | Path | None = None) -> Law:
    """The law saved at `path`, else the shipped one; UserError without one."""
    source = shipped_path() if path is None else Path(path)
    if not source.is_file():
        raise UserError(
            f"no such law file: {path}"
            if path is not None
            else "spamlang ships no fitted law yet: fit one with `spamlang law fit "
            "SWEEP_DIR... -o law.json` and pass it with --law law.json"
        )
    return Law.from_json(read_named_json(source, source), str(source))


def shipped() -> Law | None:
    """The package's own law, or None while it ships none."""
    return load() if shipped_path().is_file() else None


def shown(loss: float) -> str:
    """A predicted loss as text: `0.0512`, or `-` for NaN."""
    return "-" if math.isnan(loss) else f"{loss:.3g}"


def text(p: Prediction) -> str:
    """`0.0512`, or `0.0512 extrapolation: reason; reason` outside the law's range."""
    return shown(p.loss) + (
        f" extrapolation: {'; '.join(p.extrapolation)}" if p.extrapolation else ""
    )


def dry_run_notes(points: list[tuple[str, Any]]) -> dict[str, str]:
    """{run id: the shipped law's prediction for its cell} ({} without a law; "?": unreadable)."""
    law = shipped()
    if law is None:
        return {}
    notes, by_cell = {}, {}
    for run_id, config in points:
        try:  # one prediction per cell: its runs differ only in lr and seed
            data = config.to_json()
            if data.get("corpus"):  # real text has no return time: nothing to predict
                notes[run_id] = "-"
                continue
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


LEGEND = (
    "# loss: best-LR seed-mean final eval loss (nats); R = V / B: steps between a symbol's "
    "returns; M = min(1 / (1 - b2), steps): Adam's memory in steps; n = B x steps / V: "
    "updates per symbol"
)


def cell_lines(law, cells: dict[str, Any]) -> list[str]:
    """LEGEND, a header, then one aligned line per cell: loss, R, M, n and any extrapolation."""
    rows = [(label, law.predict(config)) for label, config in cells.items()]
    width = max(len("cell"), *(len(label) for label, _ in rows))
    lines = [
        LEGEND,
        f"{'cell':<{width}}  {'loss':>8}  {'R':>8}  {'M':>8}  {'n':>8}",
    ]
    for label, p in rows:
        mark = f"  extrapolation: {'; '.join(p.extrapolation)}" if p.extrapolation else ""
        lines.append(
            f"{label:<{width}}  {shown(p.loss):>8}  {p.R:>8.4g}  {p.M:>8.4g}  {p.n:>8.3g}{mark}"
        )
    return lines
