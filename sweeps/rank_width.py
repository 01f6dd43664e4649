"""Is it the head? The head's rank against the backbone's width, at fixed updates per symbol.

A wider model has a wider head (rank D) and a bigger backbone at once, so `coverage_width.py`
could not say which of the two made D = 64 learn where D = 16 failed. Here the head's rank r
moves apart from the backbone width d: `lowrank:r` (W = A B, rank r <= d, its init scaled so
that the initial logits do not depend on r) below d, `softmax` at r = d, and the wide
nonlinear head `mlp:r` (logits = gelu(h B^T) A^T, rank up to r, not capped by d) above it;
`mlp:16` at d = 16 is the nonlinearity alone, at the softmax's rank. The narrow-embedding
control trains d = 64 with a 16-wide input embedding projected up (`embed_dim` = 16), so that
the input table's capacity and the backbone's width are told apart.

  d (backbone, width family)   heads (rank r)
  16 (tiny-w16)                lowrank:4, softmax (16), mlp:16, mlp:64
  64 (tiny-w64)                lowrank:4, lowrank:16, softmax (64)
  64, embedding 16 wide        softmax (64)

- If the head's rank sets the result, (d = 64, r = 16) fails like (d = 16, r = 16), and
  (d = 16, r = 64) with the wide head learns like d = 64.
- If backbone capacity sets it, the loss follows d whatever r is.

V = 4,096 at 16 updates per symbol: B = 128 for 512 steps (the coverage sweeps' cell, return
time 32 steps). Adam's b2 is 0.95 (the default; its 20-step memory is below the return time)
and 0.999 (the setting the optimizer sweeps found to learn best), so the head's effect is not
hidden behind the optimizer's. Untied (a low-rank or mlp head has its own A), 2 seeds, peak
LRs 1e-2, 3e-2, 1e-1 with up to 2 more beyond an end of the grid where a cell's best sits.
AdamW (b1 0.9, weight decay 0.1 on matrices), 5% warmup then cosine to 0.1x, clipping at 1.0;
L = 2. Every run logs the kernel fraction at init, every 128 steps and at the end, and reports
its per-symbol sample complexity (updates_to_learn) and head_rank. What else moves: along d
the backbone's capacity (and the input embedding's width, except in the control); along r
the head's parameter count (V r + r d).

A d = 32 column (lowrank:16, softmax, mlp:256) and mlp:256 at d = 16 and 64 were in this grid
until commit b3d64c1 (36 min 05 s with them, over the 20 minutes aimed at); they left it so
that it fits 20 minutes on two cores, and the README keeps their numbers, marked as from
that grid (to rerun it: `git show b3d64c1:sweeps/rank_width.py > rank_width_13.py`).

Read it with
  spamlang plot heatmap runs/rank_width -o rank_width.png --x d_model --y head_rank \\
      --best-over lr --cols b2 --where 'head!=mlp:16' ... (see figures/README.md)

Run: python sweeps/rank_width.py [--out DIR] [--shard i/n] [--dry-run]
"""

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

VOCAB = 4096
BATCH = 128
STEPS = 512  # B x steps / V = 16 updates per symbol
SEQ_LEN = 2


def cell(d: int, head: str, embed: int | None = None) -> list:
    """(preset, head, embed_dim) of one cell; embed_dim = d is the plain embedding."""
    return [f"tiny-w{d}", head, embed or d]


CELLS = [
    cell(16, "lowrank:4"),
    cell(16, "softmax"),
    cell(16, "mlp:16"),
    cell(16, "mlp:64"),
    cell(64, "lowrank:4"),
    cell(64, "lowrank:16"),
    cell(64, "softmax"),
    cell(64, "softmax", embed=16),
]

SWEEP = Sweep(
    name="rank_width",
    base=TrainConfig(
        vocab_size=VOCAB,
        tie_embeddings=False,
        language="spam",
        seq_len=SEQ_LEN,
        batch_size=BATCH,
        tokens=STEPS * BATCH * SEQ_LEN,
        schedule="cosine",
        warmup_frac=0.05,
        final_lr_ratio=0.1,
        log_every=16,
        eval_sequences=2048,
        diag_every=STEPS // 4,
        checkpoint_every=0,  # one checkpoint, at the end
    ),
    axes={
        "preset,head,model.embed_dim": CELLS,
        "b2": [0.95, 0.999],
        "lr": [1e-2, 3e-2, 1e-1],
        "seed": [0, 1],
    },
    bracket_lr=2,
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
