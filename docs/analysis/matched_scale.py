"""The matched head LR scale of head_remedy: per cell and tying, head AMSGrad's post-warmup median
head_step_rms over AdamW's, each at its best LR, seed 0, so that a uniformly smaller head step
of the same size answers "is it just a smaller step?".

    python docs/analysis/matched_scale.py runs/head_remedy -o results/head_remedy/matched_scale.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

CELL = ["preset", "batch_size", "tokens", "tie_embeddings"]


def arm_of(row) -> str | None:
    """adamw or head_amsgrad for a run of the factorial's two arms, else None."""
    plain = row.b2 == 0.95 and pd.isna(row.get("head_b2")) and pd.isna(row.get("head_weight_decay"))
    plain = plain and not row.get("head_v_gated") and row.get("head_lr_scale", 1.0) == 1.0
    if not plain:
        return None
    return "head_amsgrad" if row.head_amsgrad else "adamw"


def matched(sweep: Path) -> pd.DataFrame:
    import spamlang.results

    runs = spamlang.results.load(sweep)
    runs["arm"] = runs.apply(arm_of, axis=1)
    runs = runs[runs.arm.notna()]
    seed_mean = runs.groupby([*CELL, "arm", "lr"]).final_eval_loss.mean().reset_index()
    best = seed_mean.loc[seed_mean.groupby([*CELL, "arm"]).final_eval_loss.idxmin()]
    metrics = spamlang.results.load_metrics(sweep)
    train = metrics[(metrics.kind == "train") & metrics.head_step_rms.notna()]
    out = []
    for key, cell in best.groupby(CELL):
        medians = {}
        for arm in ("adamw", "head_amsgrad"):
            lr = cell[cell.arm == arm].lr.iloc[0]
            run = runs[(runs[CELL] == pd.Series(key, CELL)).all(axis=1) & (runs.arm == arm)]
            run_id = run[(run.lr == lr) & (run.seed == 0)].run_id.iloc[0]
            rows = train[train.run_id == run_id]
            warm = run[run.run_id == run_id].iloc[0]
            after = rows[rows.step > warm.get("warmup_frac", 0.05) * warm.steps]
            medians[arm] = after.head_step_rms.median()
        ratio = medians["head_amsgrad"] / medians["adamw"]
        out.append(
            # 3 significant digits: the value names its runs (head_lr_scale4.93e-2).
            {**dict(zip(CELL, key)), "head_lr_scale": float(f"{ratio:.3g}")}
        )
    return pd.DataFrame(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    table = matched(args.sweep)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.output, index=False)
    print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
