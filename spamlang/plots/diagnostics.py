"""Gradient-bottleneck figures: from one diagnostics.json (Figures 2, 7, 8), or from sweeps and
pretrained LMs (Figure 6, `spamlang plot bottleneck`); files in, no trainer, JAX or transformers."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from spamlang.errors import UserError
from spamlang.fields import finite
from spamlang.plots.canvas import plain_log_ticks, save_figure, writer
from spamlang.results import load_metrics, read_runs, records
from spamlang.rundir.reading import check_dir, read_object, read_strict
from spamlang.rundir.schema import CONFIG, DIAGNOSTICS

OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LM_MARKERS = ("*", "P", "X", "h", "p", "d")
PAPER_BAND = (0.95, 0.99)  # the kernel fraction the paper measures on real LMs (Figure 6)


def rank_curve_figure(diag: dict) -> Figure:
    """Figure 2: numerical rank of the logit gradient against the number of batch tokens."""
    rc = diag["rank_curve"]
    fig = Figure(figsize=(4.5, 3.4), layout="constrained")
    ax = fig.add_subplot()
    ax.plot(rc["tokens"], rc["rank"], "o-", color=OKABE_ITO[0], label="rank of G")
    ax.plot(rc["tokens"], rc["max_rank"], ":", color=OKABE_ITO[5], label="min(T, V-1)")
    twice = 2 * diag["head_rank"]
    ax.axhline(twice, ls="--", color=OKABE_ITO[1], label=f"2D = {twice} (eq. 6)")
    ax.set(xscale="log", yscale="log", xlabel="batch tokens T", ylabel="empirical rank")
    ax.set_title(f"{diag['head']}, V={diag['vocab_size']}, D={diag['d_model']}")
    ax.legend(fontsize=8)
    return fig


def profile_figure(diag: dict, lead: int = 20) -> Figure:
    """Figure 7: mean (+- std) full and projected logit-gradient coefficients by |full| rank; left
    the first `lead` ranks, right every stored rank on a log axis."""
    prof = diag["coefficient_profile"]
    ranks = np.asarray(prof["ranks"]) + 1
    fig = Figure(figsize=(8, 3.4), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, keep, title in zip(axes, (ranks <= lead, ranks >= 1), (f"leading {lead}", "all ranks")):
        parts = ("full", "full gradient"), ("proj", "projected on col(W)")
        for (part, label), colour in zip(parts, OKABE_ITO):
            mean = np.asarray(prof[f"{part}_mean"])[keep]
            std = np.asarray(prof[f"{part}_std"])[keep]
            ax.plot(ranks[keep], mean, color=colour, label=label)
            ax.fill_between(ranks[keep], mean - std, mean + std, color=colour, alpha=0.25, lw=0)
        ax.axhline(0, color="grey", lw=0.5)
        ax.set(xlabel="coefficient rank (by |full|)", ylabel="coefficient (p - onehot)")
        ax.set_title(title, fontsize=9)
    axes[1].set_xscale("log")
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"{diag['head']}, V={diag['vocab_size']}: kernel fraction "
        f"{diag['kernel_fraction']:.3f}, cosine {diag['projected_cosine']:.3f}",
        fontsize=10,
    )
    return fig


def efficiency_figure(diag: dict) -> Figure:
    """Figure 8: loss change after moving the logits by a fraction of their norm along the logit
    gradient and along the direction a step on the hidden states induces."""
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
    ylabel = "loss decrease (nats)" if descent else "loss change (nats)"
    title = f"{diag['head']}, V={diag['vocab_size']}, {eff['tokens']} tokens"
    ax.set(xscale="log", xlabel="step norm / ||logits||_F", ylabel=ylabel, title=title)
    ax.legend(fontsize=8)
    return fig


def plot_diagnostics(diag: dict, out_dir: Path, suffix: str = ".png") -> list[Path]:
    """Write the rank_curve, coefficient_profile and efficiency figures into out_dir."""
    figures = dict(rank_curve=rank_curve_figure, coefficient_profile=profile_figure)
    figures.update(efficiency=efficiency_figure)
    return [save_figure(make(diag), out_dir / f"{name}{suffix}") for name, make in figures.items()]


# --- Figure 6's points, from every kind of directory that has them ----------

LM_SOURCE = "diagnose-lm"
# transformers' config.model_type without its version digits (qwen2, qwen3 -> qwen) -> the
# family's name in the legend: the paper's point is the range real LMs span, not the version.
FAMILIES = {
    "gpt": "GPT-2",
    "gpt_neox": "Pythia (GPT-NeoX)",
    "llama": "Llama",
    "qwen": "Qwen",
    "mistral": "Mistral",
    "gemma": "Gemma",
    "opt": "OPT",
    "olmo": "OLMo",
    "phi": "Phi",
}


def family_name(model_type: str | None) -> str:
    if not model_type:
        return "pretrained LM"
    return FAMILIES.get(str(model_type).lower().rstrip("0123456789"), str(model_type))


def bottleneck_points(inputs: str | os.PathLike | Iterable[str | os.PathLike]) -> list[dict]:
    """Every Figure 6 point of the directories (run_id, series, d_over_v, kernel_fraction, curve,
    source, an LM's model_type and model_name); UserError naming a directory without any."""
    roots: dict[Path, Path] = {}  # the same directory twice would draw its points twice
    for path in [inputs] if isinstance(inputs, (str, os.PathLike)) else inputs:
        root = check_dir(path)
        roots.setdefault(root.resolve(), root)
    return [point for root in roots.values() for point in _points_of(root)]


def _points_of(root: Path) -> list[dict]:
    if _standalone(root):
        return [standalone_point(root)]
    runs, missing = _sweep_points(root)
    if runs and missing:  # a figure of 1 run out of 8 must say why the other 7 are absent
        what = f"{missing} of {missing + len(runs)} runs in {root} have no diagnostics.json"
        how = "(run `spamlang diagnose` on them, or train with diag_every > 0)"
        print(f"note: {what} {how}; drawing {len(runs)}", file=sys.stderr)
    # A sweep's run directories hold their own diagnostics.json; they are read as runs above.
    found = runs + [standalone_point(sub) for sub in sorted(root.iterdir()) if _standalone(sub)]
    if found:
        return found
    if any((p / CONFIG).is_file() for p in (root, *root.iterdir())):
        how = "'diag' rows in metrics.jsonl (train with diag_every > 0, or run `spamlang diagnose`)"
        raise UserError(f"no run in {root} has a diagnostics.json or {how}")
    where = f"{DIAGNOSTICS} in it or its subdirectories (`spamlang diagnose-lm` output)"
    raise UserError(f"nothing to plot in {root}: no run in it (config.json) and no {where}")


def _standalone(path: Path) -> bool:
    return (path / DIAGNOSTICS).is_file() and not (path / CONFIG).is_file()


def standalone_point(out_dir: str | Path) -> dict:
    file = Path(out_dir) / DIAGNOSTICS
    try:
        diag = read_strict(file)
    except ValueError as e:
        raise UserError(f"cannot read {file}: {e}") from None
    if (kf := finite(diag.get("kernel_fraction"))) is None:
        raise UserError(f"{file} has no finite kernel_fraction")
    if (d_over_v := finite(diag.get("d_over_v"))) is None:  # older files: the ratio from its parts
        V = finite(diag.get("vocab_size"))
        D = finite(diag.get("head_rank")) or finite(diag.get("d_model"))
        d_over_v = D / V if D and V else None
    if not d_over_v or d_over_v <= 0:
        raise UserError(f"{file} has no d_over_v (nor head_rank or d_model with vocab_size)")
    name = str(diag.get("model_name") or Path(out_dir).resolve().name)
    point = dict(run_id=name, d_over_v=d_over_v, kernel_fraction=kf, curve=([], []))
    point["path"] = str(out_dir)
    if diag.get("source") == LM_SOURCE or "model_type" in diag:
        kind = diag.get("model_type")
        lm = dict(source=LM_SOURCE, series=family_name(kind), model_type=kind, model_name=name)
        return {**point, **lm}
    return {**point, "source": "spamlang", "series": _series(diag)}


def _series(config: dict) -> str:
    tied = "tied" if config.get("tie_embeddings") else "untied"
    kind = str(config.get("head", "softmax")).split(":")[0]
    return f"{config.get('language', '?')}, {kind}, {tied}"


def _sweep_points(sweep_dir: str | Path) -> tuple[list[dict], int]:
    """A point per run with a kernel fraction (diagnostics.json, else its last "diag" row), and
    how many runs had none."""
    from spamlang.model.config import rank_of_head

    runs = read_runs(sweep_dir)
    runs = runs[runs["path"].notna()]
    metrics = load_metrics(runs, warn=False)
    kf = metrics.get("kernel_fraction", metrics["step"] * np.nan)  # no run logged one: NaN
    diag = metrics[(metrics["kind"] == "diag") & kf.notna()].assign(kernel_fraction=kf)
    points, missing = [], 0
    for run in records(runs):
        V, rows = int(run["vocab_size"]), diag[diag["run_id"] == run["run_id"]]
        # diagnostics.json absent, or being written by `spamlang diagnose`: the rows stand in
        kf = finite((read_object(run["path"] / DIAGNOSTICS) or {}).get("kernel_fraction"))
        if kf is None and len(rows):
            kf = float(rows["kernel_fraction"].iloc[-1])
        if kf is None:
            missing += 1
            continue
        trained = rows[rows["tokens"] > 0]
        curve = (trained["tokens"] / V).tolist(), trained["kernel_fraction"].tolist()
        rank = rank_of_head(str(run.get("head") or "softmax"), int(run["d_model"]), V)
        point = dict(run_id=run["run_id"], series=_series(run), source="spamlang")
        points.append(dict(point, d_over_v=rank / V, kernel_fraction=kf, curve=curve))
    return points, missing


def bottleneck_figure(inputs: str | Path | Iterable[str | Path], labels: bool = True) -> Figure:
    """Kernel fraction against D/V (Figure 6), a series per run setting and per LM family, with
    sqrt(1 - D/V), the paper's band for LMs and, for curves logged in training, a second panel."""
    points = bottleneck_points(inputs)
    with_curves = [p for p in points if len(p["curve"][0]) > 1]
    fig = Figure(figsize=(9 if with_curves else 5.2, 3.8), layout="constrained")
    axes = fig.subplots(1, 2 if with_curves else 1, squeeze=False)[0]
    ax = axes[0]
    series = sorted({(p["source"] == LM_SOURCE, p["series"]) for p in points})  # runs first
    n_runs = sum(not lm for lm, _ in series)
    for i, (lm, name) in enumerate(series):
        mine = sorted(
            (p for p in points if (p["source"] == LM_SOURCE, p["series"]) == (lm, name)),
            key=lambda p: p["d_over_v"],
        )
        # LM families: larger edged markers from their own set, apart from the runs' at a glance
        marker = LM_MARKERS[(i - n_runs) % len(LM_MARKERS)] if lm else MARKERS[i % len(MARKERS)]
        xy = [p["d_over_v"] for p in mine], [p["kernel_fraction"] for p in mine]
        kw = dict(marker=marker, ls="none", color=OKABE_ITO[i % len(OKABE_ITO)], label=name)
        ax.plot(*xy, **kw, ms=9 if lm else 6, mec="black" if lm else None, mew=0.5 if lm else None)
        for p in mine if lm and labels else ():
            at = (p["d_over_v"], p["kernel_fraction"])
            kw = dict(fontsize=5.5, color="0.25", xytext=(4, -7), textcoords="offset points")
            ax.annotate(p["model_name"], at, **kw)
    lo, hi = min(p["d_over_v"] for p in points), max(p["d_over_v"] for p in points)
    grid = np.geomspace(lo / 1.5, min(hi * 1.5, 1.0), 200)
    ax.plot(grid, np.sqrt(1 - grid), "--", color="grey", label="sqrt(1 - D/V) (isotropic G)")
    if n_runs < len(series):  # pretrained LMs; grey: no series has it
        ax.axhspan(*PAPER_BAND, color="0.5", alpha=0.15, lw=0, label="paper: 95-99% (real LMs)")
    ax.set(xscale="log", xlabel="D / V", ylabel="kernel fraction ||P_ker G|| / ||G||")
    ax.set_title("logit-gradient norm destroyed by the head")
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
        ax.set(xscale="log", xlabel="training tokens / V", ylabel="kernel fraction")
        ax.set_title("along training")
        xs = [x for p in with_curves for x in p["curve"][0] if x > 0]
        plain_log_ticks(ax.xaxis, min(xs), max(xs))
    return fig


plot_bottleneck = writer(bottleneck_figure)  # spamlang plot bottleneck DIR [DIR ...] -o FILE
