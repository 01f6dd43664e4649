"""How a run is asked to stop: the first SIGINT / SIGTERM becomes a flag the training loop
reads at its log steps, where it checkpoints and raises `spamlang.errors.Interrupted`; with
several processes, all agree on it first, so that they save the same step.
"""

from __future__ import annotations

import contextlib
import signal
import threading

import jax
import numpy as np


@contextlib.contextmanager
def stop_requests():
    """Turn the first SIGINT / SIGTERM into a flag the loop reads at its log steps.

    Yields the list the received signal numbers are appended to. The handlers restore the
    previous ones on the first signal, so a second Ctrl-C interrupts at once.
    """
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received  # signals are only delivered to the main thread
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum, frame):
        received.append(signum)
        for s, h in previous.items():
            signal.signal(s, h)

    for s in previous:
        signal.signal(s, handler)
    try:
        yield received
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def stop_signal(received: list, step: int, stop_after_step: int | None) -> int | None:
    """The signal to stop on at this log step (0: `stop_after_step`), or None to go on. With
    several processes all must agree, or their saves would deadlock: one allgather per log
    step, and all exit with the same status."""
    if stop_after_step is not None and step >= stop_after_step:
        return 0
    if jax.process_count() == 1:
        return received[0] if received else None
    from jax.experimental import multihost_utils

    signum = int(
        np.max(multihost_utils.process_allgather(np.int32(received[0] if received else 0)))
    )
    return signum or None
