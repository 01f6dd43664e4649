"""The paper's Figure 6 from our own models: kernel fraction against D/V at V = 1,024.

`tiny` at d_model 8-64 x heads softmax, lowrank:2, lowrank:4 x languages spam, branching, one LR
and seed, L = 64, diagnosed every 25 steps; then `spamlang plot bottleneck` (docs/guide/
bottleneck.md). Its figure was withdrawn: rerun with seeds and an LR grid before reading it.
Run: python sweeps/gradient_bottleneck.py [--out DIR] [--figure FILE]
"""

import argparse
import sys
from pathlib import Path

from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SWEEP = Sweep(
    name="gradient_bottleneck",
    base=TrainConfig(
        preset="tiny",
        vocab_size=1024,
        tie_embeddings=False,
        seq_len=64,
        batch_size=32,
        tokens=300 * 32 * 64,  # 614,400 tokens, 300 steps
        lr=1e-2,
        log_every=10,
        diag_every=25,
        checkpoint_every=300,  # one checkpoint, at the end (for `spamlang diagnose`)
    ),
    axes={
        "language": ["spam", "branching"],
        "model.d_model": [8, 16, 32, 64],
        "head": ["softmax", "lowrank:2", "lowrank:4"],
    },
)


def _figure_args(argv):
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--out", default=None)
    p.add_argument("--figure", default=None)
    p.add_argument("--dry-run", action="store_true")
    return p.parse_known_args(argv)


if __name__ == "__main__":
    known, rest = _figure_args(sys.argv[1:])
    sweep_argv = (
        rest
        + (["--out", known.out] if known.out else [])
        + (["--dry-run"] if known.dry_run else [])
    )
    status = main(SWEEP, sweep_argv)
    if status == 0 and not known.dry_run:
        from spamlang.plots.diagnostics import plot_bottleneck

        out = Path(known.out) if known.out else Path("runs") / SWEEP.name
        print(f"figure: {plot_bottleneck(out, known.figure or out / 'bottleneck.png')}")
    raise SystemExit(status)
