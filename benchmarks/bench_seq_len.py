"""Train-step time against sequence length on SpamLang: what a run at L = 2 saves over L = 64.

With RoPE every position of a SpamLang sequence has position 0's hidden state, so a run at
L = 2 (one predicted position per sequence) is the run at L = 64 up to float rounding
(tests/test_position_invariance.py): a longer sequence only multiplies the compute. This
prices it: the compiled train step (`spamlang.train.step.Program`, as `spamlang train` runs
it: auto kernels and micro-batches, the fused loss in chunks of 256, AdamW with clipping,
exposure counting) of tied SpamLang runs at batch 32 and L = 2, 16 and 64, for `tiny` at
V = 1,024 and 4,096 and `small` at V = 4,096. Milliseconds per step in steady state: each
program is compiled and warmed up first, then the three lengths are timed in alternating
rounds of a fixed number of steps (blocking on the result at the end of each round), and each
keeps its best round, so that a machine shared with other work biases none of them.
Target: time(L=2) / time(L=64) <= 1/8 once compiled.

    python benchmarks/bench_seq_len.py            # the full table (about 2 minutes on 2 cores)
    python benchmarks/bench_seq_len.py --quick    # a smoke run: fewer steps and rounds
"""

from __future__ import annotations

import argparse
import sys

CASES = (("tiny", 1024), ("tiny", 4096), ("small", 4096))
LENGTHS = (2, 16, 64)
BATCH = 32
TARGET = 1 / 8  # time(L=2) / time(L=64)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: few steps, one round")
    parser.add_argument("--steps", type=int, default=None, help="steps per timing round")
    parser.add_argument("--rounds", type=int, default=None, help="alternating timing rounds")
    args = parser.parse_args(argv)

    from spamlang.perf import machine_line, step_timer
    from spamlang.train.config import TrainConfig
    from spamlang.train.step import Program

    steps = args.steps or (3 if args.quick else 20)
    rounds = args.rounds or (1 if args.quick else 5)
    print(machine_line())
    print(
        f"# SpamLang train step, tied, batch {BATCH}; ms per step, best of {rounds} alternating "
        f"rounds of {steps} steps"
    )
    lengths = " ".join(f"{f'L={L}':>8}" for L in LENGTHS)
    print(
        f"{'preset':>6} {'V':>6} | {'micro-batches':>13} | {lengths} | {'L=2 / L=64':>10} | target"
    )
    worst = 0.0
    for preset, vocab in CASES:
        programs = {}
        for L in LENGTHS:
            # A budget of a million steps: the step compiled does not depend on it.
            config = TrainConfig(
                preset=preset,
                vocab_size=vocab,
                tie_embeddings=True,
                seq_len=L,
                batch_size=BATCH,
                tokens=L * BATCH * 10**6,
            )
            programs[L] = Program(config)
        timers = {L: step_timer(p) for L, p in programs.items()}
        for run in timers.values():
            run(2)  # compile and warm up
        best = {L: float("inf") for L in LENGTHS}
        for _ in range(rounds):
            for L, run in timers.items():
                best[L] = min(best[L], run(steps))
        ms = {L: 1e3 * best[L] / steps for L in LENGTHS}
        ratio = ms[2] / ms[64]
        worst = max(worst, ratio)
        micro = "/".join(str(programs[L].n_micro) for L in LENGTHS)
        times = " ".join(f"{ms[L]:>8.2f}" for L in LENGTHS)
        print(
            f"{preset:>6} {vocab:>6,} | {micro:>13} | {times} | {f'1/{1 / ratio:.1f}':>10} | "
            f"{'ok' if ratio <= TARGET else 'MISSED'}",
            flush=True,
        )
    print(f"target: L=2 / L=64 <= 1/{1 / TARGET:.0f}; worst 1/{1 / worst:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
