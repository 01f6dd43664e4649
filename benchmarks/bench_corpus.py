"""Is the data path of a corpus run the bottleneck? Tokens/s of one model and shape on SpamLang
and on a token-file corpus, its train.bin on device and memory-mapped on the host.

The three steps run in turns, round after round (the machine is noisy), each timed as the
training loop takes it; the table gives each one's best round and its ratio to SpamLang's.
Target: a corpus within 5% of SpamLang (ratio >= 0.95).

    python benchmarks/bench_corpus.py                 # small, V = 16,384, B 16 x L 64
    python benchmarks/bench_corpus.py --quick         # a smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny model, few steps")
    parser.add_argument("--preset", default="small")
    parser.add_argument("--vocab", type=int, default=16384)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20, help="steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--corpus", default=None, help="a corpus folder (default: a random one)")
    args = parser.parse_args(argv)
    if args.quick:
        args.preset, args.vocab, args.steps, args.rounds = "tiny", 1024, 3, 2

    import jax
    import numpy as np

    from spamlang.corpus import windows
    from spamlang.perf import machine_line
    from spamlang.train.config import TrainConfig
    from spamlang.train.step import Program

    folder = args.corpus or _random_corpus(tempfile.mkdtemp(), args.vocab)
    shape = dict(preset=args.preset, seq_len=args.seq, batch_size=args.batch, tokens=10**9)
    arms = {}
    spam = TrainConfig(vocab_size=args.vocab, **shape)
    arms["spam"] = Program(spam)
    text = TrainConfig(corpus=folder, **shape)
    arms["corpus on device"] = Program(text)
    os.environ[windows.DEVICE_MB_VAR] = "0"
    arms["corpus memory-mapped"] = Program(text)
    del os.environ[windows.DEVICE_MB_VAR]

    states = {name: p.init([0], [1e-3]) for name, p in arms.items()}
    keys = np.asarray(jax.random.split(jax.random.PRNGKey(0))[1])[None]
    at = dict.fromkeys(arms, 0)

    def run(name: str, n: int) -> float:
        p, start = arms[name], time.perf_counter()
        for _ in range(n):
            batch = p.host_batch(keys, at[name]) if p.host_windows is not None else None
            states[name], metrics = p.step(states[name], batch)
            at[name] += 1
        jax.block_until_ready((states[name], metrics))
        return time.perf_counter() - start

    for name in arms:
        run(name, 2)  # compile and warm up
    best = dict.fromkeys(arms, float("inf"))
    for _ in range(args.rounds):
        for name in arms:
            best[name] = min(best[name], run(name, args.steps))
    tokens = args.steps * args.batch * args.seq
    print(machine_line())
    print(
        f"# {args.preset}, V {text.vocab_size:,}, B {args.batch} x L {args.seq}, best of "
        f"{args.rounds} rounds of {args.steps} steps, in turns"
    )
    print(f"{'data':>22} | {'tok/s':>9} | {'vs spam':>7}")
    for name, seconds in best.items():
        print(f"{name:>22} | {tokens / seconds:>9,.0f} | {best['spam'] / seconds:>7.3f}")
    print("target: a corpus at >= 0.95 of spam's tokens/s")
    return 0


def _random_corpus(folder: str, vocab: int) -> str:
    import numpy as np

    rng = np.random.default_rng(0)
    for name, n in (("train.bin", 4_000_000), ("val.bin", 100_000)):
        (rng.zipf(1.2, n) % vocab).astype("<u2").tofile(Path(folder) / name)
    (Path(folder) / "meta.json").write_text(json.dumps({"vocab_size": vocab, "dtype": "uint16"}))
    return folder


if __name__ == "__main__":
    sys.exit(main())
