"""The paper's Figure 5 grid at 16 updates per symbol for every V: B grows with V (8 ... 1,024).

The same 106M model, V x LR x tying (80 runs), 2,048 steps, L = 2; removes unseen symbols as a
cause of the large-V failure. Cost: benchmarks/README.md.
Run: python sweeps/paper_fig5_coverage.py [--out DIR] [--shard i/n] [--group-size K]
Findings: docs/findings.md, "The law's forecast for the paper's grid".
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

UPDATES_PER_SYMBOL = 16
STEPS = 2_048
SEQ_LEN = 2


def cell(vocab_size: int) -> list[int]:
    """(V, batch, tokens): STEPS x batch = UPDATES_PER_SYMBOL x V rows of SEQ_LEN tokens."""
    batch = UPDATES_PER_SYMBOL * vocab_size // STEPS
    return [vocab_size, batch, STEPS * batch * SEQ_LEN]


SWEEP = Sweep(
    name="paper_fig5_coverage",
    base=TrainConfig(
        preset="smollm2-106m",
        language="spam",
        seq_len=SEQ_LEN,
        batch_size=64,  # each cell sets its own
        tokens=STEPS * 64 * SEQ_LEN,
        schedule="cosine",
        dtype="bfloat16",
        loss_chunk=4_096,
        log_every=25,
        eval_every=256,
        eval_sequences=2048,
        checkpoint_every=512,
    ),
    axes={
        "vocab_size,batch_size,tokens": [cell(2**e) for e in range(10, 18)],
        "lr": [1e-4, 2.5e-4, 5e-4, 1e-3, 2e-3],
        "tie_embeddings": [True, False],
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
