"""head_remedy's matched arm: the head's LR scaled by S, head AMSGrad's step size over AdamW's.

S per cell and tying is results/head_remedy/matched_scale.csv (`docs/analysis/matched_scale.py`),
committed before these runs; all else is head_remedy's (base, LRs, seeds, bracketing).
Findings: docs/findings.md, "A remedy"; forecast: results/forecasts/head_remedy_matched.md.

Run: python sweeps/head_remedy_matched.py [--out DIR] [--shard i/n] [--dry-run]
"""

import csv
import dataclasses
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import load_sweep_file

HERE = Path(__file__).resolve().parent
FACTORIAL = load_sweep_file(HERE / "head_remedy.py")[0]
CELL = "preset,batch_size,tokens,tie_embeddings,head_lr_scale"
with open(HERE.parent / "results" / "head_remedy" / "matched_scale.csv", newline="") as f:
    MATCHED = [
        [r["preset"], int(r["batch_size"]), int(r["tokens"]), r["tie_embeddings"] == "True"]
        + [float(r["head_lr_scale"])]
        for r in csv.DictReader(f)
    ]

SWEEP = dataclasses.replace(
    FACTORIAL,
    name="head_remedy_matched",
    axes={CELL: MATCHED, "lr": FACTORIAL.axes["lr"], "seed": FACTORIAL.axes["seed"]},
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
