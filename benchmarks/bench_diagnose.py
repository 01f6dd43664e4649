"""Speed and memory of `diagnose_model` (what `spamlang diagnose` runs) at the paper's shape.

Shape (issue 6): the `smollm2-106m` preset (D = 576, 30 layers), untied softmax head,
V = 131,072, randomly initialised, 8,192 predicted tokens of SpamLang (sequences of 65
tokens), chunks of 256 tokens. Target: minutes on 2 CPU cores, peak RSS under 6 GiB (no
V x V and no T x V x D array exists; see spamlang/diagnostics/driver.py for the memory plan).

Peak RSS is the process's ru_maxrss: it includes the model's parameters (257M floats,
~1 GiB at this shape) and JAX's own footprint. Each stage's wall time comes from the
driver's `seconds` entry (compilation included).

Measured (2-core CPU shared with other jobs, load average ~7, so this process got ~0.6 core):
    | smollm2-106m | V 131,072 | D 576 | 8,192 tokens | chunk 256 | rank tokens 1,024 |
    diagnose 392 s (hidden 36, stats 142, rank curve 124, profile 46, efficiency 45),
    peak RSS 3.18 GiB (2.17 GiB after building the model); kernel fraction 0.9978 at
    initialisation, = sqrt(1 - D/V) = 0.9978.

    python benchmarks/bench_diagnose.py            # the full shape (minutes, several GiB)
    python benchmarks/bench_diagnose.py --quick    # a smoke run: `small` preset, V = 4,096
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import time


def rss_gib() -> float:
    """Peak resident set size of this process so far, GiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def bench(preset: str, vocab: int, tokens: int, seq_len: int, chunk: int, rank_tokens: int) -> dict:
    import jax
    from flax import nnx

    from spamlang import languages
    from spamlang.diagnostics import diagnose_model
    from spamlang.model import ModelConfig, Transformer

    start = time.perf_counter()
    config = ModelConfig.preset(preset, vocab_size=vocab, max_seq_len=max(seq_len, 128))
    model = Transformer(config, rngs=nnx.Rngs(0))
    lang = languages.make("spam", vocab_size=vocab)
    batch = lang.sample(jax.random.PRNGKey(1), math.ceil(tokens / (seq_len - 1)), seq_len)
    jax.block_until_ready(batch)
    init_s, init_rss = time.perf_counter() - start, rss_gib()
    start = time.perf_counter()
    out = diagnose_model(model, batch, chunk_size=chunk, rank_tokens=rank_tokens, max_tokens=tokens)
    return {
        "preset": preset,
        "V": vocab,
        "D": config.d_model,
        "tokens": out["tokens"],
        "chunk": chunk,
        "rank_tokens": rank_tokens,
        "init_s": init_s,
        "diagnose_s": time.perf_counter() - start,
        "init_rss": init_rss,
        "peak_rss": rss_gib(),
        "kf": out["kernel_fraction"],
        "iso": math.sqrt(1 - config.d_model / vocab),
        "stages": out["seconds"],
    }


def table(r: dict) -> str:
    stages = ", ".join(f"{k} {v:.1f}" for k, v in r["stages"].items())
    return "\n".join(
        [
            "| preset | V | D | tokens | chunk | rank tokens | model init (s) | diagnose (s) "
            "| RSS after init (GiB) | peak RSS (GiB) | kernel fraction | sqrt(1-D/V) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
            f"| {r['preset']} | {r['V']:,} | {r['D']} | {r['tokens']:,} | {r['chunk']} | "
            f"{r['rank_tokens']} | {r['init_s']:.1f} | {r['diagnose_s']:.1f} | {r['init_rss']:.2f} | "
            f"{r['peak_rss']:.2f} | {r['kf']:.4f} | {r['iso']:.4f} |",
            "",
            f"stages (s): {stages}",
            f"cpu count: {os.cpu_count()}, load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())}",
        ]
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small preset, V=4,096, 1,024 tokens")
    p.add_argument("--preset", default="smollm2-106m")
    p.add_argument("--vocab", type=int, default=131_072)
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--seq-len", type=int, default=65)
    p.add_argument("--chunk-size", type=int, default=256)
    p.add_argument("--rank-tokens", type=int, default=1024)
    args = p.parse_args(argv)
    if args.quick:
        args.preset, args.vocab, args.tokens, args.rank_tokens = "small", 4096, 1024, 256
    r = bench(args.preset, args.vocab, args.tokens, args.seq_len, args.chunk_size, args.rank_tokens)
    print(table(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
