"""What a run directory and a sweep directory hold: file names and result columns, the one
definition of the on-disk contract that training writes and the sweep, the results loader and
the plots read. It imports nothing, so that it sits below every other layer (`plots` reads runs
from disk without importing `train`)."""

# A run directory:
CONFIG = "config.json"  # the TrainConfig, written first; a rerun must match it field by field
METRICS = "metrics.jsonl"  # one JSON row per log step (kind train / eval / diag)
TRACK = "track.jsonl"  # per-step updates of tracked symbols' rows (track_symbols > 0)
CHECKPOINTS = "checkpoints"  # orbax checkpoints, one folder per step
RESULT = "result.json"  # written last; its presence marks the run finished
DIAGNOSTICS = "diagnostics.json"  # what `spamlang diagnose` measured on the final model
RUN_LOCK = ".lock"  # held by the process training the run
# Position-invariant languages: every symbol's final loss, probability, appearances, first and
# last appearance and gaps (SYMBOL_ARRAYS); one row per evaluation with every symbol's loss and
# history so far (`spamlang.coverage.history`), cut back on resume.
SYMBOLS = "symbols.npz"
SYMBOL_EVALS = "symbol_evals.jsonl"
# symbols.npz's arrays, each of length V: the final loss of the sequence `s s` (float32), the
# symbol's probability under the training distribution (float64), the training sequences that
# showed it (int32), the step count right after the last and the first step whose batch showed
# it (int32, 1 .. steps; -1: never shown), the longest gap in steps between two consecutive
# appearances (int32; 0 before the second) and the mean gap, (last - first) / (appearances - 1)
# (float32; NaN before the second; two rows of one batch are a gap of 0); plus the scalar
# `steps` trained. Runs of versions before the history hold only the first four.
SYMBOL_ARRAYS = tuple("loss probability appearances last_step first_step max_gap mean_gap".split())
SYMBOL_HISTORY_ARRAYS = SYMBOL_ARRAYS[4:]  # absent from symbols.npz of older versions

# A sweep directory: one run directory per run, and
SWEEP_FILE = "sweep.json"  # the sweep's definition
# one row per finished run: SETTING_COLUMNS, then extra axes, then RESULT_COLUMNS
RESULTS_FILE = "results.csv"
# gzipped (pandas reads it as it is): the bins repeat each run id, which gzip shrinks well, so
# a sweep of a few hundred runs stays small enough to commit.
SYMBOLS_FILE = "symbols.csv.gz"
RESULTS_LOCK = ".results.lock"

# Settings a figure's title names whenever the runs drawn hold them off these defaults, axis or
# not (TrainConfig's defaults and its default preset's width and depth; a test holds them equal),
# so that a figure exported from a D = 32, b2 0.99 sweep says so (`plots.layout.fixed_title`).
TITLE_DEFAULTS = {
    "language": "spam",
    "d_model": 16,
    "n_layers": 2,
    "head": "softmax",
    "optimizer": "adamw",
    "b2": 0.95,
    "weight_decay": 0.1,
    "sampling": "iid",
}

# Adam's second-moment decay, which titles name beside the optimizer (its key in config.json).
ADAM_B2 = "b2"
# Settings first (the sweep contract), extra axes go between these and the outcomes.
SETTING_COLUMNS = tuple(
    "run_id language preset d_model n_layers vocab_size lr tie_embeddings head seed seq_len "
    "batch_size sampling optimizer b2 weight_decay".split()
)
# How often training showed each id (spamlang.coverage.exposure), and the eval split by it.
COVERAGE_COLUMNS = tuple(
    "updates_per_symbol sequences_per_symbol symbol_return_steps adam_memory_steps "
    "adam_memory_steps_effective exposure_min exposure_median exposure_max unseen_fraction "
    "eval_loss_seen eval_loss_unseen repetition_accuracy_seen repetition_accuracy_unseen "
    "eval_seen_sequences eval_unseen_sequences".split()
)
# Symbols training never drew (a spam holdout): their eval, then the check that none was drawn.
HELDOUT_COLUMNS = tuple(
    "eval_loss_heldout eval_accuracy_heldout repetition_accuracy_heldout heldout_symbols "
    "heldout_exposure_max".split()
)
# The outcomes result.json holds and results.csv repeats. Empty cells: a value the run did not
# produce (null in result.json: a seen / unseen side with no eval sequence, the diagnostics of
# a run without `diag_every`, a run of an older version).
# eval_method: "exact" (every symbol once, weighted by its probability: spam, zipf-spam) or
# "sampled" (the fixed eval set of eval_sequences; empty in runs of older versions, which all
# sampled).
RESULT_COLUMNS = (
    *"final_train_loss final_eval_loss eval_method loss_above_floor optimal_loss".split(),
    *"repetition_accuracy eval_accuracy diverged diverged_step steps tokens tokens_per_s".split(),
    "wall_seconds",
    # where tokens_per_s and wall_seconds were measured (a resumed run's last part): the CPU's
    # model name and core count; empty on an accelerator and in runs of older versions
    "cpu",
    "cores",
    *COVERAGE_COLUMNS,
    # the gradient bottleneck of the final model (runs with diag_every)
    *"kernel_fraction projected_cosine head_rank".split(),
    # how many updates a symbol needs (spamlang.coverage.symbols; spam family)
    *"updates_to_learn updates_to_learn_bound symbols_learned".split(),
    *HELDOUT_COLUMNS,
)
# The outcomes that hold text ("exact", "upper") or a flag (True/False); every other outcome is
# a number or empty, and so are these settings. A result.json or results.csv with anything else
# there is damaged (`spamlang.results.damaged_cell`): "final_eval_loss": "low".
TEXT_RESULTS = ("eval_method", "updates_to_learn_bound", "cpu")
FLAG_COLUMNS = ("tie_embeddings", "diverged")
NUMBER_SETTINGS = tuple(
    "d_model n_layers vocab_size lr seed seq_len batch_size b2 weight_decay".split()
)
# result.json only, not results.csv: the per-symbol learning curve's bins, and the symbols'
# history binned at every evaluation (`spamlang.coverage.history`; a sweep gathers it into
# symbols.csv.gz) (too big for a cell); a corpus run's validation loss by each token's training
# count and steps since it was last a target (`spamlang.corpus.buckets`), and its corpus.
RESULT_EXTRAS = ("symbol_curve", "symbol_history", "target_buckets", "corpus")
