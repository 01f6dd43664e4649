"""Each head row's step clipped at a long memory: does bounding how far a row moves per step
change what b2 = 0.999 learns?

At b2 = 0.999 (memory 1,000 steps, past the return time of 128) the default cell learns under
plain Adam (results/memory_width, D = 16, B = 32: 0.47 untied, 0.045 tied at its best LR 1e-2).
With `head_row_clip` each head row's Adam step (before the LR and the schedule scale it) is
rescaled to RMS 0.45 when larger, so no row moves more than 0.45 x lr in RMS per step, whatever
its second moment: Adam's first step on a row is about +-1 per entry (RMS about 1), so the clip
bounds the pull a symbol gets when it appears and the push-down of its logit while it is away
alike. Only the head (the output matrix's V rows; the embedding when tied) is clipped; every
other parameter keeps plain Adam.

V = 4,096, B = 32 (return time 128 steps), 16 updates per symbol (2,048 steps), model `tiny` (D
= 16), AdamW b1 0.9, b2 0.999, weight decay 0.1 on matrices, 5% warmup then cosine to 0.1x,
global clipping at 1.0; tied and untied; 2 seeds (3 in partial cells); peak LRs 3e-3, 1e-2, 3e-2
(centred on plain Adam's best) with up to 2 more beyond an end where a cell's best sits; L = 2;
exact evaluation. It is one cell of `memory_width.py`: that sweep's runs of the cell are the
unclipped twins (the same configs but for `head_row_clip`; their run ids lack its piece).

2 groups of 6 members, 12 runs before bracketing, seeds 0 and 1 (`--only '*seed[01]'`). Seed 2
ran only for the partial cell (untied), at the grid's LRs:
  python sweeps/head_clip.py --only '*-untied-*seed2'

Read it with (results/memory_width holds the unclipped runs)
  spamlang plot lines runs/head_clip -o head_clip.png --x lr --y final_eval_loss \\
      --color tie_embeddings

Run: python sweeps/head_clip.py [--out DIR] [--shard i/n] [--dry-run]
"""

import dataclasses
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import load_sweep_file

# The grid's file sits next to this one, loaded by path: sweeps/ is not a package.
PLAIN = load_sweep_file(Path(__file__).with_name("memory_width.py"))[0]
CELL = ["tiny", 32]  # D = 16 at B = 32: preset and batch of the default cell

SWEEP = dataclasses.replace(
    PLAIN,
    name="head_clip",
    axes={
        "preset,batch_size,tokens": [
            c for c in PLAIN.axes["preset,batch_size,tokens"] if c[:2] == CELL
        ],
        "tie_embeddings": [True, False],
        "head_row_clip": [0.45],
        "b2": [0.999],
        "lr": [3e-3, 1e-2, 3e-2],
        "seed": [0, 1, 2],  # seed 2: partial cells only (docstring)
    },
)

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
