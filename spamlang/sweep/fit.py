"""How many members of a vmapped group fit one device: XLA's memory analysis of the step.

With the device's memory known (SPAMLANG_DEVICE_MEMORY, else the device's own `bytes_limit`),
the runner compiles a group's step without running it (`program_bytes`) and trains a group that
does not fit in chunks of the most members that do (`members_that_fit`). When not even one fits
it still trains one: the analysis is an estimate, the runtime's out-of-memory error is final.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
from typing import Any

from spamlang.errors import UserError

ENV = "SPAMLANG_DEVICE_MEMORY"

# The share of the device's memory left free: XLA's buffer assignment is exact for the step's
# own buffers, but the allocator fragments, the runtime, the collectives, the evaluation and a
# checkpoint's host transfers need buffers of their own. 10% of 80 GiB is 8 GiB, several times
# one member's parameters and optimizer state at 106M.
MARGIN = 0.10

# Compiles per search, including the group's own and one member's: memory is close to linear
# in the member count (each member adds its state and its activations), so the line through
# 1 and K members predicts the answer and a third compile checks it; a fourth corrects a guess
# that did not fit.
MAX_COMPILES = 4

_BYTES = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*((?:[kmgt]i?)?)(b?)\s*$", re.I)


def parse_bytes(text: str) -> int:
    """A memory size: bytes (`85899345920`, `8.6e10`) or with a unit: K/M/G/T and KiB/MiB/GiB/TiB
    are powers of 1,024 (`80G` = `80GiB`), KB/MB/GB/TB powers of 1,000 (`80GB` = 8e10 bytes).
    ValueError for anything else, or for a size that is not positive."""
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
    """The usable memory of one device and where the figure came from."""

    bytes: int
    source: str  # "SPAMLANG_DEVICE_MEMORY" or "cuda:0 bytes_limit"


def device_memory() -> DeviceMemory | None:
    """The default device's usable memory: SPAMLANG_DEVICE_MEMORY (UserError when it is not a
    size), else the device's `bytes_limit` (JAX sets 75% of a GPU's by default); None on a CPU
    without the variable, or a device that does not report it (no cap)."""
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
    """Device memory of a compiled program from XLA's memory analysis, per device: argument +
    output + temporaries - aliased (donated) buffers; the generated code is left out (kilobytes).
    The evaluation is a separate program, and the runtime keeps buffers of its own: MARGIN."""
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
    """Bytes per device that the step of `k` members of `config` needs, compiled (not run) on
    `mesh` (default: the default mesh, as a sweep trains); remembered per program and k."""
    from spamlang.train.step import program

    return _step_bytes(program(config, mesh), k)


@functools.lru_cache(maxsize=32)
def _step_bytes(prog: Any, k: int) -> int:
    return compiled_bytes(prog.lower_step(k).compile())


@dataclasses.dataclass(frozen=True)
class Fit:
    """What `members_that_fit` found: `members` (0: not even one) of a group of `k`, and the
    bytes per device of every member count it compiled."""

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
        """The one line a sweep prints for a group that does not fit (`label`: its first run).

        group_size: the user's --group-size (0: none), which the sweep keeps: the line warns."""
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
    """A size in GiB with one decimal, or MiB / KiB below a GiB (test programs are small)."""
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
    """The most members, at most `k`, whose step of `config` fits `memory_bytes` x (1 - margin)
    per device, by compiling the step (never running it).

    The search compiles K members (fits: done) and 1 member (does not fit: 0). Between them it
    takes the largest count that the straight line through the two measured counts predicts
    fits (memory is close to linear in the member count), and compiles that count to check it;
    one that does not fit becomes the new upper end and the line is drawn again, for at most
    MAX_COMPILES compiles in all (usually 2 or 3). The answer is always a count whose compiled
    step fits (or 0); when the budget runs out it may be smaller than the true largest.
    """
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


# ----- before a run: the memory it needs and the files it writes -----------------------------
# `check_run` estimates both from a run's shape alone, before anything is written or allocated:
# its memory a step (`memory_needs`) against the device's (on a CPU, the host's MemAvailable;
# SPAMLANG_DEVICE_MEMORY overrides both), refused above it; its output (`output_bytes`), warned
# of above OUTPUT_WARN.

# Bytes per parameter held through a step (float32): the parameters, their gradient and the
# optimizer's state (Adam: m and v; SGD: momentum; Adafactor: factored, about one more). With
# the terms of `memory_needs`, 10% under to 5% under XLA's analysis of the compiled step (on a
# CPU: small at L 64, B 32; smollm2-106m at 2 and 4 layers, L 64-256, B 64-256), 20% over for
# tiny's 5 MiB: an estimate low where it matters, so a refusal errs toward letting a run try.
_STATE_FLOATS = {"adamw": 4, "lazy_adamw": 4, "sgd": 3, "adafactor": 3}
# A chunk of the cross-entropy holds about this many [chunk, V] float32 arrays (logits, their
# softmax, their gradient and the head's product).
_LOGIT_ARRAYS = 4
# Output above this many bytes is warned of before the run starts (`check_run`).
OUTPUT_WARN = 10**9
# Characters one float takes in a JSON row (float32 values written as Python floats:
# "0.0012345000030472875, "), and one small count ("0, ").
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
    """A step's memory per device for `members` runs of `config` vmapped on `devices` devices
    (data-parallel: the state replicated, the batch split) with `kernels` ("cpu" splits the
    batch into cache-sized micro-batches when micro_batch is 0): an estimate from the shape,
    per layer and token 16 D + 4 d_ff + 2 n_heads L floats kept for the backward."""
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
    """This machine's available memory: MemAvailable of /proc/meminfo, else the physical memory
    (os.sysconf); None where neither is known."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return DeviceMemory(int(line.split()[1]) * 1024, "MemAvailable, /proc/meminfo")
    except (OSError, ValueError, IndexError):
        pass
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return DeviceMemory(pages * size, "physical memory") if pages > 0 and size > 0 else None


def output_bytes(config: Any) -> dict[str, int]:
    """The bytes a whole run writes, by file, where they may be large: track.jsonl (one row a
    step of track_symbols ids and their rows' updates), symbol_evals.jsonl (an exact
    evaluation's row of every symbol, at each evaluation) and the checkpoints kept (parameters
    and optimizer state). From the shape alone, to the nearest few per cent."""
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


def check_run(config: Any, members: int = 1) -> str | None:
    """Before anything is written or allocated: UserError (`memory_refusal`'s line) when a step
    of `members` runs of `config` does not fit memory; else `output_warning`'s line or None."""
    if line := memory_refusal(config, members):
        raise UserError(line)
    return output_warning(config)


def memory_refusal(config: Any, members: int = 1) -> str | None:
    """One line when a step of `members` runs of `config` needs more memory than the device
    has (the host's on a CPU), naming the largest part and what lowers it; None
    when it fits or no memory is known."""
    import jax

    from spamlang.model.kernels import resolve

    backend, devices = jax.default_backend(), jax.device_count()
    needs = memory_needs(config, members, devices, resolve(config.kernels, backend))
    memory = device_memory() or (host_memory() if backend == "cpu" else None)
    if backend == "cpu" and memory is not None and memory.source != ENV:
        memory = DeviceMemory(memory.bytes // devices, memory.source)  # shared by the devices
    if memory is None or needs.total <= memory.bytes:
        return None
    return _too_big(config, needs, memory, members)


def output_warning(config: Any, runs: int = 1) -> str | None:
    """The warning line when `runs` runs of `config` write more than OUTPUT_WARN bytes, by
    file (`output_bytes`); None below it."""
    files = {name: n * runs for name, n in output_bytes(config).items()}
    total = sum(files.values())
    if total <= OUTPUT_WARN:
        return None
    parts = sorted(files.items(), key=lambda kv: -kv[1])
    shown = ", ".join(f"{name} {size_text(n)}" for name, n in parts if n)
    if "track.jsonl" in files:
        shown += (
            f" (track.jsonl: {size_text(files['track.jsonl'] / runs / config.steps)} a step for "
            f"track_symbols {config.track_symbols:,} x {config.steps:,} steps)"
        )
    who = "this run" if runs == 1 else f"these {runs} runs"
    return f"warning: {who} will write about {size_text(total)}: {shown}"


def _too_big(config: Any, needs: Needs, memory: DeviceMemory, members: int) -> str:
    """The one line of `check_run`'s refusal."""
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
    who = f"{members} vmapped runs" if members > 1 else "this run"
    return (
        f"{who} would need about {gib(needs.total)} of memory a step ({shown}), more than the "
        f"{gib(memory.bytes)} available ({memory.source}); {fix}, or set {ENV} to the memory "
        "to assume"
    )
