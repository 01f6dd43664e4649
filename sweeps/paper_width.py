"""The paper's head width on a small backbone: D = 576, 2 layers, V = 4,096 and 16,384.

16 updates per symbol at B = 128, b2 0.95 and 0.999, tied and untied, 2 seeds, bracketed LRs;
1.43e15 FLOPs, an accelerator job (`paper_width_cpu.py` is its CPU slice).
Run: python sweeps/paper_width.py [--out DIR] [--shard i/n] [--dry-run]
Findings: docs/findings.md, "Verdict, scoped by what was measured".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

BATCH = 128
UPDATES = 16  # B x steps / V, the same in every cell
SEQ_LEN = 2


def cell(vocab_size: int) -> list[int]:
    """(V, tokens, diag_every) of one cell: UPDATES x V / B steps of B rows of SEQ_LEN tokens,
    diagnosed every quarter of them."""
    steps = UPDATES * vocab_size // BATCH
    return [vocab_size, steps * BATCH * SEQ_LEN, steps // 4]


SWEEP = Sweep(
    name="paper_width",
    base=TrainConfig(
        preset="smollm2-106m",
        model={"n_layers": 2},
        language="spam",
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=UPDATES * 4096 * SEQ_LEN,  # each cell sets its own
        schedule="cosine",
        warmup_frac=0.05,
        final_lr_ratio=0.1,
        log_every=16,
        eval_sequences=2048,
        checkpoint_every=256,
    ),
    axes={
        "vocab_size,tokens,diag_every": [cell(4096), cell(16384)],
        "b2": [0.95, 0.999],
        "tie_embeddings": [False, True],
        "lr": [1e-3, 3e-3, 1e-2],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
