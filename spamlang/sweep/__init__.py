"""Sweeps: grids of training runs as data, run with skip/resume/shard, gathered into results.csv.

    from spamlang.sweep import Sweep, run_sweep
    from spamlang.train.config import TrainConfig

    SWEEP = Sweep("demo", TrainConfig(preset="tiny", tokens=1_048_576),
                  {"vocab_size": [64, 1024], "lr": [3e-3, 1e-2], "tie_embeddings": [True, False]})
    rows = run_sweep(SWEEP, "runs/demo")          # or shard=(i, n) on host i of n

Modules: `spec` (axes, points, run ids, the size limit), `expand` (building the points'
configs quickly), `groups` (groups trained as one vmapped program, shards), `fit` (members per
device), `seq_len` (the same sweep at another sequence length), `runner` (run_sweep),
`sweep_file` (sweep.json: what a directory may hold next, axes it grew), `logs` (progress and
resume lines), `results_csv` (gather, results.csv), `best_lr` (best LRs at a grid's edge),
`bracket` (extending LR grids past an edge), `command` (the flags of sweep scripts and
`spamlang sweep`), `overrides` (`--set`), `dry_run`.
"""

from spamlang.sweep.command import load_sweep_file, main
from spamlang.sweep.groups import groups, parse_shard, shard_groups
from spamlang.sweep.results_csv import RESULT_COLUMNS, SETTING_COLUMNS, gather, write_results
from spamlang.sweep.runner import run_sweep
from spamlang.sweep.spec import Sweep, format_number

__all__ = [
    "RESULT_COLUMNS",
    "SETTING_COLUMNS",
    "Sweep",
    "format_number",
    "gather",
    "groups",
    "load_sweep_file",
    "main",
    "parse_shard",
    "run_sweep",
    "shard_groups",
    "write_results",
]
