"""The paper's shape, checked without an accelerator: memory and FLOPs of the largest
`sweeps/paper_fig5.py` cell from XLA's compiler, and three real steps of one member here.

The cell: the sweep's base config (`smollm2-106m`, bfloat16, seq 256 x batch 64,
loss_chunk 4,096) at V = 131,072, untied -- the biggest parameter count of the grid.

Part A (subprocess, JAX_PLATFORMS=cpu, XLA_FLAGS=--xla_force_host_platform_device_count=8):
    lowers and compiles, WITHOUT running or allocating, the vmapped group of 5 members
    (`Program.lower_step(5).compile()`) and a single member (`lower_step(1)`) on an 8-device
    ("data",) mesh with kernels="xla" (the accelerator path: plain matmuls and
    jax.nn.dot_product_attention, no micro-batches), then both again on a 1-device mesh (the
    whole batch of 64 on one chip, as a sweep task on one accelerator runs it). Prints XLA's
    memory analysis per device (argument, output, temp, generated code, alias; total =
    argument + output + temp - alias), XLA's cost-analysis FLOPs per device, the compile time
    and the all-gather / all-reduce op count of the compiled HLO. XLA's cost analysis counts a
    while-loop body once (the chunked loss is a `lax.scan` over chunks of 4,096 tokens), so
    the analytic FLOPs per device, K x Program.flops_per_step / devices, are printed next to
    it. These are XLA:CPU's buffer assignment and fusion decisions; a GPU compile of the same
    program will differ somewhat (other fusions, fused attention, bf16 dots kept in bf16), so
    read them as an estimate of the GPU figure.
Part B (subprocess, JAX_PLATFORMS=cpu, 1 device, default kernels): three real steps of ONE
    member at batch 8 (otherwise the same config) on this CPU: the compile time, the time per
    step and the process's peak RSS (ru_maxrss).

    python benchmarks/paper_shape.py              # both parts (~7 minutes on 2 cores, 7.3 GiB)
    python benchmarks/paper_shape.py --part a     # compile only
    python benchmarks/paper_shape.py --part b     # the three real steps only
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VOCAB, GROUP, DEVICES, B_BATCH = 131_072, 5, 8, 8
GiB = 2**30


def base_config():
    """The paper_fig5 sweep's base TrainConfig at its largest cell (V = 131,072, untied)."""
    spec = importlib.util.spec_from_file_location("paper_fig5", REPO / "sweeps" / "paper_fig5.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SWEEP.base.replace(vocab_size=VOCAB, tie_embeddings=False)


def _peak_rss_gib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def _flops(cost) -> float:
    """`compiled.cost_analysis()`: a dict, or a list of dicts (one per program) in some versions."""
    if isinstance(cost, dict):
        cost = [cost]
    return float(sum(c.get("flops", 0.0) for c in cost or []))


def _count(op: str, hlo: str) -> int:
    # `%x = bf16[..] all-gather(...)` or the async pair's `all-gather-start(...)`.
    return len(re.findall(rf"\s{op}(?:-start)?\(", hlo))


def worker_a() -> dict:
    """Compile (not run) the step of 5 members and of 1 member on the 8-device CPU mesh, and
    the same on a 1-device mesh (the whole batch of 64 on one chip, as a sweep on a single
    accelerator runs it)."""
    import jax

    from spamlang.sweep.fit import compiled_bytes
    from spamlang.train.step import Program, default_mesh

    assert jax.device_count() == DEVICES, f"expected {DEVICES} CPU devices, got {jax.devices()}"
    config = base_config().replace(kernels="xla")
    one = jax.make_mesh(
        (1,), ("data",), axis_types=(jax.sharding.AxisType.Auto,), devices=jax.devices()[:1]
    )
    out = {"devices": jax.device_count(), "cols": {}}
    for n_dev, mesh in ((DEVICES, default_mesh()), (1, one)):
        prog = Program(config, mesh)
        out.update(kernels=prog.kernels, n_micro=prog.n_micro, flops_per_step=prog.flops_per_step)
        for k in (GROUP, 1):
            start = time.perf_counter()
            lowered = prog.lower_step(k)
            compiled = lowered.compile()
            seconds = time.perf_counter() - start
            mem = compiled.memory_analysis()
            hlo = compiled.as_text()
            row = {
                "n_dev": n_dev,
                "k": k,
                "compile_s": seconds,
                "argument": mem.argument_size_in_bytes,
                "output": mem.output_size_in_bytes,
                "temp": mem.temp_size_in_bytes,
                "code": mem.generated_code_size_in_bytes,
                "alias": mem.alias_size_in_bytes,
                "xla_flops": _flops(compiled.cost_analysis()),
                "analytic_flops": k * prog.flops_per_step / n_dev,
                "all_gather": _count("all-gather", hlo),
                "all_reduce": _count("all-reduce", hlo),
            }
            row["total"] = compiled_bytes(compiled)  # the sweep's own measure (sweep/fit.py)
            out["cols"][f"{n_dev}x{k}"] = row
            del lowered, compiled, hlo
    out["rss_gib"] = _peak_rss_gib()
    return out


def worker_b(steps: int) -> dict:
    """Three real steps of one member at batch 8 on this machine's CPU (1 device)."""
    import jax

    from spamlang.train.step import Program

    config = base_config().replace(batch_size=B_BATCH)
    prog = Program(config)
    state_bytes = sum(s.size * s.dtype.itemsize for s in jax.tree.leaves(prog.abstract_state(1)))
    avail = _mem_available()
    # state + gradients + updates + AdamW temporaries: a floor, not a bound.
    if avail is not None and 3 * state_bytes > avail:
        return {
            "skipped": f"would not fit: 3 x state {3 * state_bytes / GiB:.1f} GiB > "
            f"{avail / GiB:.1f} GiB available",
            "state_gib": state_bytes / GiB,
        }
    state = prog.init([0], [config.lr])
    start = time.perf_counter()
    compiled = prog.lower_step(1).compile()  # the same executable prog.step would compile
    compile_s = time.perf_counter() - start
    times, losses = [], []
    for _ in range(steps):
        start = time.perf_counter()
        state, metrics = compiled(state)
        jax.block_until_ready((state, metrics))
        times.append(time.perf_counter() - start)
        losses.append(float(metrics["loss"][0]))
    return {
        "devices": jax.device_count(),
        "kernels": prog.kernels,
        "n_micro": prog.n_micro,
        "compile_s": compile_s,
        "step_s": times,
        "loss": losses,
        "state_gib": state_bytes / GiB,
        "rss_gib": _peak_rss_gib(),
        "flops_per_step": prog.flops_per_step,
    }


def _mem_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _env(part: str) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    flags = [
        f
        for f in env.get("XLA_FLAGS", "").split()
        if not f.startswith("--xla_force_host_platform_device_count")
    ]
    if part == "a":
        flags.append(f"--xla_force_host_platform_device_count={DEVICES}")
    env["XLA_FLAGS"] = " ".join(flags)
    return env


def run_worker(part: str, steps: int) -> dict:
    """One part in its own process (so Part A's compile does not pollute Part B's RSS)."""
    cmd = [sys.executable, __file__, "--worker", part, "--steps", str(steps)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=_env(part), capture_output=True, text=True)
    wall = time.perf_counter() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        why = (
            "killed (out of memory?)" if proc.returncode in (-9, 137) else f"exit {proc.returncode}"
        )
        sys.stderr.write(proc.stderr[-4000:])
        return {"failed": f"part {part} {why}", "wall_s": wall}
    out = json.loads(lines[-1])
    out["wall_s"] = wall
    return out


def table(a: dict | None, b: dict | None, steps: int) -> list[str]:
    gib = lambda x: f"{x / GiB:.2f}"  # noqa: E731
    tf = lambda x: f"{x / 1e12:.2f}"  # noqa: E731
    a_cols = list(a["cols"].values()) if a and "cols" in a else []
    b_ok = bool(b and "step_s" in b)
    heads = [
        f"A: K = {c['k']}, {c['n_dev']} dev, batch {64 // c['n_dev']}/dev (compiled only)"
        for c in a_cols
    ]
    if b_ok:
        heads.append(f"B: K = 1, batch {B_BATCH}, 1 CPU dev ({steps} steps run)")
    rows = [
        ("GiB per device: argument", "argument", gib),
        ("GiB: output", "output", gib),
        ("GiB: temp", "temp", gib),
        ("GiB: generated code", "code", gib),
        ("GiB: alias (donated)", "alias", gib),
        ("**GiB: total = arg + out + temp - alias**", "total", gib),
        ("TFLOP/device/step, XLA cost analysis (a while-loop body once)", "xla_flops", tf),
        ("TFLOP/device/step, analytic (K x flops_per_step / devices)", "analytic_flops", tf),
        ("all-gather ops in compiled HLO", "all_gather", str),
        ("all-reduce ops in compiled HLO", "all_reduce", str),
        ("compile s", "compile_s", lambda x: f"{x:.1f}"),
    ]
    out = ["| quantity | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|"]
    for label, key, fmt in rows:
        cells = [fmt(c[key]) for c in a_cols]
        if b_ok:
            cells.append(fmt(b[key]) if key == "compile_s" else "-")
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    if b_ok:
        steady = b["step_s"][1:] or b["step_s"]
        per = sum(steady) / len(steady)
        step_cell = (
            f"**{per:.1f}** (steps {', '.join(f'{t:.1f}' for t in b['step_s'])}; "
            f"{b['flops_per_step'] / per / 1e9:.0f} GFLOP/s)"
        )
        out.append("| s per step | " + " | ".join(["-"] * len(a_cols) + [step_cell]) + " |")
    rss = []
    if a_cols:
        rss += [f"{a['rss_gib']:.2f} (one process compiles all four)"] + ["-"] * (len(a_cols) - 1)
    if b_ok:
        rss.append(f"**{b['rss_gib']:.2f}**")
    if rss:
        out.append("| host peak RSS GiB (ru_maxrss) | " + " | ".join(rss) + " |")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] + " " + __doc__.splitlines()[1],
        epilog="Part A compiles on 8 forced host CPU devices; Part B runs on 1 CPU device.",
    )
    parser.add_argument(
        "--part",
        choices=("a", "b", "all"),
        default="all",
        help="a: compile the 5-member and 1-member steps on 8 CPU devices "
        "(kernels=xla); b: 3 real steps of one member at batch 8 here; "
        "all: both",
    )
    parser.add_argument("--steps", type=int, default=3, help="real steps in part B (default 3)")
    parser.add_argument("--worker", choices=("a", "b"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        sys.path.insert(0, str(REPO))
        out = worker_a() if args.worker == "a" else worker_b(args.steps)
        print(json.dumps(out), flush=True)
        return 0

    from spamlang.perf import cpu_model

    start = time.perf_counter()
    a = run_worker("a", args.steps) if args.part in ("a", "all") else None
    b = run_worker("b", args.steps) if args.part in ("b", "all") else None
    wall = time.perf_counter() - start

    print(
        f"# paper_fig5's largest cell: smollm2-106m, V {VOCAB:,} untied, bfloat16, seq 256, "
        f"loss_chunk 4,096; {os.cpu_count()} x {cpu_model()}"
    )
    if a and "cols" in a:
        print(
            f"# Part A: batch 64 on a {a['devices']}-device CPU mesh (and on a 1-device mesh: "
            f"the whole batch on one chip), kernels={a['kernels']} (the accelerator path), "
            f"{a['n_micro']} micro-batch; lowered and compiled, never run. Memory and XLA "
            f"FLOPs are per device, from XLA:CPU (a GPU compile differs somewhat). XLA's cost "
            f"analysis counts a while-loop body once: the chunked loss scans chunks of 4,096 "
            f"tokens, one chunk at 2,048 tokens per device, four at 16,384, hence the "
            f"analytic row; one member's step is {a['flops_per_step'] / 1e12:.1f} TFLOP."
        )
    if b and "step_s" in b:
        print(
            f"# Part B: batch {B_BATCH} on {b['devices']} CPU device, kernels={b['kernels']}, "
            f"{b['n_micro']} micro-batches; state {b['state_gib']:.2f} GiB; losses "
            f"{', '.join(f'{x:.3f}' for x in b['loss'])}; s per step = mean of steps 2.."
        )
    for part, res in (("A", a), ("B", b)):
        if res and ("failed" in res or "skipped" in res):
            print(f"# Part {part}: {res.get('failed') or res.get('skipped')}")
    print("\n".join(table(a, b, args.steps)))
    print(
        f"# wall time {wall:.0f} s"
        + "".join(f"; part {p} {r['wall_s']:.0f} s" for p, r in (("A", a), ("B", b)) if r)
    )
    print(
        f"# command: python benchmarks/paper_shape.py --part {args.part}"
        + (f" --steps {args.steps}" if args.steps != 3 else "")
        + "  (part A's subprocess: JAX_PLATFORMS=cpu XLA_FLAGS="
        f"--xla_force_host_platform_device_count={DEVICES}; part B's: JAX_PLATFORMS=cpu)"
    )
    return 0 if all(r is None or "cols" in r or "step_s" in r for r in (a, b)) else 1


if __name__ == "__main__":
    sys.exit(main())
