"""How many members of a vmapped group fit one device: XLA's memory analysis of the step.

When the runner knows the device's memory (`device_memory`: SPAMLANG_DEVICE_MEMORY, else the
device's own `bytes_limit`, which JAX sets at 75% of a GPU's memory by default), it compiles
the step of a group -- without running it or allocating anything -- and reads XLA's memory
analysis (`program_bytes`). A group that does not fit is trained in chunks of the most members
that do (`members_that_fit`), with one line saying so. When not even one member fits, the
sweep still trains one member per program rather than refusing: the figure is an analysis, not
an allocation, so the runtime's own out-of-memory error is the final word. On a CPU without the
variable nothing is compiled and nothing changes.

    SPAMLANG_DEVICE_MEMORY=80GiB python sweeps/paper_fig5.py     # declare an 80 GiB device
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
    """The default device's usable memory (module doc; UserError when the variable is not a
    size); None on a CPU without the variable, or a device that does not report it (no cap)."""
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
