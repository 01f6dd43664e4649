"""How long a sweep takes to expand its grid, by size: each point's config is built and
checked once per vmapped group, then shared by the group's LRs and seeds.

    python benchmarks/bench_sweep_expand.py
"""

from __future__ import annotations

import time

from spamlang.perf import machine_line
from spamlang.sweep import Sweep
from spamlang.train import TrainConfig

BASE = TrainConfig(vocab_size=64, seq_len=16, batch_size=8, tokens=8 * 16 * 10)


def main() -> None:
    print(machine_line())
    print("| points | groups | expand (s) | per point (us) |")
    print("|---|---|---|---|")
    for n_lr, n_seed, n_v in ((10, 10, 1), (100, 10, 10), (1000, 10, 10)):
        axes = {
            "vocab_size": [64 * (i + 1) for i in range(n_v)],
            "lr": [1e-4 * (1 + i) for i in range(n_lr)],
            "seed": list(range(n_seed)),
        }
        t0 = time.perf_counter()
        sweep = Sweep("bench", BASE, axes)
        points = sweep.points()
        seconds = time.perf_counter() - t0
        print(f"| {len(points):,} | {n_v} | {seconds:.2f} | {seconds / len(points) * 1e6:,.0f} |")


if __name__ == "__main__":
    main()
