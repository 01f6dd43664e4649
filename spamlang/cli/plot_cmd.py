"""`spamlang plot KIND DIR... -o FILE`: one subcommand per figure of `spamlang.plots`."""

from __future__ import annotations

import argparse
import importlib

_AXES_HELP = (
    "Any column of results.csv can be an axis or a --where key: settings (vocab_size, lr, "
    "tie_embeddings, head, seed, seq_len, d_model, language, extra sweep axes, any config.json "
    "field) and outcomes (final_eval_loss, updates_per_symbol, kernel_fraction, ...). 1-COL is "
    "one minus a numeric column (1-kernel_fraction). Numeric values sort numerically. Runs that "
    "differ only in seed are averaged: the mean is drawn with the min-max range. Without --rows, "
    "every other setting that varies gets its own row of panels, unless the axes already fix it "
    "(batch_size, when x is updates_per_symbol and lines are V); 'none' switches an axis off."
)
_WHERE_HELP = (
    "keep only runs whose column KEY (setting or outcome, or run_id) equals VALUE; numbers "
    "compare by value (lr=1e-2 matches 0.01; counts as figures write them, K = 1,000: "
    "tokens=100K; a vocabulary's K is 1,024, as --vocab-size reads it: vocab_size=4K is "
    "4096), text may use * and ? wildcards (run_id=tiny-w64*); "
    "KEY!=VALUE drops the runs that match instead; repeatable: different keys must all match, "
    "a repeated key matches any value"
)


def _plot(module: str, function: str, options: str):
    """The handler `spamlang.plots.<module>.<function>(INPUT, OUTPUT, **options)`, imported when
    drawn: `--help` imports no plotting library."""

    def handler(args: argparse.Namespace) -> int:
        from spamlang.results import parse_where

        plot = getattr(importlib.import_module(f"spamlang.plots.{module}"), function)
        kw = {
            k: parse_where(args.where) if k == "where" else getattr(args, k)
            for k in options.split()
        }
        print(f"wrote {plot(args.inputs, args.output, **kw)}")
        return 0

    return handler


def _draw_track(args: argparse.Namespace) -> int:
    from spamlang.plots.track import load_track, plot_track, sums_table

    tracks = [load_track(d, args.table) for d in args.inputs]
    path = plot_track(tracks, args.output)
    print(sums_table(tracks))
    print(f"wrote {path}")
    return 0


def _draw_buckets(args: argparse.Namespace) -> int:
    from spamlang.plots.buckets import buckets_table, load_buckets, plot_buckets

    runs = [load_buckets(d) for d in args.inputs]
    path = plot_buckets(runs, args.output, min_targets=args.min_targets)
    if args.table:
        print("\n\n".join(buckets_table(run, args.min_targets) for run in runs))
    print(f"wrote {path}")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "plot",
        help="figures from a sweep directory (PNG or PDF, by extension)",
        description="Draw figures from a sweep directory; they are read from disk, so a sweep "
        "still running elsewhere can be plotted. " + _AXES_HELP,
    )
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    for add in (_heatmap, _curves, _lines, _bottleneck, _track, _symbols, _recency, _buckets):
        add(kinds)


def _kind(kinds, name: str, help: str, description: str, func, *inputs: str, **kw):
    """The subcommand `name`, drawn by `func`: its inputs (default a sweep directory), -o FILE."""
    p = kinds.add_parser(name, help=help, description=description)
    metavar, what = inputs or ("SWEEP_DIR", "a sweep output directory")
    p.add_argument("inputs", metavar=metavar, help=what, **kw)
    out_help = "output .png or .pdf, in an existing folder"
    p.add_argument("-o", "--output", required=True, metavar="FILE", help=out_help)
    p.set_defaults(func=func)
    return p


def _option(p, flag: str, default, help: str, metavar: str = "COL", **kw) -> None:
    p.add_argument(flag, default=default, metavar=metavar, help=help, **kw)


def _switch(p, flag: str, help: str, default=None) -> None:
    """--flag / --no-flag; None: the figure decides."""
    p.add_argument(flag, action=argparse.BooleanOptionalAction, default=default, help=help)


def _facets(p, cols: str | None) -> None:
    _option(p, "--cols", cols, f"one panel per value of this column (default: {cols or 'none'})")
    rows_help = (
        "one row of panels per value (combination) of these columns; default: every other "
        "setting that varies, except seed (averaged); 'none': no rows, other settings are "
        "averaged and the caption says so"
    )
    p.add_argument("--rows", default=None, metavar="COL[,COL]", help=rows_help)
    p.add_argument("--where", action="append", metavar="KEY=VALUE", help=_WHERE_HELP)


def _heatmap(kinds) -> None:
    p = _kind(
        kinds,
        "heatmap",
        "final loss on a V x LR grid, tied and untied (Figure 5)",
        "A final metric on an x by y grid of cells, one panel per --cols value. A cell shows the "
        "mean over seeds and, below it, their min-max range; the best y (LR) of each x (V) is "
        "outlined in red; colours span the data's range (log scale only for positive values "
        "spanning 10x or more). With --best-over COL a cell holds only the value of COL with the "
        "best seed-mean metric, named in the cell. Example, the return-time phase diagram: "
        "spamlang plot heatmap runs/return_time -o phase.png --x symbol_return_steps --y "
        "adam_memory_steps --best-over lr --cols none. Runs without a value of --x or --y "
        "(adam_memory_steps of sgd runs) are left out, with a note. A head kind that differs "
        "between cells (a rank axis from lowrank:r to mlp:r) is named in each cell. " + _AXES_HELP,
        _plot("sweep", "plot_heatmap", "metric where x y cols rows best_over diagonal"),
    )
    metric_help = (
        "the outcome coloured (default final_eval_loss; also loss_above_floor, final_train_loss, "
        "eval_loss_unseen, repetition_accuracy, ...)"
    )
    _option(p, "--metric", "final_eval_loss", metric_help)
    _option(p, "--x", "vocab_size", "column along the horizontal axis (default vocab_size)")
    y_help = (
        "column along the vertical axis (default lr); the best cell of each x is outlined "
        "(lowest metric; highest for *accuracy* metrics)"
    )
    _option(p, "--y", "lr", y_help)
    best_help = (
        "a setting such as lr optimised per cell instead of averaged: the cell shows the value "
        "of COL with the best seed-mean metric (lowest; highest for *accuracy* metrics), that "
        "mean with its seeds' min-max range, and the value (e.g. 'lr 3e-2'); default: none"
    )
    _option(p, "--best-over", None, best_help)
    diagonal_help = (
        "draw x = y across the cells, interpolated in log space between the ticks, labelled "
        "'memory = return time' (default: on when one axis is symbol_return_steps and the other "
        "adam_memory_steps or adam_memory_steps_effective)"
    )
    _switch(p, "--diagonal", diagonal_help)
    _facets(p, "tie_embeddings")


def _curves(kinds) -> None:
    p = _kind(
        kinds,
        "curves",
        "loss against tokens, one line per V (Figure 4)",
        "A metrics.jsonl value against training tokens (or steps: --x steps), one line per "
        "--color value (seeds averaged: mean line, min-max band), one panel per --cols value, "
        "each line at its cell's best LR (lowest seed-mean final eval loss, the heatmap's red "
        "outline), named in the legend. Runs still in progress are drawn dotted. The title "
        "states the runs' shape (steps x B x L, language). " + _AXES_HELP,
        _plot("curves", "plot_curves", "lr metric where x color cols rows logy"),
    )
    y_help = (
        "metrics.jsonl field drawn: loss (train, every log step; default), eval_loss (every "
        "eval), val_start_loss (a corpus run's first 32K val tokens at every eval, the final "
        "one included: Figure 1), or any other field such as accuracy"
    )
    p.add_argument("--y", "--metric", dest="metric", default="loss", metavar="FIELD", help=y_help)
    x_help = (
        "metrics.jsonl field along the horizontal axis: tokens (default; = steps x B x L, which "
        "the title states) or steps"
    )
    _option(p, "--x", "tokens", x_help, metavar="FIELD")
    _option(p, "--color", "vocab_size", "one line per value of this column (default vocab_size)")
    lr_help = (
        "learning rate to draw, the same for every line; default (or 'best'): each line at its "
        "own best LR (lowest seed-mean final eval loss; a cell with no finished run: lowest "
        "latest train loss), or every LR when lr is --color, --cols or --rows"
    )
    _option(p, "--lr", None, lr_help, metavar="LR|best")
    _switch(p, "--logy", "log y axis (default: on for losses)")
    _facets(p, "tie_embeddings")


def _lines(kinds) -> None:
    p = _kind(
        kinds,
        "lines",
        "a metric against a numeric column, one line per value of another",
        "A results.csv outcome (--y) against a numeric column (--x, a setting or another "
        "outcome), one line per --color value. Each point is the mean over seeds with min-max "
        "error bars. With --best-over lr (the default when lr varies and is not an axis) each "
        "point is the best LR's value (lowest; highest for metrics named *accuracy*), seeds "
        "averaged first; a hollow marker says that LR is at the edge of the grid. Example, the "
        "coverage figure: spamlang plot lines runs/coverage -o cov.png --x updates_per_symbol "
        "--y final_eval_loss --color vocab_size --cols tie_embeddings. " + _AXES_HELP,
        _plot("lines", "plot_lines", "x y color cols rows where best_over points logx logy"),
    )
    x_help = (
        "numeric column along the horizontal axis, e.g. updates_per_symbol, seq_len, d_model, "
        "kernel_fraction"
    )
    _option(p, "--x", None, x_help, required=True)
    y_help = "numeric outcome along the vertical axis, e.g. final_eval_loss"
    _option(p, "--y", None, y_help, required=True)
    color_help = "one line per value of this column (default vocab_size; 'none': one line)"
    _option(p, "--color", "vocab_size", color_help)
    best_help = (
        "setting optimised per point (default auto: lr when it varies and is not an axis); "
        "none: no optimisation, so a varying lr gets rows of panels like any other setting"
    )
    _option(p, "--best-over", "auto", best_help, metavar="COL|auto|none")
    points_help = "markers without connecting lines (a scatter, e.g. --x kernel_fraction)"
    p.add_argument("--points", action="store_true", help=points_help)
    _switch(p, "--logx", "log x axis (default: on when a positive x spans 8x or more)")
    logy_help = (
        "log y axis (default: on when the positive y values, error bars included, span more "
        "than 100x)"
    )
    _switch(p, "--logy", logy_help)
    _facets(p, None)


def _bottleneck(kinds) -> None:
    p = _kind(
        kinds,
        "bottleneck",
        "kernel fraction against D/V: sweeps and pretrained LMs (Figure 6)",
        "The fraction of the logit gradient's norm that the LM head destroys (kernel fraction, "
        "eq. 10) against D/V, one series per run setting of the spamlang runs and one per model "
        "family of the pretrained LMs, with sqrt(1 - D/V) (a gradient with no preferred "
        "direction) and, when LMs are drawn, the paper's 95-99% band for real LMs. Runs that "
        "logged diagnostics during training (diag_every > 0) also get kernel fraction against "
        "training tokens / V. Example: spamlang plot bottleneck runs/gradient_bottleneck "
        "lm/pythia-160m lm/gpt2 -o fig6.png",
        _plot("diagnostics", "plot_bottleneck", "labels"),
        "DIR",
        "each one of: a sweep directory or a run directory of spamlang runs (a point per run "
        "with diagnostics.json from `spamlang diagnose` or 'diag' rows in metrics.jsonl); a "
        "`spamlang diagnose-lm` output directory (its diagnostics.json: one pretrained LM); a "
        "directory whose subdirectories are diagnose-lm outputs (alongside run directories or "
        "not)",
        nargs="+",
    )
    labels_help = "write each pretrained LM's name beside its point (default on)"
    _switch(p, "--labels", labels_help, default=True)


def _track(kinds) -> None:
    p = _kind(
        kinds,
        "track",
        "mechanism diagnostic: tracked symbols' rows, pull-up vs between",
        "How each training step moved a few symbols' rows along themselves, from the "
        "track.jsonl of runs trained with --track-symbols K (or track_symbols in a sweep's base "
        "config). One panel per tracked id (at most 6, spread over the tracked ones), one row of "
        "panels per run: the cumulative sum of each step's update along the row, <p' - p, p>/|p| "
        "(to first order the change of its norm), the per-step updates as bars on the right "
        "axis, and triangles at the steps whose batch showed the symbol. Each panel, and a table "
        "on stdout, sums the updates of those steps (pull) and of the others (between). Example: "
        "spamlang plot track runs/demo -o track.png --table head",
        _draw_track,
        "RUN_DIR",
        "a run directory with track.jsonl (one row of panels each)",
        nargs="+",
    )
    table_help = "the rows drawn: the embedding's (default) or the untied head's"
    p.add_argument("--table", choices=("embed", "head"), default="embed", help=table_help)


def _symbols(kinds) -> None:
    p = _kind(
        kinds,
        "symbols",
        "per-symbol sample complexity: symbol loss against its exposure",
        "How many updates a symbol needs: each SpamLang-family run scores every symbol (up to "
        "4,096) at its end and bins the scores by the symbol's exposure (result.json's "
        "symbol_curve). Draws the bins' median loss against exposure, one colour per V, one line "
        "per seed at each cell's best LR, the learned threshold 0.1 log V dashed and each run's "
        "updates_to_learn as a diamond. Example: spamlang plot symbols runs/equal_batch -o "
        "symbols.png --cols weight_decay --rows b2,tie_embeddings",
        _plot("symbols", "plot_symbols", "where cols rows"),
    )
    _facets(p, None)


def _recency(kinds) -> None:
    p = _kind(
        kinds,
        "recency",
        "per-symbol loss against steps since the symbol was last shown",
        "Does a symbol's loss jump once Adam has forgotten it? For each cell's best-LR seed-0 run "
        "(lowest seed-mean final eval loss), the final loss of every symbol on 's s' (log scale; "
        "dashed: chance, log V) against the steps since its last appearance in a training batch "
        "(steps - last_step), coloured by its appearances; symbols never shown are crosses at "
        "x = steps. A red line marks Adam's memory min(1/(1-b2), steps) (adamw, lazy_adamw). "
        "Reads symbols.npz, which finished runs of a position-invariant language write; runs "
        "without one are skipped with a warning. Example: spamlang plot recency "
        "runs/return_time -o recency.png --where batch_size=32 --cols b2",
        _plot("symbols", "plot_recency", "where cols rows"),
        "DIR",
        "a run directory, or a sweep directory of them",
        nargs="+",
    )
    _facets(p, None)


def _buckets(kinds) -> None:
    p = _kind(
        kinds,
        "buckets",
        "corpus runs: val loss by a token's training count and steps since last a target",
        "Does a rare token's loss in real text rise once the steps since it was last a "
        "training target pass Adam's memory, as a forgotten SpamLang symbol's does? From the "
        "target_buckets of a finished corpus run's result.json (spamlang train --corpus DIR): "
        "one panel per run (titled with its optimizer, b2, head_amsgrad and final eval loss), "
        "the validation loss of each cell of tokens against the steps since they were last a "
        "training target at the end of training (log2 buckets at their geometric middle; 0: "
        "in the last step), one line per bucket of how many times they were a target (colour); "
        "tokens never a target are crosses at x = steps. Dashed: Adam's memory 1/(1-b2); "
        "dotted: the val unigram loss. Runs that are not finished corpus runs are refused. "
        "Example, does b2 0.999 flatten the rise: spamlang plot buckets runs/b2_0.95 "
        "runs/b2_0.999 -o buckets.png --table",
        _draw_buckets,
        "RUN_DIR",
        "a finished corpus run's directory (one panel each, side by side)",
        nargs="+",
    )
    min_help = "leave out cells with fewer validation targets than this (default 20)"
    p.add_argument("--min-targets", type=int, default=20, metavar="N", help=min_help)
    table_help = "also print each run's cells as a table (count bucket x age bucket of val loss)"
    p.add_argument("--table", action="store_true", help=table_help)
