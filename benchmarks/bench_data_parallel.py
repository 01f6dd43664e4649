"""Data parallelism in the compiled step: per-device FLOPs and collectives on forced CPU devices.

For `small` at V = 16,384 (seq 128, batch 32), a single run and a vmapped group of 2, tied and
untied, `softmax` and `mos:2`, this compiles (never runs) the train step on a 1-device and a
4-device mesh and prints XLA's cost-analysis FLOPs per device, their ratio (data parallel:
0.25; target at most 0.3), and the all-gather / all-reduce ops in the optimized HLO.

Two programs per cell, because XLA's cost analysis counts a while-loop body once, whatever its
trip count:
- "one chunk": loss_chunk 4,096 and no micro-batches, so the head and loss are not in a loop
  and the analysis counts them in full; the FLOP ratio is exact;
- "default": the default chunked loss (256 tokens per chunk) and the cpu kernels' automatic
  micro-batches, the program a CPU run compiles; its FLOPs undercount the loops, but its HLO
  is what the all-gather column checks (no device gathers another's hidden states).

    python benchmarks/bench_data_parallel.py            # 8 cells, ~2-4 minutes on 2 cores
    python benchmarks/bench_data_parallel.py --quick    # 1 cell
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, re, sys, time
import jax
from jax.sharding import AxisType
from spamlang.train.config import TrainConfig
from spamlang.train.step import Program

k, tied, head = int(sys.argv[1]), sys.argv[2] == "tied", sys.argv[3]
base = TrainConfig(preset="small", vocab_size=16384, seq_len=128, batch_size=32,
                   tokens=32 * 128 * 10, tie_embeddings=tied, head=head)
programs = {"one chunk": base.replace(kernels="xla", loss_chunk=4096, micro_batch=32),
            "default": base}
out = {}
for name, config in programs.items():
    for n in (1, 4):
        mesh = jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,),
                             devices=jax.devices()[:n])
        start = time.perf_counter()
        compiled = Program(config, mesh).lower_step(k).compile()
        cost = compiled.cost_analysis()
        cost = cost[0] if isinstance(cost, list) else cost
        hlo = compiled.as_text()
        out[f"{name}/{n}"] = {
            "flops": cost["flops"], "compile_s": time.perf_counter() - start,
            "all_gather": len(re.findall(r"all-gather(-start)?\(", hlo)),
            "all_reduce": len(re.findall(r"all-reduce(-start)?\(", hlo))}
print("RESULT " + json.dumps(out))
"""

CELLS = [
    (k, tied, head) for head in ("softmax", "mos:2") for tied in ("untied", "tied") for k in (1, 2)
]


def measure(k: int, tied: str, head: str) -> dict:
    env = dict(
        os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu"
    )
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(k), tied, head], env=env, capture_output=True, text=True
    )
    if proc.returncode:
        raise SystemExit(f"cell K={k} {tied} {head} failed:\n{proc.stderr[-2000:]}")
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT ") :])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one cell (K=1, untied, softmax)")
    args = parser.parse_args(argv)
    print(
        "small, V = 16,384, seq 128 x batch 32; FLOPs per device from XLA's cost analysis "
        "of the compiled step (4 forced CPU devices vs 1)"
    )
    print(
        "| K | tying | head | FLOPs 1 dev | FLOPs 4 dev | ratio (one chunk) "
        "| all-gather 4 dev (one chunk / default) | all-reduce 4 dev (default) |"
    )
    print("|---:|:---|:---|---:|---:|---:|---:|---:|")
    worst = 0.0
    for k, tied, head in CELLS[:1] if args.quick else CELLS:
        r = measure(k, tied, head)
        one, four = r["one chunk/1"]["flops"], r["one chunk/4"]["flops"]
        worst = max(worst, four / one)
        print(
            f"| {k} | {tied} | {head} | {one:.3e} | {four:.3e} | {four / one:.3f} "
            f"| {r['one chunk/4']['all_gather']} / {r['default/4']['all_gather']} "
            f"| {r['default/4']['all_reduce']} |",
            flush=True,
        )
    print(f"worst ratio {worst:.3f} (target <= 0.3)")
    print("command: python benchmarks/bench_data_parallel.py" + (" --quick" if args.quick else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
