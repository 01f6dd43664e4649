"""Figure 6's points (kernel fraction against D/V), from every kind of directory that has them.

`spamlang plot bottleneck` takes any number of directories, each of them one of:
- a sweep directory, or one run directory, of spamlang runs: one point per run, from its
  diagnostics.json (`spamlang diagnose`) or else its last metrics.jsonl "diag" row;
- a `spamlang diagnose-lm` output directory (diagnostics.json with "source": "diagnose-lm"):
  one point for a pretrained LM, in the series of its model family (GPT-2, Pythia, ...);
- a directory whose subdirectories are such outputs (or `spamlang diagnose -o` outputs), as
  well as, or instead of, run directories.
A standalone diagnostics.json without "source" (`spamlang diagnose -o DIR`) joins the series
of the spamlang runs it was measured on. Only files are read: no JAX, no transformers.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from spamlang.errors import UserError, first_line
from spamlang.fields import finite
from spamlang.plots.runs import check_dir, read_metrics, scan_runs
from spamlang.rundir.reading import read_json, read_object
from spamlang.rundir.schema import CONFIG, DIAGNOSTICS

LM_SOURCE = "diagnose-lm"
# transformers' config.model_type -> the family's name in the legend. Qwen2 and Qwen3 are one
# family here: the paper's point is the range real LMs span, not the version.
FAMILIES = {
    "gpt2": "GPT-2",
    "gpt_neox": "Pythia (GPT-NeoX)",
    "llama": "Llama",
    "qwen2": "Qwen",
    "qwen3": "Qwen",
    "mistral": "Mistral",
    "gemma": "Gemma",
    "gemma2": "Gemma",
    "gemma3": "Gemma",
    "opt": "OPT",
    "olmo": "OLMo",
    "olmo2": "OLMo",
    "phi": "Phi",
    "phi3": "Phi",
}


def family_name(model_type: str | None) -> str:
    """The legend name of a transformers model_type: 'gpt2' -> 'GPT-2'; unknown -> itself."""
    if not model_type:
        return "pretrained LM"
    return FAMILIES.get(str(model_type).lower(), str(model_type))


def bottleneck_points(inputs: str | os.PathLike | Iterable[str | os.PathLike]) -> list[dict]:
    """Every Figure 6 point of one directory or a list of them (see the module docstring).

    Each point has run_id, series, d_over_v, kernel_fraction, curve (tokens/V and kernel
    fraction along training; empty for LMs) and source ("spamlang" or "diagnose-lm"); LM
    points also have model_type and model_name. A directory that gives no point is a UserError
    naming it, as is a diagnostics.json that cannot be read or has no kernel fraction.
    """
    paths = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    points, seen = [], set()
    for path in paths:
        root = check_dir(path)
        if root.resolve() in seen:  # the same directory twice would draw its points twice
            continue
        seen.add(root.resolve())
        points.extend(_points_of(root))
    return points


def _points_of(root: Path) -> list[dict]:
    if _standalone(root):
        return [standalone_point(root)]
    runs, missing = _sweep_points(root)
    if runs and missing:  # a figure of 1 run out of 8 must say why the other 7 are absent
        print(
            f"note: {missing} of {missing + len(runs)} runs in {root} have no diagnostics.json "
            f"(run `spamlang diagnose` on them, or train with diag_every > 0); drawing "
            f"{len(runs)}",
            file=sys.stderr,
        )
    # A sweep's run directories hold their own diagnostics.json; they are read as runs above.
    found = runs + [standalone_point(sub) for sub in sorted(root.iterdir()) if _standalone(sub)]
    if found:
        return found
    if any((p / CONFIG).is_file() for p in (root, *root.iterdir())):
        raise UserError(
            f"no run in {root} has a diagnostics.json or 'diag' rows in metrics.jsonl "
            "(train with diag_every > 0, or run `spamlang diagnose`)"
        )
    raise UserError(
        f"nothing to plot in {root}: no run in it (config.json) and no "
        f"{DIAGNOSTICS} in it or its subdirectories (`spamlang diagnose-lm` output)"
    )


def _standalone(path: Path) -> bool:
    """A diagnostics.json outside a run directory (inside one, the run reads it)."""
    return (path / DIAGNOSTICS).is_file() and not (path / CONFIG).is_file()


def standalone_point(out_dir: str | Path) -> dict:
    """The point of one `spamlang diagnose-lm` (or `spamlang diagnose -o`) output directory."""
    file = Path(out_dir) / DIAGNOSTICS
    try:
        diag = read_json(file)
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read {file}: {first_line(e)}") from None
    if not isinstance(diag, dict):
        raise UserError(f"{file} is not a JSON object")
    kf = finite(diag.get("kernel_fraction"))
    if kf is None:
        raise UserError(f"{file} has no finite kernel_fraction")
    d_over_v = finite(diag.get("d_over_v"))
    if d_over_v is None:  # older files: the ratio from its parts
        V = finite(diag.get("vocab_size"))
        D = finite(diag.get("head_rank")) or finite(diag.get("d_model"))
        d_over_v = D / V if D and V else None
    if not d_over_v or d_over_v <= 0:
        raise UserError(f"{file} has no d_over_v (nor head_rank or d_model with vocab_size)")
    name = str(diag.get("model_name") or Path(out_dir).resolve().name)
    point = {
        "run_id": name,
        "d_over_v": d_over_v,
        "kernel_fraction": kf,
        "curve": ([], []),
        "path": str(out_dir),
    }
    if diag.get("source") == LM_SOURCE or "model_type" in diag:
        return {
            **point,
            "source": LM_SOURCE,
            "series": family_name(diag.get("model_type")),
            "model_type": diag.get("model_type"),
            "model_name": name,
        }
    return {**point, "source": "spamlang", "series": _series(diag)}


# --- spamlang runs --------------------------------------------------------------------------


def effective_rank(config: dict) -> int:
    """The head's rank from a run's config.json: d_model (preset or override), r for
    lowrank:r when r < d_model, r for mlp:r (at most V; `ModelConfig.head_rank`)."""
    from spamlang.model.config import preset_fields

    try:  # a width-family name (tiny-w64) resolves to its own d_model, not the base's
        preset = preset_fields(config.get("preset", ""))
    except UserError:  # unknown here: only a d_model override can tell
        preset = {}
    d_model = int((config.get("model_overrides") or {}).get("d_model", preset.get("d_model", 0)))
    if not d_model:
        raise UserError(f"cannot tell d_model from config preset {config.get('preset')!r}")
    kind, _, arg = str(config.get("head", "softmax")).partition(":")
    if kind == "mlp" and arg.isdigit():
        return min(int(arg), int(config.get("vocab_size") or int(arg)))
    return min(d_model, int(arg)) if kind == "lowrank" and arg.isdigit() else d_model


def _series(config: dict) -> str:
    """A run's series (config.json or its diagnostics.json: both have these fields)."""
    tied = "tied" if config.get("tie_embeddings") else "untied"
    kind = str(config.get("head", "softmax")).split(":")[0]
    return f"{config.get('language', '?')}, {kind}, {tied}"


def sweep_points(sweep_dir: str | Path) -> list[dict]:
    """One point per run with a kernel fraction: diagnostics.json if present, else the run's
    last "diag" row; [] when none has one."""
    return _sweep_points(sweep_dir)[0]


def _sweep_points(sweep_dir: str | Path) -> tuple[list[dict], int]:
    """`sweep_points`, and how many runs had no kernel fraction."""
    points, missing = [], 0
    for run in scan_runs(check_dir(sweep_dir)):
        config = read_object(run.path / CONFIG)
        V = int(config["vocab_size"])
        rows = [r for r in read_metrics(run.path, "diag") if finite(r.get("kernel_fraction"))]
        diag_file = run.path / DIAGNOSTICS
        try:  # absent, or being written by `spamlang diagnose`: the diag rows stand in
            kf = float((read_object(diag_file) or {})["kernel_fraction"])
        except (KeyError, TypeError, ValueError):
            kf = None
        if kf is None and rows:
            kf = float(rows[-1]["kernel_fraction"])
        if kf is None or not math.isfinite(kf):
            missing += 1
            continue
        points.append(
            {
                "run_id": run.run_id,
                "series": _series(config),
                "source": "spamlang",
                "d_over_v": effective_rank(config) / V,
                "kernel_fraction": kf,
                "curve": (
                    [r["tokens"] / V for r in rows if r.get("tokens", 0) > 0],
                    [float(r["kernel_fraction"]) for r in rows if r.get("tokens", 0) > 0],
                ),
            }
        )
    return points, missing
