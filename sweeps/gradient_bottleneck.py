"""The paper's Figure 6 from our own models: kernel fraction against D/V at a fixed vocabulary.

At V = 1,024, the `tiny` model's depth (2 layers, 2 heads, 1 KV head, d_ff 64) at four widths
d_model = 8, 16, 32, 64, each with three untied heads: softmax (head rank D), and lowrank:2 and
lowrank:4 (head rank r; the paper's section 3.1 control), so the head rank spans D/V = 1/512 to
1/16. On SpamLang and on `branching` (b = 2: a language with a non-zero floor whose contexts
have two next tokens, so the logit gradient does not vanish at the optimum). One learning rate
(1e-2, the best of the CPU demo at these V for untied heads), seq 64, batch 32, 300 steps
(614,400 tokens), AdamW with warmup + cosine (TrainConfig defaults). Every run logs
`spamlang.diagnostics.diag_metrics` (kernel fraction, projected cosine, per-layer gradient
norms) every 25 steps, on a fixed batch of the run's language.

2 languages x 4 widths x 3 heads = 24 runs.
Cost: ~5-20 s per run on two CPU cores (a diag call costs about 1.5 training steps, so
diag_every = 25 adds ~6%); about 5-8 minutes in all. No accelerator needed.

Writes runs/gradient_bottleneck/ (run directories with "diag" rows, results.csv) and then the figure
(`spamlang plot bottleneck`): kernel fraction at the end of training against D/V, with
sqrt(1 - D/V) for reference, and kernel fraction against training tokens per V.

Run: python sweeps/gradient_bottleneck.py [--out DIR] [--figure FILE]
     (default FILE: <out>/bottleneck.png)
(Its figure was withdrawn from figures/: one LR, one seed, L = 64 and a sampled evaluation
are not this package's protocol any more; rerun with seeds and an LR grid before reading it.)
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
