"""Issue 61, items 12, 14 and 15: figures titled with the runs' shape (steps x B x L, language)
and curves against steps (`--x steps`); the README's first sweep brackets its LRs, and its
extras line names the torch extra for the DataLoader with a link to the recipe."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_plot_axes import row
from test_plot_figure_fixes import write

from spamlang.cli import main
from spamlang.errors import UserError
from spamlang.plots.curves import curves_figure
from spamlang.plots.sweep import heatmap_figure

ROOT = Path(__file__).resolve().parents[1]
X = "\u00d7"


def title(fig) -> str:
    return fig._suptitle.get_text() if fig._suptitle is not None else ""


def _run(root: Path, name: str, lr: float, **config) -> Path:
    """A finished run directory: 10 steps of B 4 x L 8 unless `config` says otherwise."""
    run = root / name
    run.mkdir(parents=True)
    fields = dict(vocab_size=64, lr=lr, tie_embeddings=True, seed=0, language="spam", preset="tiny")
    fields = {**fields, "batch_size": 4, "seq_len": 8, "tokens": 320, **config}
    (run / "config.json").write_text(json.dumps(fields))
    per_step = fields["batch_size"] * fields["seq_len"]
    (run / "metrics.jsonl").write_text(
        "".join(
            json.dumps({"kind": "train", "step": s, "tokens": s * per_step, "loss": 3.0 / s}) + "\n"
            for s in (5, 10)
        )
    )
    (run / "result.json").write_text(json.dumps({"final_eval_loss": 0.3, "diverged": False}))
    return run


def test_the_heatmap_title_states_steps_batch_length_and_language(tmp_path):
    rows = [row(v=v, lr=lr, language="zipf-spam") for v in (64, 256) for lr in (1e-3, 1e-2)]
    text = title(heatmap_figure(write(tmp_path / "s", rows)))
    assert text == f"100 steps {X} B=8 {X} L=64 on zipf-spam"
    assert "language=" not in text  # the default-off language is said once, in the shape


def test_a_shape_that_differs_is_a_range_and_filters_are_not_repeated(tmp_path):
    rows = [
        row(v=64, lr=lr, batch_size=b, steps=800 // b, tokens=800 * 64)
        for lr in (1e-3, 1e-2)
        for b in (8, 32)
    ]
    root = write(tmp_path / "s", rows)
    assert title(heatmap_figure(root)) == f"25\u2013100 steps {X} B=8\u201332 {X} L=64 on spam"
    text = title(heatmap_figure(root, where={"batch_size": ["32"], "language": ["spam"]}))
    assert text == f"25 steps {X} B=32 {X} L=64 on spam"  # not also "batch_size=32, ..."


def test_curves_title_the_shape_and_draw_against_steps(tmp_path):
    _run(tmp_path, "a", 1e-3)
    _run(tmp_path, "b", 1e-2)
    fig = curves_figure(tmp_path)
    assert title(fig).startswith(f"10 steps {X} B=4 {X} L=8 on spam, lr=")
    (ax,) = fig.axes
    assert ax.get_xlabel() == f"training tokens (= steps {X} 4 {X} 8)"
    assert list(ax.lines[0].get_xdata()) == [160, 320]
    fig = curves_figure(tmp_path, x="steps")  # was: "no train row has both 'steps' and 'loss'"
    (ax,) = fig.axes
    assert ax.get_xlabel() == "step" and list(ax.lines[0].get_xdata()) == [5, 10]
    with pytest.raises(UserError, match="tokens or steps"):
        curves_figure(tmp_path, x="nonesuch")


def test_a_budget_given_in_steps_and_a_corpus_run_are_titled_by_them(tmp_path):
    _run(tmp_path / "s", "a", 1e-3, tokens=None, steps=10)
    assert title(curves_figure(tmp_path / "s")).startswith(f"10 steps {X} B=4")
    _run(tmp_path / "c", "a", 1e-3, corpus="runs/corpora/stdlib16k")
    assert title(curves_figure(tmp_path / "c")) == f"10 steps {X} B=4 {X} L=8 on stdlib16k"


def test_the_cli_draws_curves_against_steps(tmp_path, capsys):
    _run(tmp_path / "s", "a", 1e-3)
    out = tmp_path / "c.png"
    assert main(["plot", "curves", str(tmp_path / "s"), "-o", str(out), "--x", "steps"]) == 0
    assert out.stat().st_size > 1000


# ----- the README ------------------------------------------------------------------------------


def _section(text: str, heading: str) -> str:
    return re.split(r"\n##+ ", text.split(f"\n{heading}\n", 1)[1], maxsplit=1)[0]


def test_the_readmes_first_sweep_brackets_its_lrs_and_still_loads(tmp_path):
    readme = (ROOT / "README.md").read_text()
    section = _section(readme, "## Your first sweep")
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    assert re.search(r"^    bracket_lr=3,  # .*next LR beyond", code, re.M)  # what it does
    (tmp_path / "my_sweep.py").write_text(code)
    from spamlang.sweep.files import load_sweep_file

    sweep, plots, samples = load_sweep_file(tmp_path / "my_sweep.py")
    assert sweep.bracket_lr == 3 and plots is True and samples
    assert len(list(sweep.points())) == 2 * 3 * 2 * 1 * 2
    assert "docs/guide/sweeps.md" in section  # where bracketing is told in full


def test_the_readme_names_the_torch_extra_for_the_dataloader():
    readme = " ".join((ROOT / "README.md").read_text().split())
    extras = readme.split("Extras: ", 1)[1].split("With `.[dev]`", 1)[0]
    assert "`torch` torch 2.13.0 alone" in extras and "DataLoader" in extras
    link = "docs/guide/languages-and-datasets.md#pytorch-dataloader"
    assert link in extras
    guide = (ROOT / "docs/guide/languages-and-datasets.md").read_text()
    assert "## PyTorch `DataLoader`" in guide and 'get_context("forkserver")' in guide
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^torch = \["torch==2\.13\.0"\]', pyproject, re.M)
