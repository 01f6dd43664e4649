"""Gradient-bottleneck figures: from one diagnostics.json (Figures 2, 7, 8), or from sweeps and
pretrained LMs (Figure 6).

Inputs are dicts or files on disk only: `spamlang.diagnostics.diagnose_model`'s output (as
written by `spamlang diagnose` to diagnostics.json), run directories (config.json,
metrics.jsonl "diag" rows) and `spamlang diagnose-lm` outputs (all read by
`spamlang.plots.bottleneck_inputs`). Nothing here imports the trainer or JAX. Colours come from
the Okabe-Ito palette (categorical) and viridis (continuous), both colour-blind safe.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from spamlang.plots.bottleneck_inputs import (  # noqa: F401  (re-exported: effective_rank)
    LM_SOURCE,
    bottleneck_points,
    effective_rank,
)
from spamlang.plots.canvas import check_figure_path, plain_log_ticks, save_figure
from spamlang.rundir.reading import read_json

OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


# --- one model: diagnostics.json --------------------------------------------------------


def rank_curve_figure(diag: dict) -> Figure:
    """Figure 2: numerical rank of the logit gradient against the number of batch tokens."""
    rc = diag["rank_curve"]
    fig = Figure(figsize=(4.5, 3.4), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(rc["tokens"], rc["rank"], "o-", color=OKABE_ITO[0], label="rank of G")
    ax.plot(rc["tokens"], rc["max_rank"], ":", color=OKABE_ITO[5], label="min(T, V-1)")
    ax.axhline(
        2 * diag["head_rank"],
        ls="--",
        color=OKABE_ITO[1],
        label=f"2D = {2 * diag['head_rank']} (eq. 6)",
    )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="batch tokens T",
        ylabel="empirical rank",
        title=f"{diag['head']}, V={diag['vocab_size']}, D={diag['d_model']}",
    )
    ax.legend(fontsize=8)
    return fig


def profile_figure(diag: dict, lead: int = 20) -> Figure:
    """Figure 7: mean (+- std) full and projected logit-gradient coefficients, rows sorted by
    |full| descending; left the first `lead` ranks, right every stored rank on a log axis."""
    prof = diag["coefficient_profile"]
    ranks = np.asarray(prof["ranks"]) + 1
    fig = Figure(figsize=(8, 3.4), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, keep in zip(axes, (ranks <= lead, ranks >= 1)):
        for part, colour, label in (
            ("full", OKABE_ITO[0], "full gradient"),
            ("proj", OKABE_ITO[1], "projected on col(W)"),
        ):
            mean = np.asarray(prof[f"{part}_mean"])[keep]
            std = np.asarray(prof[f"{part}_std"])[keep]
            ax.plot(ranks[keep], mean, color=colour, label=label)
            ax.fill_between(ranks[keep], mean - std, mean + std, color=colour, alpha=0.25, lw=0)
        ax.axhline(0, color="grey", lw=0.5)
        ax.set(xlabel="coefficient rank (by |full|)", ylabel="coefficient (p - onehot)")
    axes[1].set_xscale("log")
    axes[1].set_title("all ranks", fontsize=9)
    axes[0].set_title(f"leading {lead}", fontsize=9)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"{diag['head']}, V={diag['vocab_size']}: kernel fraction "
        f"{diag['kernel_fraction']:.3f}, cosine {diag['projected_cosine']:.3f}",
        fontsize=10,
    )
    return fig


def efficiency_figure(diag: dict) -> Figure:
    """Figure 8: loss change after moving the logits by a fraction of their norm along the
    logit gradient and along the direction induced by a step on the hidden states."""
    eff = diag["efficiency"]
    frac = np.asarray(eff["fractions"])
    d_logit, d_ind = np.asarray(eff["delta_logit"]), np.asarray(eff["delta_induced"])
    fig = Figure(figsize=(4.5, 3.4), layout="constrained")
    ax = fig.add_subplot()
    descent = bool(np.all(d_logit < 0) and np.all(d_ind < 0))
    sign = -1.0 if descent else 1.0  # plot the decrease on a log axis when there is one
    ax.plot(frac, sign * d_logit, "o-", color=OKABE_ITO[0], label="along -grad_L (logits)")
    ax.plot(frac, sign * d_ind, "s-", color=OKABE_ITO[1], label="along -(grad_H) W^T")
    if descent:
        ax.set_yscale("log")
    else:  # some step raised the loss: a symmetric log axis, linear only below every change
        changes = np.abs(np.concatenate([d_logit, d_ind]))
        ax.set_yscale("symlog", linthresh=max(changes[changes > 0].min(initial=1e-6), 1e-9))
        ax.axhline(0, color="grey", lw=0.5)
    ax.set(
        xscale="log",
        xlabel="step norm / ||logits||_F",
        ylabel="loss decrease (nats)" if descent else "loss change (nats)",
        title=f"{diag['head']}, V={diag['vocab_size']}, {eff['tokens']} tokens",
    )
    ax.legend(fontsize=8)
    return fig


def plot_diagnostics(
    diag: dict | str | Path, out_dir: str | Path, suffix: str = ".png"
) -> list[Path]:
    """Write rank_curve, coefficient_profile and efficiency figures for one diagnostics dict
    (or a diagnostics.json path) into out_dir; returns the paths."""
    if not isinstance(diag, dict):
        diag = read_json(diag)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)  # the command's own output directory
    return [
        save_figure(make(diag), out / f"{name}{suffix}")
        for name, make in (
            ("rank_curve", rank_curve_figure),
            ("coefficient_profile", profile_figure),
            ("efficiency", efficiency_figure),
        )
    ]


# --- Figure 6: spamlang runs and pretrained LMs -------------------------------------------

PAPER_BAND = (0.95, 0.99)  # the kernel fraction the paper measures on real LMs (Figure 6)
LM_MARKERS = ("*", "P", "X", "h", "p", "d")


def bottleneck_figure(inputs: str | Path | Iterable[str | Path], labels: bool = True) -> Figure:
    """Kernel fraction against D/V (Figure 6), one series per spamlang run setting and per
    pretrained-LM family (`bottleneck_points` says which directories give points), with
    sqrt(1 - D/V), the value for a gradient with no preferred direction, over every point's
    D/V. With LM points: the paper's 95-99 % band and, with `labels`, each model's name. When
    runs logged diagnostics during training, a second panel: kernel fraction against training
    tokens per vocabulary entry."""
    points = bottleneck_points(inputs)
    with_curves = [p for p in points if len(p["curve"][0]) > 1]
    fig = Figure(figsize=(9 if with_curves else 5.2, 3.8), layout="constrained")
    axes = fig.subplots(1, 2 if with_curves else 1, squeeze=False)[0]
    ax = axes[0]
    runs = sorted({p["series"] for p in points if p["source"] != LM_SOURCE})
    families = sorted({p["series"] for p in points if p["source"] == LM_SOURCE})
    for i, (lm, name) in enumerate([(False, n) for n in runs] + [(True, n) for n in families]):
        mine = sorted(
            (p for p in points if p["series"] == name and (p["source"] == LM_SOURCE) == lm),
            key=lambda p: p["d_over_v"],
        )
        # LM families: larger edged markers from their own set, apart from the runs' at a glance
        marker = LM_MARKERS[(i - len(runs)) % len(LM_MARKERS)] if lm else MARKERS[i % len(MARKERS)]
        ax.plot(
            [p["d_over_v"] for p in mine],
            [p["kernel_fraction"] for p in mine],
            marker=marker,
            ls="none",
            color=OKABE_ITO[i % len(OKABE_ITO)],
            label=name,
            ms=9 if lm else 6,
            mec="black" if lm else None,
            mew=0.5 if lm else None,
        )
        for p in mine if lm and labels else ():
            ax.annotate(
                p["model_name"],
                (p["d_over_v"], p["kernel_fraction"]),
                fontsize=5.5,
                color="0.25",
                xytext=(4, -7),
                textcoords="offset points",
            )
    lo, hi = min(p["d_over_v"] for p in points), max(p["d_over_v"] for p in points)
    grid = np.geomspace(lo / 1.5, min(hi * 1.5, 1.0), 200)
    ax.plot(grid, np.sqrt(1 - grid), "--", color="grey", label="sqrt(1 - D/V) (isotropic G)")
    if families:
        ax.axhspan(
            *PAPER_BAND,
            color="0.5",
            alpha=0.15,
            lw=0,  # grey: no series has it
            label="paper: 95-99% (real LMs)",
        )
    ax.set(
        xscale="log",
        xlabel="D / V",
        ylabel="kernel fraction ||P_ker G|| / ||G||",
        title="logit-gradient norm destroyed by the head",
    )
    ax.legend(fontsize=7)
    plain_log_ticks(ax.xaxis, grid[0], grid[-1])
    if with_curves:
        ax = axes[1]
        ratios = [p["d_over_v"] for p in with_curves]
        norm = LogNorm(min(ratios), max(ratios) * (1.0001 if min(ratios) == max(ratios) else 1))
        cmap = colormaps["viridis"]
        for p in with_curves:
            ax.plot(*p["curve"], color=cmap(norm(p["d_over_v"])), lw=1.2)
        bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, label="D / V (runs)")
        plain_log_ticks(bar.ax.yaxis, norm.vmin, norm.vmax)
        ax.set(
            xscale="log",
            xlabel="training tokens / V",
            ylabel="kernel fraction",
            title="along training",
        )
        xs = [x for p in with_curves for x in p["curve"][0] if x > 0]
        plain_log_ticks(ax.xaxis, min(xs), max(xs))
    return fig


def plot_bottleneck(
    inputs: str | Path | Iterable[str | Path], out_file: str | Path, labels: bool = True
) -> Path:
    """`spamlang plot bottleneck DIR [DIR ...] -o FILE`: see `bottleneck_figure`."""
    check_figure_path(out_file)
    return save_figure(bottleneck_figure(inputs, labels=labels), out_file)
