"""Model and loss speed/memory on this machine (issue 3). Prints a markdown table.

(a) loss + gradient (every parameter) of the `small` preset (D = 64, 2 layers) at
    V = 131,072 on 16 x 257 tokens (4,096 predicted positions): plain against chunked
    (fused custom-VJP head at a few chunk sizes, and the generic checkpointed scan).
    Peak RSS and time per step. Targets: chunked peak RSS <= 1/4 of plain, time <= 1.2x.
(b) forward + backward of `smollm2-106m` at V = 1,024, batch 4 x 256: seconds per step and
    the fraction of the measured float32 matmul peak (FLOPs from spamlang.perf:
    6 N + attention per token). Target: >= 60%.

Every measurement runs in its own subprocess, so each peak RSS (VmHWM) is that variant's
alone, compile included. Times are the best of --steps timed steps after a warm-up step.

    python benchmarks/bench_model.py            # the full table (minutes on 2 cores, ~5 GiB)
    python benchmarks/bench_model.py --quick    # a smoke run with small shapes
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

FULL = dict(
    vocab=131_072,
    batch=16,
    seq=257,
    chunks=(256, 512, 1024),
    generic_chunk=256,
    big_vocab=1024,
    big_batch=4,
    big_seq=256,
    big_layers=None,
)
QUICK = dict(
    vocab=8192,
    batch=4,
    seq=65,
    chunks=(64,),
    generic_chunk=64,
    big_vocab=1024,
    big_batch=2,
    big_seq=64,
    big_layers=2,
)


def _peak_rss_gib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _time_steps(fn, args, steps: int) -> float:
    import jax

    jax.block_until_ready(fn(*args))  # compile + warm up
    best = float("inf")
    for _ in range(steps):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - start)
    return best


def worker_loss(vocab: int, batch: int, seq: int, chunk: int | None, fused: bool, steps: int):
    import jax
    from flax import nnx

    from spamlang.loss import next_token_loss
    from spamlang.model import ModelConfig, Transformer

    config = ModelConfig.preset("small", vocab_size=vocab)
    graphdef, state = nnx.split(Transformer(config, rngs=nnx.Rngs(0)))
    tokens = jax.random.randint(jax.random.key(1), (batch, seq), 0, vocab)

    @jax.jit
    def step(state, tokens):
        def loss(state):
            return next_token_loss(
                nnx.merge(graphdef, state), tokens, chunk_size=chunk, fused=fused
            )

        return jax.value_and_grad(loss, has_aux=True)(state)

    seconds = _time_steps(step, (state, tokens), steps)
    (loss, _), _ = step(state, tokens)
    return {"seconds": seconds, "rss_gib": _peak_rss_gib(), "loss": float(loss)}


def worker_big(vocab: int, batch: int, seq: int, layers: int | None, steps: int):
    import jax
    from flax import nnx

    from spamlang.loss import next_token_loss
    from spamlang.model import ModelConfig, Transformer
    from spamlang.perf import flops_per_token

    overrides = {} if layers is None else {"n_layers": layers}
    config = ModelConfig.preset("smollm2-106m", vocab_size=vocab, **overrides)
    graphdef, state = nnx.split(Transformer(config, rngs=nnx.Rngs(0)))
    tokens = jax.random.randint(jax.random.key(1), (batch, seq), 0, vocab)

    @jax.jit
    def step(state, tokens):
        return jax.grad(lambda s: next_token_loss(nnx.merge(graphdef, s), tokens)[0])(state)

    seconds = _time_steps(step, (state, tokens), steps)
    return {
        "seconds": seconds,
        "rss_gib": _peak_rss_gib(),
        "flops": flops_per_token(config, seq) * batch * seq,
    }


def _run_worker(kind: str, params: dict) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind, json.dumps(params)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        sys.stderr.write(out.stderr)
        raise SystemExit(f"worker {kind} {params} failed")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes, a smoke run")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per variant")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        kind, params = args.worker[0], json.loads(args.worker[1])
        print(json.dumps({"loss": worker_loss, "big": worker_big}[kind](**params)))
        return 0

    import jax

    from spamlang.perf import matmul_peak_flops

    shapes = QUICK if args.quick else FULL
    steps = args.steps or (2 if args.quick else 3)
    peak = matmul_peak_flops()
    print(
        f"# bench_model{' --quick' if args.quick else ''}: {jax.devices()[0].platform}, "
        f"{os.cpu_count()} cores, float32 2048^2 matmul peak {peak / 1e9:.1f} GFLOP/s\n"
    )

    V, B, L = shapes["vocab"], shapes["batch"], shapes["seq"]
    print(
        f"## (a) loss + grad, `small` preset (D=64, 2 layers), V={V:,}, "
        f"{B}x{L} tokens ({B * (L - 1):,} predicted)\n"
    )
    print("| variant | s/step | peak RSS GiB | time / plain | RSS / plain | loss |")
    print("|---|---|---|---|---|---|")
    variants = [("plain", None, True)]
    variants += [(f"chunked fused C={c}", c, True) for c in shapes["chunks"]]
    variants += [
        (f"chunked checkpoint C={shapes['generic_chunk']}", shapes["generic_chunk"], False)
    ]
    base = None
    for name, chunk, fused in variants:
        r = _run_worker(
            "loss", dict(vocab=V, batch=B, seq=L, chunk=chunk, fused=fused, steps=steps)
        )
        base = base or r
        print(
            f"| {name} | {r['seconds']:.3f} | {r['rss_gib']:.2f} | "
            f"{r['seconds'] / base['seconds']:.2f} | {r['rss_gib'] / base['rss_gib']:.2f} | "
            f"{r['loss']:.4f} |",
            flush=True,
        )

    layers = shapes["big_layers"]
    r = _run_worker(
        "big",
        dict(
            vocab=shapes["big_vocab"],
            batch=shapes["big_batch"],
            seq=shapes["big_seq"],
            layers=layers,
            steps=steps,
        ),
    )
    what = "smollm2-106m" + (f" (n_layers={layers})" if layers else "")
    print(
        f"\n## (b) forward + backward, {what}, V={shapes['big_vocab']:,}, "
        f"batch {shapes['big_batch']}x{shapes['big_seq']}\n"
    )
    print("| s/step | tokens/s | GFLOP/s | fraction of matmul peak | peak RSS GiB |")
    print("|---|---|---|---|---|")
    tokens = shapes["big_batch"] * shapes["big_seq"]
    achieved = r["flops"] / r["seconds"]
    print(
        f"| {r['seconds']:.3f} | {tokens / r['seconds']:,.0f} | {achieved / 1e9:.1f} | "
        f"{achieved / peak:.0%} | {r['rss_gib']:.2f} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
