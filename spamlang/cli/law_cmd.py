"""`spamlang law fit|predict|compare|validate`: the law (`spamlang.law`) from the command line:
fit it on sweeps, predict a sweep file's cells (and write the forecast), compare a forecast with
what its sweep measured, test the law sweep by sweep."""

from __future__ import annotations

import argparse
import csv
import io
import sys
from pathlib import Path

from spamlang.errors import UserError
from spamlang.rundir.atomic import atomic_write_text, check_output_file

_FORMULA_HELP = (
    "The law predicts a SpamLang cell's best-LR seed-mean final eval loss from its return time "
    "R = V / B, Adam's memory M = min(1 / (1 - b2), steps) and its updates per symbol "
    "n = B x steps / V: the symbols never shown (exp(-n) of them) are at chance log V, and so is "
    "a cell whose return time passes c M (a share 1 / (1 + (c M / R)^s); under epoch orders "
    "max(0, 1 - c M / R)); the rest is at a n^-k, with c log-linear in tying, width, weight "
    "decay, depth and D / V, a in tying, width (log D and 1 / D) and weight decay "
    "(`python -c 'import spamlang.law.formula as f; print(f.FORMULA)'`)."
)


def _frames(paths: list[str]) -> dict[str, object]:
    """{name: results.csv of each sweep or run directory among `paths`, filled from its runs'
    config.json}; an existing path that is neither is skipped with a note."""
    import spamlang.results
    from spamlang.law import fill_from_configs
    from spamlang.rundir.reading import is_run
    from spamlang.rundir.schema import RESULTS_FILE

    dirs = []
    for path in paths:
        p = Path(path)
        if p.exists() and not (p.is_dir() and ((p / RESULTS_FILE).is_file() or is_run(p))):
            print(f"note: skipped {path}: not a sweep or run directory", file=sys.stderr)
            continue
        dirs.append(path)
    if not dirs:
        raise UserError(f"no sweep or run directory among {', '.join(paths)}")
    frames = {}
    names = [Path(d).resolve().name for d in dirs]  # or the path, where two names clash
    names = [n if names.count(n) == 1 else str(d) for n, d in zip(names, dirs)]
    for name, d in zip(names, dirs):
        frame = spamlang.results.load(d)
        if len(frame) == 0:  # said with its directory, which the law's own message cannot
            raise UserError(f"{d}: no finished run in its results.csv: nothing to fit")
        frames[name] = fill_from_configs(frame, d)
    return frames


def _fit(args: argparse.Namespace) -> int:
    from spamlang.law import fit

    if args.output:  # a bad output path fails before the fit, not after
        check_output_file(args.output)
    frames = _frames(args.dirs)
    law = fit(list(frames.values()), sources=list(frames))
    print(law)
    if args.output:
        print(f"wrote {law.save(args.output)}")
    return 0


def _predict(args: argparse.Namespace) -> int:
    from spamlang.law import load
    from spamlang.law.forecast import forecast_rows, law_source
    from spamlang.law.law import cell_lines, shipped_path
    from spamlang.sweep import load_sweep_file

    if args.csv:  # a bad output path fails before anything is read
        check_output_file(args.csv)
    law = load(args.law)
    sweep, _, _ = load_sweep_file(args.file)
    cells = _cells(sweep)
    print("\n".join(cell_lines(law, cells)))
    if args.csv:
        source = law_source(Path(args.law) if args.law else Path(str(shipped_path())))
        rows = forecast_rows(law, cells, source)
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        atomic_write_text(args.csv, buf.getvalue())
        print(f"wrote {Path(args.csv)}")
    return 0


def _cells(sweep) -> dict[str, object]:
    """{label: first config} per cell (lr and seed collapsed), labelled by its axis fields."""
    from spamlang.law.forecast import written
    from spamlang.sweep.spec import config_field, fields_of

    names = [n for axis in sweep.axes for n in fields_of(axis) if n not in ("lr", "seed")]
    cells: dict[str, object] = {}
    for _, config in sweep.points():
        data = config.to_json()
        shown = [written(config_field(data, n)) for n in names]
        cells.setdefault(" ".join(f"{n}={v}" for n, v in zip(names, shown)) or "base", config)
    return cells


def _compare(args: argparse.Namespace) -> int:
    import pandas as pd

    from spamlang.law import forecast, load
    from spamlang.law.formula import ERROR_COLUMN

    if len(args.paths) > 2:
        raise UserError("law compare takes [FORECAST_CSV] SWEEP_DIR: at most two paths")
    *csv_file, sweep_dir = args.paths
    frame = next(iter(_frames([sweep_dir]).values()))
    if csv_file:
        if args.law:
            raise UserError("--law is for comparing a sweep with a law, not with a forecast")
        compared = forecast.compare(forecast.read(csv_file[0]), frame)
        columns = ["cell", "predicted_loss", "predicted_class", "measured", "low", "high"]
        columns += ["seeds", "best_lr", "lrs", "class_measured", "error"]
    else:
        compared = forecast.against(load(args.law), frame)
        columns = ["cell", *forecast.AGAINST_COLUMNS]
    shown = pd.DataFrame.from_records(compared)[columns].rename(columns={"error": ERROR_COLUMN})
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.3g}", na_rep="-"))
    print(forecast.summary(compared))
    return 0


def _validate(args: argparse.Namespace) -> int:
    from spamlang.law import leave_one_out, summary
    from spamlang.law.fitting import TABLE_COLUMNS
    from spamlang.law.formula import ERROR_COLUMN, ERROR_UNIT, LOG_OFFSET
    from spamlang.plots.validation import plot_validation

    if args.output:
        from spamlang.plots.canvas import check_figure_path

        check_figure_path(args.output)
    table = leave_one_out(_frames(args.dirs))
    settings = ["vocab_size", "batch_size", "steps", "d_model", "tie_embeddings", "weight_decay"]
    shown = table[["sweep", *settings, "M", *TABLE_COLUMNS[1:]]]
    shown = shown.rename(columns={"error": ERROR_COLUMN})
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print()
    print(f"per sweep, each rms (over all cells, then each measured class's) in {ERROR_UNIT}:")
    print(summary(table).to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    if args.output:
        print(f"wrote {plot_validation(table, args.output, LOG_OFFSET)}")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "law",
        help="fit, apply and test the law of a cell's loss (return time vs Adam's memory)",
        description=_FORMULA_HELP,
    )
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    fit = kinds.add_parser(
        "fit",
        help="fit the law on finished sweeps and print it",
        description="Fit the law on the best-LR seed-mean final eval loss of every cell of the "
        "given sweeps (SpamLang, Adam-family optimizers, softmax head; other runs "
        "are left out with a warning) and print it: each constant with its "
        "standard error, the range it was fitted on. " + _FORMULA_HELP,
    )
    fit.add_argument(
        "dirs",
        nargs="+",
        metavar="RUN_OR_SWEEP_DIR",
        help="sweep output directories (or single runs) holding finished runs",
    )
    fit.add_argument(
        "-o",
        "--output",
        metavar="LAW_JSON",
        help="also write the law to this JSON file, in an existing folder",
    )
    fit.set_defaults(func=_fit)
    predict = kinds.add_parser(
        "predict",
        help="predict every cell of a sweep file before running it",
        description="Print one line per cell of a sweep file (its runs' lr and seed collapsed): "
        "the predicted best-LR seed-mean loss, the return time R, Adam's memory M and the "
        "updates per symbol n, and 'extrapolation: reasons' where the cell is outside the range "
        "the law was fitted on (another language, optimizer or head, a width more than 2x beyond "
        "the fitted ones, V, R, M or n beyond theirs). Nothing is trained.",
    )
    predict.add_argument(
        "file", metavar="SWEEP_FILE", help="sweeps/NAME.py or a .json sweep description"
    )
    predict.add_argument(
        "--law",
        metavar="LAW_JSON",
        help="a law written by `spamlang law fit -o` (default: the law the package ships)",
    )
    predict.add_argument(
        "--csv",
        metavar="FORECAST_CSV",
        help="also write the forecast as CSV, one row per cell: cell, predicted_loss, "
        "predicted_class (learned < 0.1 log V, failed > 0.5 log V, else partial), "
        "extrapolation, R, M, n, the law file's sha256 and the git commit that last "
        "changed it ('uncommitted' when it differs from that commit; commit the "
        "forecast before the sweep runs: results/forecasts/NAME.csv)",
    )
    predict.set_defaults(func=_predict)
    compare = kinds.add_parser(
        "compare",
        help="predicted against measured, cell by cell: a committed forecast, or a law",
        description="With FORECAST_CSV: read a forecast written by `law predict --csv` before "
        "its sweep ran and the sweep's results, and print per cell the predicted loss and class "
        "beside the measured best-LR seed mean (with its seeds' min and max, the best LR and the "
        "LRs tried), the measured class and the error in log10(L + 0.01) (error_log10: "
        "log10(predicted + 0.01) - log10(measured + 0.01)); cells with no finished run yet show "
        "'-'. With SWEEP_DIR alone: the same for every cell of a finished sweep against the law "
        "(--law, or the shipped one), with the law's memory_ratio (c M / R, the boundary at 1) "
        "and the reasons a cell is outside its range; a cell outside its scope (another "
        "optimizer, head or language) shows no prediction. The last line counts the cells "
        "classified right (learned < 0.1 log V, failed > 0.5 log V, else partial) and gives the "
        "RMS error, over all cells and over those of each measured class.",
    )
    compare.add_argument(
        "paths",
        nargs="+",
        metavar="[FORECAST_CSV] SWEEP_DIR",
        help="results/forecasts/NAME.csv (optional), then the sweep's directory (results.csv)",
    )
    compare.add_argument(
        "--law",
        metavar="LAW_JSON",
        help="without a forecast: the law to compare with (default: the law the package ships)",
    )
    compare.set_defaults(func=_compare)
    validate = kinds.add_parser(
        "validate",
        help="leave-one-sweep-out test of the law",
        description="Fit the law on all sweeps but one and predict that one's cells, for each "
        "sweep in turn; print every cell (measured, predicted, error in log10(L + 0.01) "
        "(error_log10), class learned / partial / failed at 0.1 and 0.5 log V, extrapolation) "
        "and per sweep the RMS error, the fraction classified correctly, and the RMS error over "
        "the cells of each measured class (rms_learned, rms_partial, rms_failed).",
    )
    validate.add_argument(
        "dirs", nargs="+", metavar="SWEEP_DIR", help="at least two sweep output directories"
    )
    validate.add_argument(
        "-o",
        "--output",
        metavar="FIGURE",
        help="also draw predicted against measured (log axes, one colour per "
        "sweep) to this .png or .pdf",
    )
    validate.set_defaults(func=_validate)
