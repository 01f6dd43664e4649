"""How many members of a vmapped group fit one device: XLA's memory analysis of the step.

With the device's memory known (SPAMLANG_DEVICE_MEMORY, else the device's own `bytes_limit`),
the runner compiles a group's step without running it (`program_bytes`) and trains a group that
does not fit in chunks of the most members that do (`members_that_fit`). When not even one fits
it still trains one: the analysis is an estimate, the runtime's out-of-memory error is final.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import re
from typing import Any

from spamlang.errors import UserError

ENV = "SPAMLANG_DEVICE_MEMORY"

# The memory left free: beyond the step's own buffers, the runtime, evaluation and checkpoints.
MARGIN = 0.10
# Compiles per search: K members, 1 member, a guess from the line through them, one correction.
MAX_COMPILES = 4

_BYTES = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*((?:[kmgt]i?)?)(b?)\s*$", re.I)


def parse_bytes(text: str) -> int:
    """Bytes, or with a unit: K..T and KiB..TiB binary, KB..TB decimal; ValueError otherwise."""
    match = _BYTES.match(str(text))
    if not match:
        raise ValueError(f"expected bytes or a size such as 80GiB, got {text!r}")
    number, unit, suffix = match.groups()
    unit = unit.lower()
    decimal = suffix and unit in ("k", "m", "g", "t")  # "80GB": decimal; "80G", "80GiB": binary
    power = "kmgt".index(unit[0]) + 1 if unit else 0
    value = float(number) * (1000 if decimal else 1024) ** power
    if not math.isfinite(value) or value < 1:
        raise ValueError(f"expected a positive size, got {text!r}")
    return int(value)


@dataclasses.dataclass(frozen=True)
class DeviceMemory:
    bytes: int
    source: str  # "SPAMLANG_DEVICE_MEMORY" or "cuda:0 bytes_limit"


def device_memory() -> DeviceMemory | None:
    """SPAMLANG_DEVICE_MEMORY (UserError if bad), else the device's `bytes_limit`; None on a CPU."""
    text = os.environ.get(ENV, "").strip()
    if text:
        try:
            return DeviceMemory(parse_bytes(text), ENV)
        except ValueError as e:
            raise UserError(
                f"{ENV}={os.environ[ENV]!r} is not a memory size ({e}); use bytes "
                "or a size such as 80GiB"
            ) from None
    import jax

    device = jax.local_devices()[0]
    if device.platform == "cpu":
        return None  # host memory is not the limit that matters here, and CPUs run groups small
    try:
        stats = device.memory_stats() or {}
    except Exception:  # a backend without memory statistics
        return None
    limit = stats.get("bytes_limit")
    if not isinstance(limit, int) or limit <= 0:
        return None
    return DeviceMemory(limit, f"{device.platform}:{device.id} bytes_limit")


def compiled_bytes(compiled: Any) -> int:
    """Per-device bytes of XLA's memory analysis: arguments + outputs + temps - aliased buffers."""
    mem = compiled.memory_analysis()
    if mem is None:
        raise RuntimeError("this backend gives no memory analysis of a compiled program")
    return int(
        mem.argument_size_in_bytes
        + mem.output_size_in_bytes
        + mem.temp_size_in_bytes
        - mem.alias_size_in_bytes
    )


def program_bytes(config: Any, k: int, mesh: Any = None) -> int:
    """Bytes per device the step of `k` members of `config` needs, compiled (not run) on `mesh`."""
    from spamlang.train.step import program

    return _step_bytes(program(config, mesh), k)


@functools.lru_cache(maxsize=32)
def _step_bytes(prog: Any, k: int) -> int:
    return compiled_bytes(prog.lower_step(k).compile())


@dataclasses.dataclass(frozen=True)
class Fit:
    """`members` (0: not even one) of a group of `k`, and the bytes of every count compiled."""

    members: int
    k: int
    needed: dict[int, int]
    memory: int
    margin: float
    source: str = ""

    @property
    def usable(self) -> int:
        return int(self.memory * (1 - self.margin))

    def line(self, label: str, group_size: int = 0) -> str:
        """The line for a group that does not fit (a given `group_size` warns)."""
        where = gib(self.memory) + (f" from {self.source}" if self.source else "")
        asked = f" (--group-size {group_size})" if group_size else ""
        head = (
            f"{label}: group of {self.k}{asked} needs {gib(self.needed[self.k])} > "
            f"{gib(self.usable)} usable ({where}, {self.margin:.0%} margin): "
        )
        n = self.members
        if n == 0:
            one = f"even 1 member needs {gib(self.needed[1])}"
            if group_size:
                return head + f"it may run out of memory ({one})"
            return head + f"{one}; training 1 member per program, which may run out of memory"
        fits = f"{n} member{'s' if n > 1 else ''} per program ({gib(self.needed[n])})"
        return head + (f"it may run out of memory; {fits} would fit" if group_size else fits)


def gib(n: int) -> str:
    """A size in GiB with one decimal, or MiB / KiB below a GiB."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def members_that_fit(
    config: Any,
    k: int,
    mesh: Any = None,
    *,
    memory_bytes: int,
    margin: float = MARGIN,
    source: str = "",
) -> Fit:
    """The most members, at most `k`, whose compiled (never run) step fits the usable memory: K,
    then 1, then the count the line through two measured counts predicts fits (memory is close to
    linear in members), at most MAX_COMPILES compiles; the answer's step always fits."""
    if k < 1:
        raise ValueError(f"members_that_fit needs k >= 1, got {k}")
    usable = memory_bytes * (1 - margin)
    needed: dict[int, int] = {}

    def fits(n: int) -> bool:
        needed[n] = program_bytes(config, n, mesh)
        return needed[n] <= usable

    def result(members: int) -> Fit:
        return Fit(members, k, dict(sorted(needed.items())), memory_bytes, margin, source)

    if fits(k):
        return result(k)
    if k == 1 or not fits(1):
        return result(0)
    lo, hi = 1, k  # lo fits, hi does not
    while hi - lo > 1 and len(needed) < MAX_COMPILES:
        per_member = (needed[hi] - needed[lo]) / (hi - lo)  # > 0: needed[hi] > usable >= needed[lo]
        guess = min(hi - 1, lo + int((usable - needed[lo]) // per_member))
        if guess <= lo:
            break  # the line says lo + 1 members do not fit
        if fits(guess):
            lo = guess
        else:
            hi = guess
    return result(lo)


# ----- before a run, from its shape alone: the memory a step needs, the files it writes -------

# Float32 values per parameter held through a step (a low estimate: refusals err toward trying).
_STATE_FLOATS = {"adamw": 4, "lazy_adamw": 4, "sgd": 3, "adafactor": 3}
# [chunk, V] float32 arrays of a loss chunk: logits, softmax, gradient, the head's product.
_LOGIT_ARRAYS = 4
OUTPUT_WARN = 10**9  # bytes of output warned of before the run starts
# Characters of one float32 written as a Python float in a JSON row, and of one small count.
_JSON_FLOAT, _JSON_COUNT = 23, 3


@dataclasses.dataclass(frozen=True)
class Needs:
    """A step's memory per device, by part (bytes), and the micro-batch it was reckoned at."""

    state: int  # parameters, gradients, optimizer state (every member)
    activations: int  # what the backward keeps of one micro-batch (every member)
    logits: int  # one chunk of the cross-entropy (every member)
    micro_tokens: int  # tokens of one micro-batch on one device

    @property
    def total(self) -> int:
        return self.state + self.activations + self.logits


def memory_needs(config: Any, members: int = 1, devices: int = 1, kernels: str = "xla") -> Needs:
    """A step's memory per device for `members` runs vmapped on `devices`, estimated from the shape:
    per layer and token, 16 D + 4 d_ff + 2 n_heads L floats kept for the backward."""
    from spamlang.model.config import count_params

    model = config.model_config()
    width = 2 if config.dtype == "bfloat16" else 4  # activations in the matmul dtype
    from types import SimpleNamespace

    from spamlang.model.kernels import micro_batches

    mesh = SimpleNamespace(devices=SimpleNamespace(size=devices))  # all it reads of a mesh
    tokens = config.batch_size // devices // micro_batches(config, mesh, kernels) * config.seq_len
    per_token = model.n_layers * (
        16 * model.d_model + 4 * model.d_ff + 2 * model.n_heads * config.seq_len
    )
    chunk = min(config.loss_chunk or tokens, tokens)
    params = count_params(model)["total"]
    return Needs(
        state=members * 4 * params * _STATE_FLOATS.get(config.optimizer, 4),
        activations=members * tokens * per_token * width,
        logits=members * _LOGIT_ARRAYS * chunk * model.vocab_size * 4,
        micro_tokens=tokens,
    )


def host_memory() -> DeviceMemory | None:
    """MemAvailable of /proc/meminfo, else the physical memory; None where neither is known."""
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return DeviceMemory(int(line.split()[1]) * 1024, "MemAvailable, /proc/meminfo")
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return DeviceMemory(pages * size, "physical memory") if pages > 0 and size > 0 else None


def output_bytes(config: Any) -> dict[str, int]:
    """Bytes a run writes, by file where they may be large, from the shape alone."""
    from spamlang.model.config import count_params

    model, out = config.model_config(), {}
    if config.track_symbols:
        tables = 1 if config.tie_embeddings else 2  # each tracked table's updates: a float each
        ids = sum(len(str(i)) + 2 for i in config.tracked_ids)
        per_step = ids + config.track_symbols * (_JSON_COUNT + tables * _JSON_FLOAT) + 60
        out["track.jsonl"] = per_step * config.steps
    if config.corpus is None:
        from spamlang.evaluate import exact

        if exact.applies(config.make_language()):
            evals = 1 + (config.steps // config.eval_every if config.eval_every else 0)
            out["symbol_evals.jsonl"] = evals * config.vocab_size * (_JSON_FLOAT + 4 * 6)
    state = count_params(model)["total"] * 4 * (_STATE_FLOATS.get(config.optimizer, 4) - 1)
    out["checkpoints"] = state * config.keep_checkpoints
    return out


def size_text(n: float) -> str:
    """Bytes on disk, decimal as disks are sold: 7.4 MB, 9.2 GB."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def check_run(config: Any) -> str | None:
    """UserError when a step of the run does not fit memory; else the output warning."""
    if line := memory_refusal(config):
        raise UserError(line)
    files = dict(sorted(output_bytes(config).items(), key=lambda kv: -kv[1]))  # largest first
    line = output_warning(files, "this run")
    if line and "track.jsonl" in files:
        line += (
            f" (track.jsonl: {size_text(files['track.jsonl'] / config.steps)} a step for "
            f"track_symbols {config.track_symbols:,} x {config.steps:,} steps)"
        )
    return line


def memory_refusal(config: Any) -> str | None:
    """One line when a step needs more memory than the device has (the host's on a CPU), naming the
    largest part and what lowers it; None when it fits or no memory is known."""
    import jax

    from spamlang.model.kernels import resolve

    backend, devices = jax.default_backend(), jax.device_count()
    needs = memory_needs(config, 1, devices, resolve(config.kernels, backend))
    memory = device_memory() or (host_memory() if backend == "cpu" else None)
    if backend == "cpu" and memory is not None and memory.source != ENV:
        memory = DeviceMemory(memory.bytes // devices, memory.source)  # shared by the devices
    if memory is None or needs.total <= memory.bytes:
        return None
    return _too_big(config, needs, memory)


def output_warning(files: dict[str, float], who: str) -> str | None:
    """The warning when `who` writes `files` (name -> bytes), more than OUTPUT_WARN; else None."""
    total = sum(files.values())
    if total <= OUTPUT_WARN:
        return None
    shown = ", ".join(f"{name} {size_text(n)}" for name, n in files.items() if n)
    return f"warning: {who} will write about {size_text(total)}: {shown}"


def _too_big(config: Any, needs: Needs, memory: DeviceMemory) -> str:
    parts = {
        "activations": (
            needs.activations,
            f"activations of {needs.micro_tokens:,} tokens a micro-batch",
            "lower micro_batch (--micro-batch), batch_size or seq_len",
        ),
        "state": (
            needs.state,
            "parameters, gradients and optimizer state",
            "choose a smaller model or vocabulary",
        ),
        "logits": (
            needs.logits,
            f"a loss chunk of {min(config.loss_chunk or needs.micro_tokens, needs.micro_tokens):,}"
            f" tokens x V {config.vocab_size:,}",
            "lower loss_chunk (--loss-chunk)",
        ),
    }
    shown = "; ".join(f"{what} {gib(n)}" for n, what, _ in parts.values())
    fix = max(parts.values(), key=lambda p: p[0])[2]
    return (
        f"this run would need about {gib(needs.total)} of memory a step ({shown}), more than the "
        f"{gib(memory.bytes)} available ({memory.source}); {fix}, or set {ENV} to the memory "
        "to assume"
    )
