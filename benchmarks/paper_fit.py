"""paper_fig5 on one 80 GiB device: how many of a cell's 5 LRs the sweep puts in one program.

`spamlang.sweep.fit.members_that_fit`, as `run_sweep` calls it for a group that does not fit,
on the cells of `sweeps/paper_fig5.py` (the sweep's own configs, batch 64 x seq 256 on ONE
device, as a SLURM array task with one GPU runs them) with the device memory declared by
SPAMLANG_DEVICE_MEMORY (default here 80GiB). It compiles the step -- never runs it -- with
kernels="xla", the accelerator path (plain matmuls, no micro-batches; a CPU would otherwise
pick its own kernels), on this machine's CPU (JAX_PLATFORMS=cpu): XLA:CPU's buffer
assignment, an estimate of a GPU's (see benchmarks/paper_shape.py). Prints, per cell, the
members per program, the bytes per device of every member count compiled, the line the sweep
prints, and the compile time.

    python benchmarks/paper_fit.py                      # V = 1,024 and 131,072, untied (~3 min)
    python benchmarks/paper_fit.py --cells untied       # every V, untied (12.5 min on 2 cores)
    python benchmarks/paper_fit.py --cells all          # all 16 (V, tying) cells (~25 min)
    SPAMLANG_DEVICE_MEMORY=141GB python benchmarks/paper_fit.py --cells largest  # an H200
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GiB = 2**30

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["XLA_FLAGS"] = " ".join(  # one device: the whole batch on it
    f
    for f in os.environ.get("XLA_FLAGS", "").split()
    if not f.startswith("--xla_force_host_platform_device_count")
)
os.environ.setdefault("SPAMLANG_DEVICE_MEMORY", "80GiB")


def paper_sweep():
    spec = importlib.util.spec_from_file_location("paper_fig5", REPO / "sweeps" / "paper_fig5.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SWEEP


def cells(sweep, which: str) -> list[tuple[str, list]]:
    """(first run id, the group's configs) of the chosen cells: each cell's LRs are a group."""
    from spamlang.sweep import groups

    chosen = []
    for group in groups(sweep):
        config = group[0][1]
        largest = config.vocab_size == max(sweep.axes["vocab_size"])
        smallest = config.vocab_size == min(sweep.axes["vocab_size"])
        if which == "all" or (
            not config.tie_embeddings
            and (largest or which == "untied" or (which == "ends" and smallest))
        ):
            chosen.append((group[0][0], [c for _, c in group]))
    return sorted(chosen, key=lambda c: c[1][0].vocab_size)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--cells",
        choices=("largest", "ends", "untied", "all"),
        default="ends",
        help="largest: V = 131,072 untied; ends: also V = 1,024 untied "
        "(default); untied: every V, untied (the larger of each V's two "
        "cells); all: every (V, tying) cell",
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    import jax

    from spamlang.perf import cpu_model
    from spamlang.sweep import fit

    memory = fit.device_memory()
    sweep = paper_sweep()
    print(
        f"# {sweep.name}: {fit.gib(memory.bytes)} from {memory.source}, "
        f"{fit.MARGIN:.0%} margin ({fit.gib(int(memory.bytes * (1 - fit.MARGIN)))} usable); "
        f"{jax.device_count()} {jax.default_backend()} device, kernels=xla; "
        f"{os.cpu_count()} x {cpu_model()}"
    )
    print("| cell | LRs | members per program | GiB per device by members compiled | compile s |")
    print("|---|---|---|---|---|")
    lines, start = [], time.perf_counter()
    for run_id, configs in cells(sweep, args.cells):
        config = configs[0].replace(kernels="xla")
        t0 = time.perf_counter()
        found = fit.members_that_fit(
            config, len(configs), memory_bytes=memory.bytes, source=memory.source
        )
        seconds = time.perf_counter() - t0
        tying = "tied" if config.tie_embeddings else "untied"
        measured = ", ".join(f"{k}: {n / GiB:.1f}" for k, n in found.needed.items())
        print(
            f"| V = {config.vocab_size:,} {tying} | {len(configs)} | **{found.members}** | "
            f"{measured} | {seconds:.0f} |",
            flush=True,
        )
        if found.members < found.k:
            lines.append(found.line(run_id))
        jax.clear_caches()
    print("# the sweep's lines (stderr):")
    for line in lines:
        print("#   " + line)
    print(
        f"# wall {time.perf_counter() - start:.0f} s; command: "
        f"SPAMLANG_DEVICE_MEMORY={os.environ['SPAMLANG_DEVICE_MEMORY']} "
        f"python benchmarks/paper_fit.py --cells {args.cells}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
