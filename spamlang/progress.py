"""Progress of long work (training, a long evaluation): a tqdm bar on a terminal, plain lines
otherwise.

Everything goes to stderr, so stdout stays clean for the result a CLI prints.
"""

from __future__ import annotations

import sys
import time

from spamlang.fields import positive_env


def log_seconds() -> float:  # SPAMLANG_LOG_SECONDS (default 30): between a log's lines
    seconds = positive_env("SPAMLANG_LOG_SECONDS", "a number of seconds > 0")
    return 30.0 if seconds is None else seconds


class Progress:
    """Steps, loss and tokens/s: a tqdm bar on a TTY, else a line every `every_s` seconds."""

    def __init__(
        self, total: int, start: int, *, label: str, quiet: bool, every_s: float | None = None
    ):
        self.quiet, self.total, self.label = quiet, total, label
        self.every_s = log_seconds() if every_s is None else every_s
        self._bar = None
        self._last_line = None  # time of the last plain line (the first log always gets one)
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(
                total=total, initial=start, desc=label, unit="step", dynamic_ncols=True
            )

    def advance(self, step: int) -> None:  # every step (host only, no device sync)
        if self._bar is not None:
            self._bar.update(step - self._bar.n)

    def logged(self, step: int, losses: list, tokens_per_s: float | None) -> None:  # log steps
        if self.quiet:
            return
        shown = " ".join("nan" if v is None else f"{v:.4g}" for v in losses[:8])
        if len(losses) > 8:
            shown += " ..."
        speed = f"{tokens_per_s:,.0f}" if tokens_per_s else "?"
        if self._bar is not None:
            self._bar.set_postfix_str(f"loss {shown}, {speed} tok/s", refresh=False)
            self.advance(step)
        elif (
            self._last_line is None
            or step == self.total
            or time.perf_counter() - self._last_line >= self.every_s
        ):
            self._last_line = time.perf_counter()
            self.message(f"step {step}/{self.total}  loss {shown}  {speed} tok/s")

    def message(self, text: str) -> None:
        if self.quiet:
            return
        line = f"[{self.label}] {text}"
        if self._bar is not None:
            self._bar.write(line, file=sys.stderr)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def wait_for(
    arrays,
    progress: Progress,
    what: str,
    *,
    notice_s: float = 3.0,
    every_s: float = 10.0,
    clock=time.perf_counter,
    sleep=time.sleep,
) -> None:
    """Wait for `arrays`, after `notice_s` seconds saying so every `every_s`."""
    import jax

    leaves = [x for x in jax.tree.leaves(arrays) if hasattr(x, "is_ready")]
    began, shown, pause = clock(), None, 0.001
    while not all(x.is_ready() for x in leaves):
        waited = clock() - began
        if waited >= notice_s and (shown is None or waited - shown >= every_s):
            progress.message(f"{what}: {waited:.0f} s so far")
            shown = waited
        sleep(pause)
        pause = min(2 * pause, 0.1)
    if shown is not None:
        progress.message(f"{what}: done in {clock() - began:.0f} s")
