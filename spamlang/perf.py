"""Model FLOPs per token and the machine's measured matmul peak, for MFU reporting, and
`step_timer`, the step-timing loop the benchmarks share.

MFU = flops_per_token(config, L) * tokens_per_second / peak_flops(dtype).
"""

from __future__ import annotations

import contextlib
import functools
import os
import time

from spamlang.fields import positive_env
from spamlang.model.config import ModelConfig, count_params


def matmul_params(config: ModelConfig) -> int:
    """The N of "6 N": matmul parameters per token, the head's as often as applied (mos:K: K times;
    a tied W counts, the gather does not); no norm scales."""
    counts = count_params(config)
    D, V, e = config.d_model, config.vocab_size, config.embed_width
    norm_scales = (2 * config.n_layers + 1) * D
    head = counts["head"] + (V * D if config.tie_embeddings else 0)
    if config.head_kind == "mos":
        head += (config.head_arg - 1) * V * D
    return counts["non_embedding"] - norm_scales + head + counts["embedding"] - V * e


def flops_per_token(config: ModelConfig, seq_len: int) -> float:
    """6 N + 12 n_layers seq_len d_model per token (causal attention not halved, as PaLM counts)."""
    return 6.0 * matmul_params(config) + 12.0 * config.n_layers * seq_len * config.d_model


def machine_line() -> str:
    """A benchmark table's header line: CPU, cores, JAX devices, measured float32 matmul peak."""
    import jax

    return (
        f"# {cpu_model()}, {os.cpu_count()} CPU cores, {jax.device_count()} "
        f"{jax.devices()[0].platform} device(s); measured float32 matmul peak "
        f"{peak_flops('float32') / 1e9:.1f} GFLOP/s"
    )


def cpu_model() -> str:
    """The CPU's "model name" from /proc/cpuinfo (or platform.processor() elsewhere)."""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    import platform

    return platform.processor() or "unknown CPU"


def timing_machine() -> dict:
    """A result's `cpu` and `cores`: this CPU when JAX runs on it, else None (an accelerator's
    speed is not its host's)."""
    import jax

    on_cpu = jax.default_backend() == "cpu"
    return {"cpu": cpu_model() if on_cpu else None, "cores": os.cpu_count() if on_cpu else None}


def matmul_peak_flops(n: int = 2048, reps: int = 5, dtype: str = "float32") -> float:
    """Measured FLOP/s of a jitted n x n matmul in `dtype` on the default device: best of `reps`."""
    import jax
    import jax.numpy as jnp

    ka, kb = jax.random.split(jax.random.key(0))
    a = jax.random.normal(ka, (n, n), jnp.float32).astype(dtype)
    b = jax.random.normal(kb, (n, n), jnp.float32).astype(dtype)
    matmul = jax.jit(lambda a, b: a @ b)
    matmul(a, b).block_until_ready()  # compile and warm up
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        matmul(a, b).block_until_ready()
        best = min(best, time.perf_counter() - start)
    return 2.0 * n**3 / best


# Dense datasheet peaks, FLOP/s, by device_kind substring (float32 on NVIDIA: TF32, XLA's).
KNOWN_PEAKS = {
    "H200": {"bfloat16": 989e12, "float32": 494e12},
    "H100": {"bfloat16": 989e12, "float32": 494e12},  # SXM; PCIe parts are ~25% lower
    "A100": {"bfloat16": 312e12, "float32": 156e12},
    "TPU v5p": {"bfloat16": 459e12},
    "TPU v5 lite": {"bfloat16": 197e12},
    "TPU v4": {"bfloat16": 275e12},
}


# The variables that override the peak MFU divides by, per dtype (989T reads as 989e12).
PEAK_VARS = {"float32": "SPAMLANG_PEAK_FLOPS", "bfloat16": "SPAMLANG_PEAK_FLOPS_BF16"}
_PEAK_TEXT = "a positive number of FLOP/s (e.g. 989e12 or 989T)"


def check_peak_env() -> None:
    """UserError unless every set peak variable is a positive number, before any folder exists."""
    for var in PEAK_VARS.values():
        positive_env(var, _PEAK_TEXT)


def peak_flops(dtype: str = "float32", measure: bool = True) -> float | None:  # what MFU divides by
    return peak_and_source(dtype, measure)[0]


def peak_and_source(dtype: str = "float32", measure: bool = True) -> tuple[float | None, str]:
    """(FLOP/s, source) of the peak for `dtype`: its variable, a datasheet, for bfloat16
    SPAMLANG_PEAK_FLOPS, else measured (or (None, "") without `measure`)."""
    import jax

    var = PEAK_VARS["bfloat16" if dtype == "bfloat16" else "float32"]
    peak = positive_env(var, _PEAK_TEXT)
    if peak is not None:
        return peak, var
    kind = jax.devices()[0].device_kind
    for name, peaks in KNOWN_PEAKS.items():
        if name.lower() in kind.lower() and dtype in peaks:
            return peaks[dtype], f"the {name} datasheet"
    fallback = PEAK_VARS["float32"]
    if var != fallback and (peak := positive_env(fallback, _PEAK_TEXT)) is not None:
        return peak, f"{fallback} (no {var} given)"
    return (_measured_peak(dtype), "measured") if measure else (None, "")


@functools.cache
def _measured_peak(dtype: str) -> float:
    return float(matmul_peak_flops(dtype=dtype))


def step_timer(programs):
    """`run(n) -> seconds`: steps `programs` n more times, for benchmarks."""
    import jax

    pairs = programs if isinstance(programs, list) else [(programs, 1)]
    runs = [(p, p.init(list(range(k)), [p.config.lr] * k)) for p, k in pairs]
    states = [state for _, state in runs]

    def run(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            for i, (p, _) in enumerate(runs):
                states[i], metrics = p.step(states[i])
        jax.block_until_ready((states, metrics))
        return time.perf_counter() - start

    return run
