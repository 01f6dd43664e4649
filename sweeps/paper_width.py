"""The paper's head width on a small backbone: SpamLang at D = 576, 2 layers, V = 4,096 and 16,384.

The CPU sweeps run at D = 16-64, where V / D reaches 256 at V = 4,096. The paper's head is
D = 576 wide (SmolLM2-135M's shape) and its V / D runs from 1.8 to 228. This grid keeps that
width and the paper's block shape (`smollm2-106m`: 9 query / 3 KV heads of 64, d_ff 1,536,
RoPE base 1e5, init std 1 / sqrt(576)) but only 2 of its 30 layers, so that V / D = 7.1 and
28.4 run on a CPU, at equal updates per symbol: B = 128 and 16 updates per symbol, so 512
steps at V = 4,096 (return time 32 steps, as in `rank_width.py`) and 2,048 at V = 16,384
(return time 128).

Adam's b2 is 0.95 (the default) and 0.999 (the setting the optimizer sweeps found to learn
best: its memory of 1,000 steps outlasts both return times, where the default's 20 steps
falls short of both). If the D = 16 picture holds at the paper's width, b2 = 0.95 does worse
than 0.999 at both V; if the head's rank at D = 576 were still too low, neither would learn. Untied and tied, 2 seeds,
peak LRs 1e-3, 3e-3, 1e-2 with up to 2 more beyond an end of the grid where a cell's best sits.
AdamW (b1 0.9, weight decay 0.1 on matrices), 5% warmup then cosine to 0.1x, clipping at 1.0;
L = 2 (position invariant).

Cost: 1.43e15 training FLOPs for the 48 runs (`--dry-run`), 87% of them in the V = 16,384
cells: an accelerator job. `paper_width_cpu.py` is the slice that fits a 2-core CPU (V = 4,096,
untied), with its measured time.

Run: python sweeps/paper_width.py [--out DIR] [--shard i/n] [--dry-run]
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
