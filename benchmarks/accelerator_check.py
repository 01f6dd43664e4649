"""One command for an H100/H200-class GPU: correctness, speed, vmap gain, loss memory, a paper cell.

Prints the jax version, backend, devices and the peak FLOP/s that MFU divides by, then ONE
markdown table, and writes the same rows as JSON (--out; default $OUT/accelerator_check.json
when OUT is set). Everything runs on device 0 through a 1-device ("data",) mesh, so MFU is
per chip. Each case is guarded: a failure prints an `ERROR: ...` row (traceback on stderr) and
the script goes on -- it is meant for one shot on a borrowed GPU.

Parts (--parts a,b,c,d,e selects; they run in the order a, d, b, c, e, see (d)):
  (a) 50 float32 steps of `tiny` (V 256, seq 64, batch 32, kernels=xla) on the accelerator and
      on the CPU; max relative difference of the 50 losses, PASS within 1e-4. Rows: default
      matmul precision (XLA may use TF32 for float32 matmuls on NVIDIA GPUs), precision
      "highest" on both sides (tells TF32 rounding from a real mismatch), and the CPU with
      kernels=auto (the cpu kernels) against the accelerator's xla run.
  (b) smollm2-106m bfloat16 tokens/s and MFU at V = 1,024 and 131,072, tied and untied
      (paper_fig5's seq 256, batch 64, loss_chunk 4096); 2 warm-up steps, then 15 timed.
  (c) a vmapped group of 5 LRs against the same 5 runs stepped one by one (smollm2-106m bf16,
      V = 1,024, untied, 16 sequences per member: at paper_fig5's 64 the group needs ~194 GiB
      on one device by XLA's memory analysis): ratio of total tokens/s, target >= 2x. Alternating rounds, best of
      each. (step_timer gives every (program, K) pair its own state, so [(prog, 1)] * 5 is
      5 independent runs of one compiled program.)
  (d) memory of the chunked loss (loss_chunk 4096) against the plain one (loss_chunk 0) at
      V = 131,072, one member: the compiled step's memory_analysis (temp + argument + output
      bytes) and, where the device reports it, memory_stats()["peak_bytes_in_use"] after
      init and one step. Each variant runs in a fresh process, because the peak is a
      process-lifetime maximum; (d) runs second so those processes find the GPU memory free.
      A plain loss that does not fit is reported as its result, not as an error.
  (e) 300 steps of paper_fig5's V = 131,072 untied cell (its base config, imported from
      sweeps/paper_fig5.py) at lr 5e-4, one member as a sweep task on one GPU trains it
      (--group-size 1; the group of 5 at batch 64 does not fit one device): wall time,
      tokens/s, MFU, the final loss. The first 20 steps are timed first; if the projected 300 steps would
      overrun --budget-s the part stops there and reports the projection.

Budget: --budget-s (default 420 s, so the whole run ends well inside 8 minutes) is checked
before every case; cases not started in time get a "SKIPPED (budget)" row.

--cpu-smoke: the same code at toy sizes on the CPU (JAX_PLATFORMS=cpu; under 2 minutes on 2
cores): tiny for smollm2-106m, V 4,096 / 256 for 131,072 / 1,024, seq 32, batch 8, loss chunk
64 (4 chunks per batch, as 4,096 is of 16,384), 10 steps in (a) and (e), and two of (b)'s four
cases (V small tied, V large untied). Part (a) then compares
the CPU with the CPU (the table says so).

Environment set here unless already set: XLA_PYTHON_CLIENT_PREALLOCATE=false (the (d)
processes need the memory the parent would otherwise reserve) and JAX_COMPILATION_CACHE_DIR
(a temporary directory, so a (d) process and (b) compile the shared program once).

    python benchmarks/accelerator_check.py                   # on the GPU machine
    python benchmarks/accelerator_check.py --cpu-smoke --out /tmp/x.json
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAPER_FIG5 = REPO / "sweeps" / "paper_fig5.py"
EXEC_ORDER = "adbce"
TOLERANCE_REL = 1e-4  # part (a): float32 losses, accelerator vs CPU
GROUP_SIZE = 5  # part (c): a vmapped group of 5 LRs


@dataclasses.dataclass(frozen=True)
class Sizes:
    """Every size that differs between the real check and the CPU smoke run."""

    preset: str  # stands in for smollm2-106m
    n_layers: int | None  # the preset's depth if None; the smoke's 1 layer halves its compiles
    vocab_small: int  # stands in for V = 1,024
    vocab_large: int  # stands in for V = 131,072
    seq_len: int
    batch_size: int
    a_steps: int  # part (a): float32 steps per side
    b_warmup_steps: int
    b_timed_steps: int
    c_rounds: int  # part (c): alternating timing rounds
    c_steps: int  # steps per round
    e_steps: int  # part (e): steps of the paper cell
    e_probe_steps: int  # part (e): steps timed before deciding whether the rest fits
    e_chunk_steps: int  # part (e): steps between budget checks after the probe
    loss_chunk: int  # tokens per loss chunk: paper_fig5's 4,096 is 1/4 of its 16,384-token batch
    group_batch_size: int  # part (c): sequences per member of the vmapped group (see part_c)
    b_every_case: bool  # part (b): all four (V, tying) cases; else V small tied, V large untied


GPU_SIZES = Sizes(
    preset="smollm2-106m",
    n_layers=None,
    vocab_small=1024,
    vocab_large=131072,
    seq_len=256,
    batch_size=64,
    a_steps=50,
    b_warmup_steps=2,
    b_timed_steps=15,
    c_rounds=2,
    c_steps=10,
    e_steps=300,
    e_probe_steps=20,
    e_chunk_steps=40,
    loss_chunk=4096,
    group_batch_size=16,
    b_every_case=True,
)
SMOKE_SIZES = Sizes(
    preset="tiny",
    n_layers=1,
    vocab_small=256,
    vocab_large=4096,
    seq_len=32,
    batch_size=8,
    a_steps=10,
    b_warmup_steps=2,
    b_timed_steps=3,
    c_rounds=1,
    c_steps=2,
    e_steps=10,
    e_probe_steps=5,
    e_chunk_steps=5,
    loss_chunk=64,
    group_batch_size=8,
    b_every_case=False,
)


@dataclasses.dataclass
class Row:
    part: str
    case: str
    result: str  # PASS / FAIL / ok / ERROR: ... / SKIPPED (budget) / ...
    values: dict = dataclasses.field(default_factory=dict)  # measured numbers, units in keys


class Budget:
    """Wall-clock seconds since the script started, against --budget-s."""

    def __init__(self, limit_s: float):
        self.start, self.limit_s = time.perf_counter(), limit_s

    def elapsed_s(self) -> float:
        return time.perf_counter() - self.start

    def left_s(self) -> float:
        return self.limit_s - self.elapsed_s()

    def spent(self) -> bool:
        return self.left_s() <= 0


def progress(message: str, budget: Budget) -> None:
    print(f"[{budget.elapsed_s():6.1f}s] {message}", file=sys.stderr, flush=True)


# ----- formatting ---------------------------------------------------------------------------


def fmt_value(key: str, value) -> str:
    """Human form of one measured value; the unit comes from the key's suffix."""
    if value is None:
        return "n/a"
    if isinstance(value, bool) or isinstance(value, str):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(fmt_value(key, v) for v in value) + "]"
    if key.endswith("_bytes"):
        return f"{value / 2**30:.2f} GiB" if value >= 2**30 else f"{value / 2**20:.1f} MiB"
    if key.endswith("tokens_per_s"):
        return f"{value:,.0f}"
    if key.startswith("mfu"):
        return f"{100 * value:.1f}%"
    if key.endswith("_s") or key.endswith("_ms"):
        return f"{value:.2f}" if value < 100 else f"{value:.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.3g}" if abs(value) < 1e-2 else f"{value:.4g}"


def markdown_table(rows: list[Row]) -> str:
    lines = ["| part | case | result | measured |", "|---|---|---|---|"]
    for row in sorted(rows, key=lambda r: r.part):  # stable: cases keep their order
        measured = ", ".join(f"{k} {fmt_value(k, v)}" for k, v in row.values.items())
        cells = [row.part, row.case, row.result, measured]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines)


def write_json(
    path: Path | None, header: dict, rows: list[Row], budget: Budget, complete: bool
) -> None:
    """Rewritten after every part, so a run killed from outside still leaves its results."""
    if path is None:
        return
    parts: dict[str, list] = {}
    for row in rows:
        parts.setdefault(row.part, []).append(
            {"case": row.case, "result": row.result, **row.values}
        )
    data = {
        "header": header,
        "parts": dict(sorted(parts.items())),
        "wall_s": budget.elapsed_s(),
        "budget_s": budget.limit_s,
        "complete": complete,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


# ----- shared helpers -----------------------------------------------------------------------


def one_device_mesh(device):
    """A 1-device ("data",) mesh: every part times one chip, whatever else the host has."""
    import jax

    return jax.make_mesh(
        (1,), ("data",), axis_types=(jax.sharding.AxisType.Auto,), devices=[device]
    )


@functools.cache
def load_paper_fig5():
    """sweeps/paper_fig5.py's SWEEP (loaded by path: sweeps/ is not a package)."""
    spec = importlib.util.spec_from_file_location("paper_fig5", PAPER_FIG5)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SWEEP


def paper_config(sizes: Sizes, vocab_size: int, tied: bool, loss_chunk: int):
    """paper_fig5's base config at `sizes`, keeping its number of steps (so its schedule)."""
    base = load_paper_fig5().base
    return base.replace(
        preset=sizes.preset,
        vocab_size=vocab_size,
        tie_embeddings=tied,
        seq_len=sizes.seq_len,
        batch_size=sizes.batch_size,
        tokens=base.steps * sizes.batch_size * sizes.seq_len,
        loss_chunk=loss_chunk,
        model={"n_layers": sizes.n_layers} if sizes.n_layers else {},
    )


def mfu(prog, tokens_per_s: float) -> float:
    from spamlang.perf import peak_flops

    flops_per_token = prog.flops_per_step / prog.config.tokens_per_step
    return tokens_per_s * flops_per_token / peak_flops(prog.config.dtype)


def is_out_of_memory(error: BaseException) -> bool:
    text = str(error)
    return "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower()


def guarded(part: str, case: str, budget: Budget, measure) -> Row:
    """Row of `measure() -> Row`, or a SKIPPED / ERROR row; never raises."""
    if budget.spent():
        return Row(part, case, "SKIPPED (budget)")
    progress(f"part {part}: {case}", budget)
    try:
        row = measure()
    except Exception as error:  # one failing case must not cost the rest of the run
        traceback.print_exc(file=sys.stderr)
        first_line = (str(error).strip().splitlines() or [""])[0][:200]
        row = Row(part, case, f"ERROR: {type(error).__name__}: {first_line}")
    import gc

    gc.collect()  # drop the case's states before the next one allocates
    measured = ", ".join(f"{k} {fmt_value(k, v)}" for k, v in row.values.items())
    progress(f"part {part}: {case} -> {row.result} | {measured}", budget)
    return row


# ----- (a) float32 losses, accelerator vs CPU -----------------------------------------------


def float32_losses(config, device, steps: int, precision: str | None):
    """Losses [steps] (float64 numpy) of one member trained on `device`, and its Program."""
    import jax
    import numpy as np

    from spamlang.train.step import Program

    context = jax.default_matmul_precision(precision) if precision else contextlib.nullcontext()
    with context:  # jit traces on the first call, so the steps must run inside it too
        prog = Program(config, one_device_mesh(device))
        state = prog.init([config.seed], [config.lr])
        losses = []
        for _ in range(steps):
            state, metrics = prog.step(state)
            losses.append(metrics["loss"][0])
        return np.asarray(jax.device_get(losses), np.float64), prog


def compare_losses(part: str, case: str, losses_N, reference_N, extra: dict) -> Row:
    import numpy as np

    rel_N = np.abs(losses_N - reference_N) / np.abs(reference_N)
    max_rel = float(rel_N.max())
    verdict = "PASS" if max_rel <= TOLERANCE_REL else "FAIL"
    return Row(
        part,
        case,
        f"{verdict} (tol {TOLERANCE_REL:g})",
        {
            "max_rel_diff": max_rel,
            "worst_step": int(rel_N.argmax()) + 1,
            "steps": len(losses_N),
            "first_loss": float(reference_N[0]),
            "last_loss": float(reference_N[-1]),
            **extra,
        },
    )


def part_a(sizes: Sizes, budget: Budget) -> list[Row]:
    import jax

    from spamlang.train.config import TrainConfig

    accel, cpu = jax.devices()[0], jax.devices("cpu")[0]
    sides = f"xla on {accel.platform} vs xla on cpu"
    if accel.platform == "cpu":
        sides += " (CPU compared with CPU: no accelerator)"
    config = TrainConfig(
        preset="tiny",
        vocab_size=256,
        seq_len=64,
        batch_size=32,
        dtype="float32",
        kernels="xla",
        model={"n_layers": sizes.n_layers} if sizes.n_layers else {},
    )
    runs: dict[tuple, tuple] = {}

    def losses(device, kernels: str, precision: str | None):
        """Memoised: rows share runs, and with no accelerator both sides are one run."""
        key = (device.platform, device.id, kernels, precision)
        if key not in runs:
            runs[key] = float32_losses(
                config.replace(kernels=kernels), device, sizes.a_steps, precision
            )
        return runs[key]

    def same_program(precision: str | None, case: str):
        def measure():
            reference_N, _ = losses(accel, "xla", precision)
            losses_N, _ = losses(cpu, "xla", precision)
            return compare_losses("a", case, losses_N, reference_N, {})

        return measure

    def auto_kernels(case: str):
        def measure():
            reference_N, _ = losses(accel, "xla", None)
            losses_N, prog = losses(cpu, "auto", None)
            return compare_losses(
                "a",
                f"{case} ({prog.kernels} kernels)",
                losses_N,
                reference_N,
                {"n_micro": prog.n_micro},
            )

        return measure

    cases = [
        (f"{sides}, default precision", same_program(None, f"{sides}, default precision")),
        (
            f"kernels=auto on cpu vs xla on {accel.platform}",
            auto_kernels(f"kernels=auto on cpu vs xla on {accel.platform}"),
        ),
    ]
    if accel.platform != "cpu":  # on a CPU both precisions are the same float32 matmuls
        cases.insert(
            1,
            (f"{sides}, precision highest", same_program("highest", f"{sides}, precision highest")),
        )
    return [guarded("a", case, budget, measure) for case, measure in cases]


# ----- (b) throughput and MFU ---------------------------------------------------------------


def part_b(sizes: Sizes, budget: Budget, mesh) -> list[Row]:
    from spamlang.perf import step_timer
    from spamlang.train.step import program

    def measure(vocab: int, tied: bool, case: str):
        prog = program(paper_config(sizes, vocab, tied, sizes.loss_chunk), mesh)
        run = step_timer(prog)
        warmup_s = run(sizes.b_warmup_steps)  # compile and warm up
        timed_s = run(sizes.b_timed_steps)
        tokens_per_s = sizes.b_timed_steps * prog.config.tokens_per_step / timed_s
        return Row(
            "b",
            case,
            "ok",
            {
                "tokens_per_s": tokens_per_s,
                "mfu": mfu(prog, tokens_per_s),
                "step_ms": 1e3 * timed_s / sizes.b_timed_steps,
                "compile_and_warmup_s": warmup_s,
            },
        )

    rows = []
    for vocab in (sizes.vocab_small, sizes.vocab_large):
        for tied in (True, False):
            if not sizes.b_every_case and tied != (vocab == sizes.vocab_small):
                continue  # the smoke run's two cases take every code path of the four
            case = (
                f"{sizes.preset} {paper_dtype()} V={vocab:,} {'tied' if tied else 'untied'}, "
                f"seq {sizes.seq_len} x batch {sizes.batch_size}, chunk {sizes.loss_chunk}"
            )
            rows.append(
                guarded("b", case, budget, lambda v=vocab, t=tied, c=case: measure(v, t, c))
            )
    return rows


def paper_dtype() -> str:
    """The dtype every paper_fig5-based part runs in (bfloat16)."""
    return load_paper_fig5().base.dtype


# ----- (c) vmapped group vs one by one ------------------------------------------------------


def part_c(sizes: Sizes, budget: Budget, mesh) -> list[Row]:
    from spamlang.perf import step_timer
    from spamlang.train.step import program

    # At batch 64 the group of 5 needs ~194 GiB on one device by XLA's memory analysis
    # (benchmarks/paper_shape.py), more than an H200 holds; 16 sequences per member fit.
    sizes = dataclasses.replace(sizes, batch_size=sizes.group_batch_size)
    case = (
        f"{GROUP_SIZE} LRs vmapped vs {GROUP_SIZE} runs one by one, {sizes.preset} "
        f"{paper_dtype()} V={sizes.vocab_small:,} untied, batch {sizes.batch_size} per member"
    )

    def measure():
        prog = program(paper_config(sizes, sizes.vocab_small, False, sizes.loss_chunk), mesh)
        run_group = step_timer([(prog, GROUP_SIZE)])
        run_sequential = step_timer([(prog, 1)] * GROUP_SIZE)  # 5 states, one program
        run_group(1), run_sequential(1)  # compile (K=5 and K=1) and warm up
        best_group_s = best_sequential_s = float("inf")
        for _ in range(sizes.c_rounds):  # alternating, so drift biases neither side
            best_group_s = min(best_group_s, run_group(sizes.c_steps))
            best_sequential_s = min(best_sequential_s, run_sequential(sizes.c_steps))
        tokens = GROUP_SIZE * sizes.c_steps * prog.config.tokens_per_step
        group, sequential = tokens / best_group_s, tokens / best_sequential_s
        ratio = group / sequential
        verdict = "meets target" if ratio >= 2 else "below target"
        return Row(
            "c",
            case,
            f"ratio {ratio:.2f}x ({verdict} 2x)",
            {
                "vmapped_tokens_per_s": group,
                "sequential_tokens_per_s": sequential,
                "ratio": ratio,
                "mfu_vmapped": mfu(prog, group),
                "mfu_sequential": mfu(prog, sequential),
            },
        )

    return [guarded("c", case, budget, measure)]


# ----- (d) memory of the chunked and the plain loss -----------------------------------------


def memory_probe(config_json: str) -> dict:
    """Run in a fresh process: compile one member's step, read its memory analysis, then init
    and take one step with the compiled executable and read the device's peak."""
    import jax

    from spamlang.train.config import TrainConfig
    from spamlang.train.step import Program

    config = TrainConfig.from_json(json.loads(config_json))
    device = jax.devices()[0]
    prog = Program(config, one_device_mesh(device))
    out: dict = {"fits": True}
    try:
        compiled = prog.lower_step(1).compile()
    except Exception as error:
        if not is_out_of_memory(error):
            raise
        return {"fits": False, "failed_at": "compile", "error": str(error)[:300]}
    analysis = compiled.memory_analysis()
    if analysis is not None:
        out.update(
            temp_bytes=analysis.temp_size_in_bytes,
            argument_bytes=analysis.argument_size_in_bytes,
            output_bytes=analysis.output_size_in_bytes,
            alias_bytes=analysis.alias_size_in_bytes,
        )
        out["compiled_total_bytes"] = (
            out["temp_bytes"] + out["argument_bytes"] + out["output_bytes"]
        )
    try:
        state = prog.init([config.seed], [config.lr])
        state, metrics = compiled(state)  # the compiled step itself: no second compile
        jax.block_until_ready(metrics)
    except Exception as error:
        if not is_out_of_memory(error):
            raise
        out.update(fits=False, failed_at="step", error=str(error)[:300])
    stats = device.memory_stats()
    out["peak_in_use_bytes"] = stats.get("peak_bytes_in_use") if stats else None
    return out


def run_memory_probe(config, budget: Budget) -> dict:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--memory-probe",
        json.dumps(config.to_json()),
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, cwd=REPO, timeout=max(budget.left_s(), 30)
    )
    sys.stderr.write(proc.stderr[-4000:])
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"memory probe exited with {proc.returncode}: {tail}")
    return json.loads(lines[-1])


def part_d(sizes: Sizes, budget: Budget) -> list[Row]:
    import jax

    results: dict[int, dict] = {}

    def measure(loss_chunk: int, case: str):
        probe = run_memory_probe(paper_config(sizes, sizes.vocab_large, False, loss_chunk), budget)
        results[loss_chunk] = probe
        values = {
            k: probe.get(k)
            for k in (
                "compiled_total_bytes",
                "temp_bytes",
                "argument_bytes",
                "output_bytes",
                "alias_bytes",
                "peak_in_use_bytes",
            )
            if k in probe
        }
        if probe["fits"]:
            result = "fits"
        else:
            result = f"does not fit (out of memory at {probe['failed_at']})"
            values["error"] = probe["error"][:120]
        chunked_bytes = results.get(sizes.loss_chunk, {}).get("compiled_total_bytes")
        if loss_chunk == 0 and chunked_bytes and probe.get("compiled_total_bytes"):
            values["plain_over_chunked"] = probe["compiled_total_bytes"] / chunked_bytes
        return Row("d", case, result, values)

    where = (
        f"{sizes.preset} {paper_dtype()} V={sizes.vocab_large:,} untied, 1 member, "
        f"seq {sizes.seq_len} x batch {sizes.batch_size}"
    )
    if jax.devices()[0].memory_stats() is None:
        where += " (device reports no memory_stats)"
    rows = []
    for loss_chunk, name in (
        (sizes.loss_chunk, f"chunked loss (chunk {sizes.loss_chunk})"),
        (0, "plain loss (chunk 0)"),
    ):
        case = f"{name}, {where}"
        rows.append(guarded("d", case, budget, lambda k=loss_chunk, c=case: measure(k, c)))
    return rows


# ----- (e) the paper's V = 131,072 cell -----------------------------------------------------


def part_e(sizes: Sizes, budget: Budget, mesh) -> list[Row]:
    import jax

    from spamlang.train.step import program

    # One member of the cell (the paper's lr 5e-4) at the cell's real shape: the vmapped group
    # of 5 at batch 64 does not fit one accelerator (see part_c), so a sweep task on one GPU
    # trains the cell with --group-size 1, as this does.
    lrs = [5e-4]
    case = (
        f"paper_fig5 cell V={sizes.vocab_large:,} untied, lr 5e-4 (one member), "
        f"{sizes.e_steps} steps ({sizes.preset}, seq {sizes.seq_len} x batch "
        f"{sizes.batch_size})"
    )

    def steps(prog, state, n: int):
        for _ in range(n):
            state, metrics = prog.step(state)
        jax.block_until_ready(metrics)
        return state, metrics

    def measure():
        start = time.perf_counter()
        prog = program(paper_config(sizes, sizes.vocab_large, False, sizes.loss_chunk), mesh)
        state = prog.init(list(range(len(lrs))), lrs)
        state, metrics = steps(prog, state, 1)  # includes the compile
        first_step_s = time.perf_counter() - start
        done = 1
        while done < sizes.e_steps:
            n = min(
                sizes.e_probe_steps - 1 if done == 1 else sizes.e_chunk_steps, sizes.e_steps - done
            )
            state, metrics = steps(prog, state, n)
            done += n
            steady_step_s = (time.perf_counter() - start - first_step_s) / (done - 1)
            projected_left_s = (sizes.e_steps - done) * steady_step_s
            if projected_left_s > budget.left_s():
                break  # the rest would overrun the budget: report the projection instead
        wall_s = time.perf_counter() - start
        steady_tokens = (done - 1) * len(lrs) * prog.config.tokens_per_step  # after the compile
        tokens_per_s = steady_tokens / (wall_s - first_step_s) if done > 1 else None
        values = {
            "steps_done": done,
            "wall_s": wall_s,
            "compile_and_first_step_s": first_step_s,
            "tokens_per_s": tokens_per_s,
            "mfu": mfu(prog, tokens_per_s) if tokens_per_s else None,
            "final_losses": [float(x) for x in jax.device_get(metrics["loss"])],
            "lrs": lrs,
            "diverged_members": int(jax.device_get(state["diverged"]).sum()),
        }
        if done < sizes.e_steps:
            values["projected_wall_s"] = first_step_s + (sizes.e_steps - 1) * steady_step_s
            return Row("e", case, f"stopped at step {done} (budget): projection", values)
        return Row("e", case, "ok", values)

    return [guarded("e", case, budget, measure)]


# ----- main ---------------------------------------------------------------------------------


def header_lines() -> tuple[list[str], dict]:
    import jax

    from spamlang.perf import KNOWN_PEAKS, peak_flops

    devices = jax.devices()
    kind = devices[0].device_kind
    header = {
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "device_kind": kind,
        "device_count": len(devices),
        "peak_flops": {},
    }
    lines = [
        f"jax {jax.__version__}",
        f"backend: {jax.default_backend()}",
        f"devices: {len(devices)} x {kind} (every part uses device 0 only)",
    ]
    for dtype in ("float32", "bfloat16"):
        env = "SPAMLANG_PEAK_FLOPS" + ("_BF16" if dtype == "bfloat16" else "")
        known = any(
            name.lower() in kind.lower() and dtype in peaks for name, peaks in KNOWN_PEAKS.items()
        )
        source = "env " + env if os.environ.get(env) else "datasheet" if known else "measured"
        try:
            value = peak_flops(dtype)
            header["peak_flops"][dtype] = {"flops_per_s": value, "source": source}
            lines.append(f"peak FLOP/s {dtype}: {value:.4g} ({source})")
        except Exception as error:
            lines.append(f"peak FLOP/s {dtype}: ERROR: {type(error).__name__}: {error}")
    return lines, header


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--cpu-smoke",
        action="store_true",
        help="toy sizes on the CPU (JAX_PLATFORMS=cpu), under 2 minutes",
    )
    parser.add_argument(
        "--parts",
        default="abcde",
        help="comma-separated parts to run, e.g. a,b (default: all of a-e)",
    )
    parser.add_argument(
        "--budget-s",
        type=float,
        default=420.0,
        help="wall-clock budget in seconds; cases that would start after it are "
        "SKIPPED and part (e) stops early with a projection (default 420)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON file for the rows (default: $OUT/accelerator_check.json if "
        "OUT is set, else none)",
    )
    parser.add_argument("--memory-probe", default=None, help=argparse.SUPPRESS)  # part (d) child
    args = parser.parse_args(argv)
    args.parts = [p for p in args.parts.replace(",", "") if p.strip()]
    unknown = sorted(set(args.parts) - set(EXEC_ORDER))
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}; parts are a, b, c, d, e")
    if args.out is None and os.environ.get("OUT"):
        args.out = Path(os.environ["OUT"]) / "accelerator_check.json"
    return args


def setup_environment(cpu_smoke: bool) -> str | None:
    """Must run before JAX is imported. Returns a temporary cache directory to remove."""
    if cpu_smoke:
        os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        return None
    cache_dir = tempfile.mkdtemp(prefix="accelerator-check-xla-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = cache_dir
    return cache_dir


def run_parts(args, budget: Budget) -> int:
    import jax

    sizes = SMOKE_SIZES if args.cpu_smoke else GPU_SIZES
    lines, header = header_lines()
    header.update(sizes=dataclasses.asdict(sizes), cpu_smoke=args.cpu_smoke)
    print("\n".join(lines), flush=True)
    mesh = one_device_mesh(jax.devices()[0])  # shared, so program() reuses Programs across parts
    parts = {
        "a": lambda: part_a(sizes, budget),
        "b": lambda: part_b(sizes, budget, mesh),
        "c": lambda: part_c(sizes, budget, mesh),
        "d": lambda: part_d(sizes, budget),
        "e": lambda: part_e(sizes, budget, mesh),
    }
    rows: list[Row] = []
    for part in EXEC_ORDER:
        if part not in args.parts:
            continue
        try:
            rows += parts[part]()
        except Exception as error:  # a bug outside the guarded cases: still go on
            traceback.print_exc(file=sys.stderr)
            rows.append(Row(part, "(whole part)", f"ERROR: {type(error).__name__}: {error}"))
        write_json(args.out, header, rows, budget, complete=False)
    print()
    print(markdown_table(rows))
    print(f"\ntotal wall time {budget.elapsed_s():.1f} s (budget {budget.limit_s:.0f} s)")
    write_json(args.out, header, rows, budget, complete=True)
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.memory_probe is not None:
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        print(json.dumps(memory_probe(args.memory_probe)))
        return 0
    budget = Budget(args.budget_s)
    cache_dir = setup_environment(args.cpu_smoke)
    try:
        return run_parts(args, budget)
    finally:
        if cache_dir:
            shutil.rmtree(cache_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
