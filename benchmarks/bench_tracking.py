"""What a tracker costs per logged metrics row (`spamlang.tracking`): the time of its `row()`
on a train row and on an eval row, against the run's own metrics.jsonl append.

    python benchmarks/bench_tracking.py [--quick]

W&B runs offline (WANDB_MODE=offline): the cost on the training process, without the network.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from spamlang import rundir, tracking
from spamlang.train import TrainConfig

TRAIN = {
    "kind": "train",
    "step": 0,
    "tokens": 0,
    "loss": 5.1,
    "accuracy": 0.01,
    "grad_norm": 1.3,
    "lr": 3e-3,
    "tokens_per_s": 12345.0,
    "mfu": 0.01,
}
EVAL = {"kind": "eval", "step": 0, "tokens": 0, **{f"metric_{i}": 0.5 + i for i in range(25)}}


def per_row(log, row: dict, n: int, first: int) -> float:
    start = time.perf_counter()
    for i in range(first, first + n):
        log.append({**row, "step": i})
    return (time.perf_counter() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    n = 200 if parser.parse_args().quick else 2000
    os.environ.setdefault("WANDB_MODE", "offline")
    config = TrainConfig(preset="tiny", vocab_size=64, seq_len=2)
    print(f"| tracker | train row (9 numbers) | eval row (25 numbers) |  ({n} rows each)")
    print("|---|---|---|")
    for kind in (None, "tensorboard", "wandb"):
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = Path(tmp) / "run"
            run_dir.mkdir()
            spec = tracking.TrackerSpec(kind, True, Path(tmp)) if kind else None
            with tracking.session(spec):
                log = tracking.attach(rundir.MetricsLog(run_dir, 0), run_dir, config, 0)
                train = per_row(log, TRAIN, n, 1)
                evals = per_row(log, EVAL, n, n + 1)
                log.close()
        print(
            f"| {kind or 'none (metrics.jsonl only)'} | {train * 1e6:.0f} us | "
            f"{evals * 1e6:.0f} us |"
        )


if __name__ == "__main__":
    main()
