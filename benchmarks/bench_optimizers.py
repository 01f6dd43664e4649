"""The price of each optimizer, and of tracking symbols' rows, per train step.

Every optimizer is the same `spamlang.train.step.Program` except for `optimizer` (adamw,
lazy_adamw, sgd, adafactor), plus adamw with `track_symbols` = 8 (the mechanism diagnostic:
a gather of 8 rows of each row table per step, `spamlang.coverage.tracking`). Each program
trains one member; they are timed in alternating rounds in one process, each keeps its best
round, and the table gives each as a ratio to adamw measured beside it (this machine is
shared, so absolute times drift more than the ratios).

Two shapes: the CPU experiments' (`tiny`, V = 4,096, L = 2, B = 32: 64 tokens per step,
dispatch-bound) and a compute-bound one (`small`, V = 16,384, L = 64, B = 32).

Measured (2-core AMD EPYC, matmul peak 149 GFLOP/s float32), ms/step and ratio to adamw:
  tiny  V 4,096  L 2:  adamw 1.56 (1.00), lazy_adamw 0.98, sgd 0.81, adafactor 1.30, tracked 1.07
  small V 16,384 L 64: adamw 254 (1.00), lazy_adamw 1.01, sgd 0.99, adafactor 0.92, tracked 0.99

    python benchmarks/bench_optimizers.py            # both shapes (a few minutes)
    python benchmarks/bench_optimizers.py --quick    # a smoke run: few steps
"""

from __future__ import annotations

import argparse
import sys

CASES = (("adamw", 0), ("lazy_adamw", 0), ("sgd", 0), ("adafactor", 0), ("adamw", 8))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: few steps, one round")
    parser.add_argument("--steps", type=int, default=None, help="steps per timing round")
    parser.add_argument("--rounds", type=int, default=None, help="alternating timing rounds")
    args = parser.parse_args(argv)

    from spamlang.perf import machine_line, step_timer
    from spamlang.train.config import TrainConfig
    from spamlang.train.step import Program

    rounds = args.rounds or (1 if args.quick else 5)
    shapes = [
        ("tiny", 4096, 2, args.steps or (5 if args.quick else 200)),
        ("small", 16384, 64, args.steps or (2 if args.quick else 10)),
    ]
    print(machine_line())
    print(f"# batch 32, best of {rounds} alternating rounds; ratio: ms/step over adamw's")
    print(
        f"{'preset':>6} | {'V':>6} | {'L':>3} | {'optimizer':>10} | {'tracked':>7} | "
        f"{'ms/step':>8} | {'ratio':>6}"
    )
    for preset, vocab, seq, steps in shapes:
        timers = []
        for name, tracked in CASES:
            config = TrainConfig(
                preset=preset,
                vocab_size=vocab,
                seq_len=seq,
                batch_size=32,
                tokens=seq * 32 * 10**6,
                optimizer=name,
                track_symbols=tracked,
                lr=1e-2 if name != "sgd" else 0.1,
            )
            timer = step_timer(Program(config))
            timer(1)  # compile and warm up
            timers.append(timer)
        best = [float("inf")] * len(CASES)
        for _ in range(rounds):
            for i, timer in enumerate(timers):
                best[i] = min(best[i], timer(steps))
        ms = [1e3 * b / steps for b in best]
        for (name, tracked), t in zip(CASES, ms):
            print(
                f"{preset:>6} | {vocab:>6} | {seq:>3} | {name:>10} | {tracked:>7} | "
                f"{t:>8.2f} | {t / ms[0]:>6.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
