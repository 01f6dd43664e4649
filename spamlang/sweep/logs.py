"""What a sweep says while its runs train, read from their run directories (the runs train
quietly, unaware of the sweep).

On a terminal the bar shows the running run's step, an ETA and its latest loss; elsewhere (a
SLURM log, nohup), unless --quiet, a line per running run or group every SPAMLANG_LOG_SECONDS
seconds, and one when a run resumes from a checkpoint.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from pathlib import Path

from tqdm import tqdm

from spamlang.fields import finite
from spamlang.progress import log_seconds
from spamlang.rundir.reading import last_row
from spamlang.rundir.schema import CHECKPOINTS, METRICS

_BAR_SECONDS = 2.0  # how often the bar's loss is refreshed


def checkpoint_step(run_dir: Path) -> int | None:
    """The newest checkpoint's step (the largest integer subfolder of checkpoints/), or None."""
    try:
        steps = [
            int(p.name)
            for p in (run_dir / CHECKPOINTS).iterdir()
            if p.name.isdigit() and p.is_dir()
        ]
    except OSError:
        return None
    return max(steps, default=None)


def _is_train(row: dict) -> bool:
    return row.get("kind") == "train" and "loss" in row


def _losses(rows: list[dict]) -> str:
    losses = [v for r in rows if (v := finite(r["loss"])) is not None]
    if not losses:
        return "nan"
    text = f"{min(losses):.3f}" + (f"..{max(losses):.3f}" if len(losses) > 1 else "")
    return text + (" (and nan)" if len(losses) < len(rows) else "")


def position(first: int, count: int, total: int) -> str:  # [3/12], a group of 4: [3-6/12]
    return f"[{first}/{total}]" if count == 1 else f"[{first}-{first + count - 1}/{total}]"


def announce_resumes(bar, run_ids: list[str], run_dirs: list[Path], done: int, total: int) -> None:
    # A line on stderr for each run about to resume from a checkpoint.
    for k, (run_id, run_dir) in enumerate(zip(run_ids, run_dirs)):
        step = checkpoint_step(run_dir)
        if step:
            bar.write(
                f"{position(done + 1 + k, 1, total)} {run_id}: resuming from step {step}",
                file=sys.stderr,
            )


def _eta(began: tuple[float, int], now: float, step: int, steps: int) -> str:
    """', ETA 12:34' from the steps done since `began` (time, step); '' before any was."""
    t0, s0 = began
    if step <= s0 or now <= t0:
        return ""
    left = (steps - step) * (now - t0) / (step - s0)
    return f", ETA {tqdm.format_interval(left).removeprefix('0')}"  # tqdm's 02:10 as 2:10


@contextlib.contextmanager
def watch(bar, label: str, run_dirs: list[Path], *, steps: int, first: int, total: int, quiet):
    """While a run trains: its loss on the bar, or a line every `log_seconds()`."""
    on_bar = not bar.disable
    in_log = not on_bar and not quiet
    every_s = _BAR_SECONDS if on_bar else log_seconds() if in_log else 0.0
    prefix = position(first, len(run_dirs), total)
    stop = threading.Event()

    def loop():
        said = 0  # the step of the last log line
        began = None  # (time, step) when the first row was seen: the rate is measured from it
        while not stop.wait(every_s):
            rows = [r for d in run_dirs if (r := last_row(d / METRICS, _is_train))]
            if not rows:
                continue
            step, now = min(r.get("step", 0) for r in rows), time.monotonic()
            began = began or (now, step)
            where = f"step {step}/{steps}{_eta(began, now, step, steps)}"
            if on_bar:  # the bar counts runs: a group's steps and ETA go beside it
                bar.set_postfix_str(f"{label}: {where}, loss {_losses(rows)}")
            elif step > said:
                said = step
                print(
                    f"{prefix} {label}: {where}, loss {_losses(rows)}", file=sys.stderr, flush=True
                )

    thread = threading.Thread(target=loop, daemon=True)
    if on_bar:
        bar.set_postfix_str(label)
    if on_bar or in_log:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        if thread.is_alive():
            thread.join()
