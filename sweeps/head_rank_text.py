"""The paper's Figure 1 at CPU scale: one backbone on real text, its LM head's rank cut.

`small` (D = 64, 2 layers) on the reference corpus (this interpreter's standard library, a
16K byte-level BPE: code, not prose), heads lowrank:4 ... lowrank:64 and the full softmax, the
backbone unchanged. L 64, B 16 (1,024 tokens a step), 2,048 steps (0.98 epoch), AdamW b2 0.95
(assumed: the paper's optimizer settings are not available), weight decay 0.1, cosine; 2 seeds,
LRs 1e-3, 3e-3, 1e-2 bracketed by up to 2 more. Eval every 128 steps on the first 32K val
tokens, and on all of val.bin at the end. One group (a head, K = 6 members) per shard:
`--shard i/6`. Findings: docs/findings.md, "Real text"; forecast: results/forecasts/.

Run: python sweeps/head_rank_text.py [--out DIR] [--shard i/6] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.corpus.tokenize import reference_corpus
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

CORPUS = reference_corpus("runs/corpora/stdlib16k", 16384)
TEXT = dict(corpus=CORPUS, seq_len=64, batch_size=16, tokens=2048 * 16 * 64)
CADENCE = dict(log_every=32, eval_every=128, checkpoint_every=256)

SWEEP = Sweep(
    name="head_rank_text",
    base=TrainConfig(preset="small", **TEXT, **CADENCE),
    axes={
        "head": ["lowrank:4", "lowrank:8", "lowrank:16", "lowrank:32", "lowrank:64", "softmax"],
        "lr": [1e-3, 3e-3, 1e-2],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
