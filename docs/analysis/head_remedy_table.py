"""head_remedy per cell and arm: best LR (seed mean), min..max, the LR grid, and F where the mean
is below 0.5 nats and the seed range misses AdamW's (the verdict rule of the forecast).

    python docs/analysis/head_remedy_table.py results/head_remedy/results.csv \
        results/head_remedy_matched/results.csv
"""

import sys

import pandas as pd

WIDTHS = {"tiny": "D16 R128", "tiny-w32": "D32 R128", "tiny-w128": "D128 R512"}


def arm(run) -> str:
    """The arm of one run: its changes to AdamW at b2 0.95, joined by " + "."""
    parts = []
    if run.head_amsgrad:
        parts.append("head AMSGrad")
    if run.head_v_gated:
        parts.append("gated v")
    if not pd.isna(run.head_b2):
        parts.append("head b2 0.999")
    if run.b2 == 0.999:
        parts.append("global b2 0.999")
    if run.head_lr_scale in (1 / 3, 0.1, 1e-3):
        parts.append(f"head LR x{run.head_lr_scale:.3g}")
    elif run.head_lr_scale != 1.0:  # head_remedy_matched's S, one per cell and tying
        parts.append("head LR matched")
    if not pd.isna(run.head_weight_decay):
        parts.append("head wd 0")
    return " + ".join(parts) or "AdamW"


def table(runs: pd.DataFrame) -> pd.DataFrame:
    runs = runs.assign(
        arm=runs.apply(arm, axis=1),
        cell=runs.preset.map(WIDTHS) + runs.tie_embeddings.map({True: " t", False: " u"}),
    )
    seeds = runs.groupby(["cell", "arm", "lr"]).final_eval_loss.agg(["mean", "min", "max", "count"])
    rows = []
    for (cell, name), lrs in seeds.reset_index().groupby(["cell", "arm"]):
        best = lrs.loc[lrs["mean"].idxmin()]
        grid = sorted(lrs.lr)
        edge = "low edge" if best.lr == grid[0] else "high edge" if best.lr == grid[-1] else ""
        rows.append(
            dict(cell=cell, arm=name, lr=best.lr, mean=best["mean"], lo=best["min"],
                 hi=best["max"], seeds=int(best["count"]), grid=f"{grid[0]:g}..{grid[-1]:g}",
                 edge=edge)
        )  # fmt: skip
    out = pd.DataFrame(rows)
    adamw = out[out.arm == "AdamW"].set_index("cell")

    def verdict(row) -> str:
        if row.cell not in adamw.index:
            return "?"
        return "F" if row["mean"] < 0.5 and row.hi < adamw.loc[row.cell].lo else "N"

    return out.assign(verdict=out.apply(verdict, axis=1))


if __name__ == "__main__":
    pd.set_option("display.width", 200)
    runs = pd.concat([pd.read_csv(path) for path in sys.argv[1:]], ignore_index=True)
    # A sweep's results.csv holds the settings it varies: the others are AdamW's (the base's).
    base = {"head_amsgrad": False, "head_v_gated": False, "head_b2": None, "head_lr_scale": 1.0}
    runs = runs.assign(
        **{k: v for k, v in {**base, "head_weight_decay": None}.items() if k not in runs}
    )
    runs = runs.fillna({k: v for k, v in base.items() if v is not None})
    print(table(runs).to_string(index=False, float_format="{:.3g}".format))
