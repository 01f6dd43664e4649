"""What the checkpoint checksums cost per save, at the paper's shape.

Every save computes one 32-bit checksum per array of the train state on the device
(`spamlang.rundir.checkpoint.checksums`) and stores them in the checkpoint's metadata; a
restore recomputes them. This prints the checksum time beside the whole save's (orbax write
included, to a local temporary directory) for the `smollm2-106m` model untied at V = 16,384
(params + AdamW moments + the exposure counts, float32), each the median of `--reps` saves.

    python benchmarks/bench_checkpoint.py [--vocab-size 16384] [--reps 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import jax

from spamlang.perf import machine_line
from spamlang.rundir.checkpoint import RunCheckpoints, checksums
from spamlang.train import TrainConfig
from spamlang.train.step import program


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab-size", type=int, default=16384)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    config = TrainConfig(
        preset="smollm2-106m", vocab_size=args.vocab_size, seq_len=64, batch_size=8, tokens=8 * 64
    )
    prog = program(config)
    state = prog.init_member(config.seed, config.lr)
    jax.block_until_ready(state)
    n_bytes = sum(x.nbytes for x in jax.tree.leaves(state))
    checksums(state)  # compile once
    sums, saves = [], []
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = RunCheckpoints(tmp, keep=1)
        for rep in range(args.reps):
            t0 = time.perf_counter()
            checksums(state)
            sums.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            ckpt.save(rep + 1, state, {"final": False})  # checksums included
            saves.append(time.perf_counter() - t0)
        ckpt.close()
    checksum_s, save_s = statistics.median(sums), statistics.median(saves)
    print(machine_line())
    print(
        f"# smollm2-106m untied, V = {args.vocab_size:,}: train state "
        f"{n_bytes / 2**30:.2f} GiB in {len(jax.tree.leaves(state))} arrays; "
        f"median of {args.reps}"
    )
    print("| checksums (s) | whole save (s) | checksums / save |")
    print("|---|---|---|")
    print(f"| {checksum_s:.3f} | {save_s:.3f} | {checksum_s / save_s:.1%} |")


if __name__ == "__main__":
    main()
