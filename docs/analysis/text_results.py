"""The real-text sweeps' tables: Figure 1's token multipliers (head_rank_text) and each arm's
loss rise with a token's absence (text_memory), from a sweep's committed export.

    python docs/analysis/text_results.py runs/head_rank_text --export results/head_rank_text
    python docs/analysis/text_results.py results/head_rank_text     # the tables only
    python docs/analysis/text_results.py results/text_memory results/head_rank_text
    python docs/analysis/text_results.py results/text_remedy results/head_rank_text

With a second export, its softmax runs join as the arm they share a config with (text_memory's
AdamW b2 0.95 is Figure 1's softmax group, run once).

--export writes results.csv, curves.csv (every eval row) and buckets.csv (result.json's
target_buckets rows) of the finished runs: small files that the tables are read from."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

# The rise: val loss of tokens last a target >= OLD steps before the end, minus 1-15 steps.
OLD, RECENT = 128, (1, 16)
RARE = ((16, 32), (32, 64), (64, 128))  # training-count buckets of the forecast
FREQUENT = 1024  # count from which a token is frequent


def export(runs: Path, out: Path) -> None:
    import spamlang.results

    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(runs / "results.csv", out / "results.csv")
    metrics = spamlang.results.load_metrics(runs)
    evals = metrics[metrics["kind"] == "eval"]
    cols = ["run_id", "step", "tokens", "eval_loss", "val_start_loss"]
    evals[cols].to_csv(out / "curves.csv", index=False)
    rows = []
    for run_id in pd.read_csv(out / "results.csv")["run_id"]:
        result = json.loads((runs / run_id / "result.json").read_text())
        for row in (result.get("target_buckets") or {}).get("rows", []):
            rows.append({"run_id": run_id, **row})
    pd.DataFrame(rows).to_csv(out / "buckets.csv", index=False)
    print(f"wrote {out}/results.csv, curves.csv, buckets.csv")


def best(results: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Each cell's best LR (lowest seed-mean final eval loss), its seed mean, min and max,
    and whether the best LR is interior to the cell's grid."""
    seeds = results.groupby([*by, "lr"]).final_eval_loss.agg(["mean", "min", "max", "count"])
    out = []
    for key, cell in seeds.groupby(level=by):
        lrs = cell.index.get_level_values("lr")
        top = cell["mean"].idxmin()
        lr = top[-1]
        interior = lrs.min() < lr < lrs.max()
        key = key if isinstance(key, tuple) else (key,)
        out.append(
            {**dict(zip(by, key)), "lr": lr, **cell.loc[top].to_dict(), "interior": interior}
        )
    cells = pd.DataFrame(out)
    if "head" in by:  # by rank, as Figure 1's legend: lowrank:4, 8, ..., softmax last
        rank = cells["head"].str.extract(r":(\d+)$")[0].astype(float).fillna(np.inf)
        cells = cells.iloc[rank.argsort(kind="stable")].reset_index(drop=True)
    return cells


def multipliers(folder: Path, results: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """Figure 1's x: tokens a head needs to reach the softmax head's loss at a quarter of its
    tokens, over that quarter, on the seed-mean val_start_loss curves at each best LR."""
    curves = pd.read_csv(folder / "curves.csv").merge(results[["run_id", "head", "lr"]])
    mean = curves.groupby(["head", "lr", "tokens"]).val_start_loss.mean()
    soft = cells[cells["head"] == "softmax"].iloc[0]
    total = mean.loc["softmax", soft["lr"]].index.max()
    quarter = total / 4
    target = float(np.interp(quarter, *_xy(mean.loc["softmax", soft["lr"]])))
    out = []
    for _, cell in cells.iterrows():
        tokens, loss = _xy(mean.loc[cell["head"], cell["lr"]])
        below = np.nonzero(loss <= target)[0]
        if len(below) == 0:
            x = f"> {total / quarter:.0f}"
        else:
            i = below[0]  # the first eval at or below; interpolated in tokens from the one before
            t = (
                tokens[i]
                if i == 0
                else np.interp(target, [loss[i], loss[i - 1]], tokens[[i, i - 1]])
            )
            x = f"{t / quarter:.2f}"
        out.append({"head": cell["head"], "x": x})
    print(f"softmax at a quarter ({quarter:,.0f} tokens): {target:.3f} nats")
    return pd.DataFrame(out)


def _xy(series: pd.Series):
    return series.index.to_numpy(float), series.to_numpy(float)


def rises(folder: Path, results: pd.DataFrame, cells: pd.DataFrame, arm: list[str]) -> pd.DataFrame:
    """Per arm at its best LR, seed means: each rare count bucket's rise, and the frequent
    tokens' val loss."""
    buckets = pd.read_csv(folder / "buckets.csv").merge(results[["run_id", *arm, "lr", "seed"]])
    out = []
    for _, cell in cells.iterrows():
        mine = buckets[(buckets[arm] == cell[arm]).all(axis=1) & (buckets["lr"] == cell["lr"])]
        row = {**{a: cell[a] for a in arm}, "lr": cell["lr"], "final": cell["mean"]}
        for lo, hi in RARE:
            per_seed = [_rise(b, lo, hi) for _, b in mine.groupby("seed")]
            row[f"rise {lo}-{hi - 1}"] = (
                f"{np.mean(per_seed):+.3f} ({min(per_seed):+.2f}..{max(per_seed):+.2f})"
            )
        freq = mine[mine["count_lo"] >= FREQUENT]
        row["frequent"] = float(
            (freq.val_loss * freq.val_targets)
            .groupby(freq.seed)
            .sum()
            .div(freq.val_targets.groupby(freq.seed).sum())
            .mean()
        )
        out.append(row)
    return pd.DataFrame(out)


def _rise(b: pd.DataFrame, lo: int, hi: int) -> float:
    cell = b[(b.count_lo >= lo) & (b.count_hi <= hi) & b.age_lo.notna()]

    def mean(part):
        return float((part.val_loss * part.val_targets).sum() / part.val_targets.sum())

    old = cell[cell.age_lo >= OLD]
    recent = cell[(cell.age_lo >= RECENT[0]) & (cell.age_hi <= RECENT[1])]
    return mean(old) - mean(recent) if len(old) and len(recent) else float("nan")


def _joined(folder: Path, also: Path, results: pd.DataFrame, joined: Path) -> Path:
    """An export in `joined`: `folder`'s files plus `also`'s softmax runs, with the arm columns
    they lack at the base config's values (the runs' config.json is not in an export)."""
    extra = pd.read_csv(also / "results.csv")
    extra = extra[extra["head"] == "softmax"]
    for col in ("head_amsgrad",):
        if col in results.columns and col not in extra.columns:
            extra[col] = False
    pd.concat([results, extra]).to_csv(joined / "results.csv", index=False)
    for name in ("curves.csv", "buckets.csv"):
        pd.concat([pd.read_csv(folder / name), pd.read_csv(also / name)]).to_csv(
            joined / name, index=False
        )
    return joined


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "folder", type=Path, help="a sweep's runs/ folder (with --export) or its export"
    )
    parser.add_argument(
        "also", type=Path, nargs="?", help="an export whose softmax runs join as one more arm"
    )
    parser.add_argument("--export", type=Path, default=None, help="write the export here first")
    args = parser.parse_args(argv)
    folder = args.folder
    if args.export:
        export(folder, args.export)
        folder = args.export
    if args.also:
        with tempfile.TemporaryDirectory() as joined:
            tables(_joined(folder, args.also, pd.read_csv(folder / "results.csv"), Path(joined)))
    else:
        tables(folder)
    return 0


def tables(folder: Path) -> None:
    results = pd.read_csv(folder / "results.csv")
    if "head_b2" in results.columns:  # unset: the head's b2 is the run's
        results["head_b2"] = results["head_b2"].fillna(results["b2"])
    pd.set_option("display.width", 200)
    arms = [c for c in ("head_amsgrad", "b2", "head_b2") if c in results.columns]
    if "head_amsgrad" in arms or "head_b2" in arms or results["b2"].nunique() > 1:
        arm = arms
        cells = best(results, arm)
        print(cells.to_string(index=False))
        print(rises(folder, results, cells, arm).to_string(index=False))
    else:
        cells = best(results, ["head"])
        print(cells.to_string(index=False))
        print(multipliers(folder, results, cells).to_string(index=False))


if __name__ == "__main__":
    sys.exit(main())
