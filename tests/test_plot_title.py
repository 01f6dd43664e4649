"""layout.fixed_title: figures name the slice of the sweep they show (--where, --lr)."""

from __future__ import annotations

import json

from test_plot_axes import row
from test_plot_figure_fixes import write

from spamlang.plots.curves import curves_figure
from spamlang.plots.sweep import heatmap_figure


def title(fig) -> str:
    return fig._suptitle.get_text() if fig._suptitle is not None else ""


def test_heatmap_titles_every_where_filter_and_fixed_setting(tmp_path):
    rows = [
        row(v=v, lr=lr, tied=tied, loss=1.0 + lr, b2=b2, seed=seed)
        for v in (64, 256)
        for lr in (1e-3, 1e-2)
        for tied in (True, False)
        for b2 in (0.95, 0.999)
        for seed in (0, 1)
    ]
    root = write(tmp_path / "s", rows, settings=["b2"])
    fig = heatmap_figure(root, where={"b2": ["0.999"], "tie_embeddings": ["True"]})
    assert "b2=0.999" in title(fig) and "tied" in title(fig)
    fig = heatmap_figure(root, where={"seed": ["1"]}, cols="none")
    assert "seed=1" in title(fig) and "b2" not in title(fig)  # b2 is a row of panels here
    # Nothing fixed: only the runs' shape (issue 61, item 12).
    assert title(heatmap_figure(root)) == "100 steps \u00d7 B=8 \u00d7 L=64 on spam"


def _run(root, name, lr, tied, losses):
    run = root / name
    run.mkdir(parents=True)
    (run / "config.json").write_text(
        json.dumps(
            {
                "vocab_size": 64,
                "lr": lr,
                "tie_embeddings": tied,
                "seed": 0,
                "head": "softmax",
                "language": "spam",
                "seq_len": 16,
            }
        )
    )
    (run / "metrics.jsonl").write_text(
        "".join(
            json.dumps({"kind": "train", "step": 10 * (i + 1), "tokens": 100 * (i + 1), "loss": x})
            + "\n"
            for i, x in enumerate(losses)
        )
    )
    (run / "result.json").write_text(json.dumps({"final_eval_loss": losses[-1], "diverged": False}))


def test_curves_at_one_lr_name_the_panels_they_drop(tmp_path):
    _run(tmp_path, "a", 1e-3, True, [3.0, 2.0])
    _run(tmp_path, "b", 1e-2, True, [3.0, 1.0])
    _run(tmp_path, "c", 1e-2, False, [3.0, 2.5])
    fig = curves_figure(tmp_path, lr=1e-3)
    caption = fig._supxlabel.get_text()
    assert "no run at lr 1e-3 in untied" in caption
    assert "lr=1e-3" in title(fig) or "lr 1e-3" in " ".join(ax.get_title() for ax in fig.axes)


def test_lines_title_their_where_filters(tmp_path):
    from spamlang.plots.lines import lines_figure

    rows = [
        row(v=v, lr=lr, tied=tied, loss=1.0 + lr)
        for v in (64, 256)
        for lr in (1e-3, 1e-2)
        for tied in (True, False)
    ]
    root = write(tmp_path / "s", rows)
    fig = lines_figure(
        root, x="vocab_size", y="final_eval_loss", color="none", where={"tie_embeddings": ["False"]}
    )
    assert "untied" in title(fig)


def test_a_base_setting_off_its_default_is_in_the_title_axis_or_not(tmp_path):
    """A sweep whose base fixes D = 32, b2 0.99 and no weight decay: its heatmap said only
    'tied' (or nothing); the title now carries every base setting off the defaults, and none
    that is at its default."""
    rows = [
        row(v=v, lr=lr, tied=tied, loss=1.0 + lr, d_model=32, b2=0.99, weight_decay=0.0)
        for v in (64, 256)
        for lr in (1e-3, 1e-2)
        for tied in (True, False)
    ]
    root = write(tmp_path / "s", rows, settings=["b2", "weight_decay"])
    text = title(heatmap_figure(root))
    assert "d_model=32" in text and "b2=0.99" in text and "weight_decay=0" in text
    assert "language" not in text and "head" not in text  # at their defaults: not named
    assert "tied" in title(heatmap_figure(root, where={"tie_embeddings": ["True"]}))


def test_the_title_defaults_are_the_configs_own():
    from spamlang.model.config import preset_fields
    from spamlang.rundir.schema import TITLE_DEFAULTS
    from spamlang.train.config import TrainConfig

    config = TrainConfig()
    preset = preset_fields(config.preset)
    own = {k: getattr(config, k) for k in TITLE_DEFAULTS if hasattr(config, k)}
    own.update(d_model=preset["d_model"], n_layers=preset["n_layers"])
    assert own == TITLE_DEFAULTS
