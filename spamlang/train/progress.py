"""Progress reporting for a training loop: a tqdm bar on a terminal, plain lines otherwise.

Everything goes to stderr, so stdout stays clean for the result a CLI prints.
"""

from __future__ import annotations

import sys
import time


class Progress:
    """Report steps, loss and tokens/s; silent with quiet=True.

    On a TTY a tqdm bar with the latest logged loss and tokens/s; elsewhere (logs of batch
    jobs) one line every `line_every` steps and a line for each event (eval, resume, ...).
    """

    def __init__(self, total: int, start: int, *, label: str, quiet: bool, line_every: int):
        self.quiet = quiet
        self.total = total
        self.label = label
        self.line_every = max(1, line_every)
        self._bar = None
        self._last_line = None  # step of the last plain line (the first log always gets one)
        self._t0 = time.perf_counter()
        if quiet:
            return
        if sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, initial=start, desc=label, unit="step",
                             dynamic_ncols=True, leave=True, file=sys.stderr)

    def advance(self, step: int) -> None:
        """Called every step (host only, no device sync)."""
        if self._bar is not None:
            self._bar.update(step - self._bar.n)

    def logged(self, step: int, losses: list, tokens_per_s: float | None) -> None:
        """Called at each log step with the members' logged losses."""
        if self.quiet:
            return
        shown = " ".join("nan" if v is None else f"{v:.4g}" for v in losses[:8])
        if len(losses) > 8:
            shown += " ..."
        speed = f"{tokens_per_s:,.0f}" if tokens_per_s else "?"
        if self._bar is not None:
            self._bar.set_postfix_str(f"loss {shown}, {speed} tok/s", refresh=False)
            self.advance(step)
        elif (self._last_line is None or step == self.total
              or step // self.line_every > self._last_line // self.line_every):
            self._last_line = step
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
