"""Sweeps: grids of training runs as data, run with skip/resume/shard, gathered into results.csv
(`Sweep`, `run_sweep`; the modules, one line each: docs/design.md, Layout).

    SWEEP = Sweep("demo", TrainConfig(preset="tiny", tokens=1_048_576),
                  {"vocab_size": [64, 1024], "lr": [3e-3, 1e-2], "tie_embeddings": [True, False]})
    rows = run_sweep(SWEEP, "runs/demo")  # or shard=(i, n) on host i of n
"""

from spamlang.sweep.files import load_sweep_file
from spamlang.sweep.results_csv import RESULT_COLUMNS, SETTING_COLUMNS, gather, write_results
from spamlang.sweep.runner import run_sweep
from spamlang.sweep.spec import Sweep, format_number, groups, parse_shard, shard_groups

__all__ = [
    "RESULT_COLUMNS",
    "SETTING_COLUMNS",
    "Sweep",
    "format_number",
    "gather",
    "groups",
    "load_sweep_file",
    "parse_shard",
    "run_sweep",
    "shard_groups",
    "write_results",
]
