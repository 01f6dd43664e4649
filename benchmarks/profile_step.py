"""Where the train step's time goes: a JAX profile of the step, summed by named scope.

The model and step name their parts (`attention`, `mlp`, `norm`, `head_loss`, `optimizer`,
`data`; `jax.named_scope`), and XLA keeps those names in each compiled op's metadata. This
script profiles a few steps of one config, maps every executed op back to the innermost scope
it came from, and prints each scope's share of the op time. Ops run concurrently and the
profiler adds overhead, so the op time exceeds the unprofiled step time (printed too); read
the shares, not the absolute numbers.

    python benchmarks/profile_step.py                       # small, V = 1,024, seq 128 x 32
    python benchmarks/profile_step.py --vocab 16384 --micro-batch 32
    python benchmarks/profile_step.py --quick               # tiny shapes, a smoke run
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import re
import sys
import tempfile
import time

SCOPES = ("attention", "mlp", "norm", "head_loss", "optimizer", "data")
_OP_NAME = re.compile(r"\s*(?:ROOT )?%?([\w.\-]+) = .*?op_name=\"([^\"]*)\"")


def scope_of(op_name: str) -> str:
    """The innermost of SCOPES in an op's metadata name ("other" if none), e.g.
    "jit(step_fn)/while/body/transpose(jvp(mlp))/dot_general" -> "mlp"."""
    hits = [(max(op_name.rfind(s + ")"), op_name.rfind("/" + s + "/")), s) for s in SCOPES]
    pos, scope = max(hits)
    return scope if pos >= 0 else "other"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny preset, few steps")
    parser.add_argument("--preset", default=None, help="model preset (default: small)")
    parser.add_argument("--vocab", type=int, default=1024)
    parser.add_argument("--tied", action="store_true")
    parser.add_argument("--micro-batch", type=int, default=0, help="0: auto (TrainConfig)")
    parser.add_argument("--steps", type=int, default=None, help="profiled steps")
    args = parser.parse_args(argv)

    import jax

    from spamlang.train.config import TrainConfig
    from spamlang.train.step import Program

    preset, seq, batch = ("tiny", 32, 16) if args.quick else ("small", 128, 32)
    steps = args.steps or (2 if args.quick else 5)
    config = TrainConfig(
        preset=args.preset or preset,
        vocab_size=args.vocab,
        tie_embeddings=args.tied,
        seq_len=seq,
        batch_size=batch,
        micro_batch=args.micro_batch,
        tokens=seq * batch * 10**6,
    )
    prog = Program(config)
    state = prog.init([config.seed], [config.lr])  # one member (K = 1)
    for _ in range(3):  # compile and warm up
        state, metrics = prog.step(state)
    jax.block_until_ready(state)
    start = time.perf_counter()
    for _ in range(steps):
        state, metrics = prog.step(state)
    jax.block_until_ready(state)
    wall = (time.perf_counter() - start) / steps

    with tempfile.TemporaryDirectory() as trace_dir:
        with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
            for _ in range(steps):
                state, metrics = prog.step(state)
            jax.block_until_ready(state)
        (trace,) = glob.glob(f"{trace_dir}/**/*.trace.json.gz", recursive=True)
        with gzip.open(trace) as f:
            events = json.load(f)["traceEvents"]
    hlo = prog.lower_step(1).compile().as_text()
    op_names = dict(m.groups() for m in map(_OP_NAME.match, hlo.splitlines()) if m)

    total, launches = collections.Counter(), collections.Counter()
    for e in events:
        if e.get("ph") == "X" and e.get("name") in op_names:
            scope = scope_of(op_names[e["name"]])
            total[scope] += e["dur"]
            launches[scope] += 1
    op_time = sum(total.values())
    print(
        f"# preset {config.preset}, V {config.vocab_size}, tied {config.tie_embeddings}, "
        f"seq {seq} x batch {batch}, {prog.n_micro} micro-batch(es), {prog.kernels} kernels; "
        f"unprofiled {wall * 1e3:.1f} ms/step, profiled op time {op_time / steps / 1e3:.1f} ms/step"
    )
    print(f"{'scope':>10} | {'ms/step':>8} | {'share':>6} | {'ops/step':>8}")
    for scope, us in total.most_common():
        print(
            f"{scope:>10} | {us / steps / 1e3:>8.2f} | {100 * us / op_time:>5.1f}% | "
            f"{launches[scope] / steps:>8.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
