"""The price of exposure accounting: the train step with and without its int32[V] counts.

Every step sorts each row's inputs, marks each id's first occurrence and scatter-adds those
marks into the member's counts (`spamlang.coverage.exposure`); with several devices the counts
also meet in one psum of V int32. Target: at most 3% of the step's time at V = 131,072.

Both programs are the same `spamlang.train.step.Program` except for `count_exposure`; they
are timed in alternating rounds in one process and each keeps its best round. Whole steps of
seconds differ by a few percent from round to round on a shared machine, more than the
counting costs, so the table also times the counting alone (the jitted update of the counts
from one batch of the same shape, best of many calls) as a share of the step.

    python benchmarks/bench_exposure.py            # tiny and small at V = 131,072 (minutes)
    python benchmarks/bench_exposure.py --quick    # a smoke run: small V, few steps
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: V = 4,096, few steps")
    parser.add_argument("--vocab", type=int, default=None, help="V (default 131,072)")
    parser.add_argument("--presets", default="tiny,small", help="comma-separated model presets")
    parser.add_argument("--steps", type=int, default=None, help="steps per timing round")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args(argv)

    from spamlang.perf import machine_line, step_timer
    from spamlang.train.config import TrainConfig
    from spamlang.train.step import Program

    vocab = args.vocab or (4096 if args.quick else 131072)
    steps = args.steps or (2 if args.quick else 5)
    rounds = args.rounds or (1 if args.quick else 3)
    seq, batch = 64, 32
    print(machine_line())
    print(
        f"# V {vocab:,}, seq {seq} x batch {batch}, best of {rounds} alternating rounds of "
        f"{steps} steps"
    )
    print(
        f"{'preset':>8} | {'ms/step counting':>16} | {'ms/step not':>11} | {'overhead':>8} | "
        f"{'counting alone':>14} | {'share':>6}"
    )
    for preset in args.presets.split(","):
        config = TrainConfig(
            preset=preset,
            vocab_size=vocab,
            seq_len=seq,
            batch_size=batch,
            tokens=seq * batch * 10**6,
            loss_chunk=512,
        )
        with_counts = step_timer(Program(config))
        without = step_timer(Program(config, count_exposure=False))
        with_counts(1), without(1)  # compile and warm up
        best_with = best_without = float("inf")
        for _ in range(rounds):
            best_with = min(best_with, with_counts(steps))
            best_without = min(best_without, without(steps))
        a, b = 1e3 * best_with / steps, 1e3 * best_without / steps
        c = 1e3 * _count_alone(config)
        print(
            f"{preset:>8} | {a:>16.1f} | {b:>11.1f} | {100 * (a / b - 1):>+7.1f}% | "
            f"{c:>11.3f} ms | {100 * c / b:>5.2f}%"
        )
    print("target: overhead <= +3%")
    return 0


def _count_alone(config, calls: int = 50) -> float:
    """Seconds of one exposure update (counts + one batch's sequence counts), best of `calls`."""
    import time

    import jax
    import jax.numpy as jnp

    from spamlang.coverage.exposure import count_batch

    tokens_BxL = config.make_language().sample(
        jax.random.PRNGKey(0), config.batch_size, config.seq_len
    )
    update = jax.jit(lambda counts, t: counts + count_batch(t, config.vocab_size), donate_argnums=0)
    counts = update(jnp.zeros(config.vocab_size, jnp.int32), tokens_BxL)
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        counts = jax.block_until_ready(update(counts, tokens_BxL))
        best = min(best, time.perf_counter() - start)
    return best


if __name__ == "__main__":
    sys.exit(main())
