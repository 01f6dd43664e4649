"""The price of exposure accounting: the counting alone as a share of the train step.

Every step sorts each row's inputs, marks each id's first occurrence and scatter-adds those
marks into the member's counts (`spamlang.coverage.exposure`); with several devices the counts
also meet in one psum of V int32. Target: at most 3% of the step's time at V = 131,072.

Whole steps of seconds differ by a few percent from round to round on a shared machine, more
than the counting costs, so a step with and without it would measure noise: the table times
the counting alone (the jitted update of the counts from one batch of the step's shape, best
of many calls) and the whole step as every run takes it (`spamlang.train.step.Program`, best
of a few rounds), and reports the first as a share of the second.

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
    print(f"# V {vocab:,}, seq {seq} x batch {batch}, best of {rounds} rounds of {steps} steps")
    print(f"{'preset':>8} | {'ms/step':>9} | {'counting alone':>14} | {'share':>6}")
    for preset in args.presets.split(","):
        config = TrainConfig(
            preset=preset,
            vocab_size=vocab,
            seq_len=seq,
            batch_size=batch,
            tokens=seq * batch * 10**6,
            loss_chunk=512,
        )
        timer = step_timer(Program(config))
        timer(1)  # compile and warm up
        a = 1e3 * min(timer(steps) for _ in range(rounds)) / steps
        c = 1e3 * _count_alone(config)
        print(f"{preset:>8} | {a:>9.1f} | {c:>11.3f} ms | {100 * c / a:>5.2f}%")
    print("target: share <= 3%")
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
