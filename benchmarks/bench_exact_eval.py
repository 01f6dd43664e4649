"""The price of exact evaluation: every symbol scored once (V x 2 tokens) against the sampled
eval set, timed on this machine and counted in FLOPs at the paper's 106M shape.

A SpamLang eval at L = 2 is just the V symbols, so the exact evaluation scores each of them once
on `s s` (`spamlang.evaluate.exact`); the sampled one scores `eval_sequences` sequences of L
tokens with greedy decoding. Both are timed as the jitted evaluation of one member (best of
`--rounds` calls after a compiling one), side by side in one process. The FLOPs columns count
the forward passes with `spamlang.perf.flops_per_token` (matmuls and attention, 2 FLOPs per
multiply-add), and compare them with one training run of the paper's budget (41M tokens,
3 x the forward's FLOPs per token).

    python benchmarks/bench_exact_eval.py            # V = 4,096, 16,384, 131,072 (minutes)
    python benchmarks/bench_exact_eval.py --quick    # a smoke run: V = 1,024
"""

from __future__ import annotations

import argparse
import time
from functools import partial


def _best(fn, rounds: int) -> float:
    import jax

    jax.block_until_ready(fn())  # compile
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - t)
    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: V = 1,024")
    parser.add_argument("--rounds", type=int, default=3, help="timed calls per cell (best kept)")
    parser.add_argument("--preset", default="tiny", help="model preset timed on this machine")
    args = parser.parse_args(argv)

    from spamlang.perf import flops_per_token, machine_line
    from spamlang.train.config import TrainConfig
    from spamlang.train.step import Program

    print(machine_line())
    print(
        f"# timed: preset {args.preset}, one member, best of {args.rounds} calls; sampled: "
        f"2,048 sequences of L = 2 with greedy decoding"
    )
    print(f"{'V':>9} | {'exact s':>8} | {'sampled s':>9} | {'ratio':>6}")
    for vocab in [1024] if args.quick else [4096, 16384, 131072]:
        config = TrainConfig(
            preset=args.preset,
            vocab_size=vocab,
            seq_len=2,
            batch_size=256,
            tokens=2 * 256 * 10,
            loss_chunk=256,
        )
        exact = Program(config)
        sampled = Program(config.replace(language="noisy-spam", language_params={"eps": 0.0}))
        state = exact.init([0], [1e-3])
        t_exact = _best(
            partial(exact.evaluation._symbols, {"params": state["params"]}), args.rounds
        )
        t_sampled = _best(
            partial(
                sampled.evaluation._eval, {"params": state["params"], "exposure": state["exposure"]}
            ),
            args.rounds,
        )
        print(f"{vocab:>9,} | {t_exact:>8.2f} | {t_sampled:>9.2f} | {t_exact / t_sampled:>6.2f}")

    # The paper's shape by FLOPs: V = 131,072, D = 576, 30 layers, L = 512, 41M tokens.
    model = TrainConfig(
        preset="smollm2-106m", vocab_size=131072, seq_len=512, batch_size=64, tokens=41_000_000
    ).model_config()
    exact_flops = 131072 * 2 * flops_per_token(model, 2)
    sampled_flops = 2048 * 512 * flops_per_token(model, 512) * 2  # scoring + greedy decoding
    train_flops = 41_000_000 * 3 * flops_per_token(model, 512)
    print("# smollm2-106m at V = 131,072 (FLOPs, not timed)")
    print(
        f"exact eval {exact_flops:.3g} | sampled eval (2,048 x 512, with decoding) "
        f"{sampled_flops:.3g} | one training run (41M tokens) {train_flops:.3g} | "
        f"exact / training {exact_flops / train_flops:.2%}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
