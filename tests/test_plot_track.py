"""`spamlang plot track`: the mechanism diagnostic drawn from handmade track.jsonl files.

Nothing is trained: each run directory is a config.json and a track.jsonl written here.
"""

from __future__ import annotations

import json
import random

import pytest

from spamlang.cli import main
from spamlang.plots.track import APPEARANCES, MAX_IDS, load_track, summarise, track_figure

STEPS = 60


def make_run(
    root, name: str, ids: list[int], tied: bool, seed: int = 0, tail: str = "", damaged: bool = True
):
    """A run directory whose symbols appear at random (~1 step in 5): +3e-3 per appearance,
    a small random push-down between. `tail` is appended to track.jsonl as is; `damaged`
    puts a line that is not JSON in the middle."""
    rng = random.Random(seed)
    run = root / name
    run.mkdir(parents=True)
    (run / "config.json").write_text(
        json.dumps(
            {
                "optimizer": "adamw",
                "b2": 0.999,
                "vocab_size": 4096,
                "batch_size": 32,
                "tie_embeddings": tied,
            }
        )
    )
    lines = []
    for step in range(1, STEPS + 1):
        seen = [rng.randrange(3) if rng.random() < 0.2 else 0 for _ in ids]
        row = {
            "step": step,
            "ids": ids,
            "seen": seen,
            "embed": [3e-3 if s else -rng.random() * 2e-4 for s in seen],
        }
        if not tied:
            row["head"] = [5e-3 if s else -rng.random() * 4e-4 for s in seen]
        lines.append(json.dumps(row) + "\n")
    if damaged:
        lines.insert(STEPS // 2, "not json\n")  # skipped too, with a note
    (run / "track.jsonl").write_text("".join(lines) + tail)
    return run


def rows_of(run) -> list[dict]:
    out = []
    for line in (run / "track.jsonl").read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def panels(fig) -> list:
    """The axes that carry the cumulative lines (not their twins, not hidden ones)."""
    return [
        ax
        for sub in fig.subfigs
        for ax in sub.axes
        if ax.get_visible() and any(ln.get_gid() == APPEARANCES for ln in ax.get_lines())
    ]


def parse_table(text: str) -> dict:
    """stdout's table as (run, id) -> (appearances, pull, between, net)."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 6 and parts[1].isdigit():
            out[parts[0], int(parts[1])] = (int(parts[2]), *map(float, parts[3:]))
    return out


def test_cli_writes_the_figure_and_prints_summarises_sums(tmp_path, capsys):
    torn = '{"step": 61, "ids": [0, 2048, 4095], "se'  # a live run's half-written last line
    a = make_run(tmp_path, "untied", [0, 2048, 4095], tied=False, tail=torn)
    b = make_run(tmp_path, "tied", [0, 4095], tied=True, seed=1)
    out = tmp_path / "track.png"
    for table in ("embed", "head"):
        runs = [a, b] if table == "embed" else [a]
        assert main(["plot", "track", *map(str, runs), "-o", str(out), "--table", table]) == 0
        printed, err = capsys.readouterr()
        # The damaged line is reported, a live run's torn last line is not.
        assert "note: untied: left out 1 incomplete or non-finite rows" in err
        assert out.read_bytes().startswith(b"\x89PNG") and f"wrote {out}" in printed
        table_rows = parse_table(printed)
        expected = {
            (run.name, i): s for run in runs for i, s in summarise(rows_of(run))[table].items()
        }
        assert set(table_rows) == set(expected)
        for key, (n, pull, between, net) in table_rows.items():
            s = expected[key]
            assert n == s["appearances"]
            assert (pull, between, net) == pytest.approx(
                (s["pull"], s["between"], s["net"]), rel=1e-5
            )


def test_panels_mark_every_appearance_and_sum_to_net(tmp_path):
    run = make_run(tmp_path, "r", [0, 2048, 4095], tied=False)
    rows = rows_of(run)
    track = load_track(run, "head")
    fig = track_figure([track])
    (sub,) = fig.subfigs
    title = sub._suptitle.get_text()
    assert title.startswith("r: adamw b2=0.999") and "V/B = 4096/32 = 128 steps" in title
    axes = panels(fig)
    assert len(axes) == 3
    sums = summarise(rows)["head"]
    for j, (ax, i) in enumerate(zip(axes, [0, 2048, 4095])):
        (marks,) = [ln for ln in ax.get_lines() if ln.get_gid() == APPEARANCES]
        appeared = [r["step"] for r in rows if r["seen"][j] > 0]
        assert list(marks.get_xdata()) == appeared and len(appeared) == sums[i]["appearances"]
        cumulative = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == len(rows)][0]
        assert cumulative.get_ydata()[-1] == pytest.approx(sums[i]["net"])
        assert ax.get_title().startswith(
            f"id {i}: pull {sums[i]['pull']:+.3g} over {sums[i]['appearances']} appearances"
        )


def test_more_ids_than_panels_says_so(tmp_path):
    ids = [round(k * 4095 / 9) for k in range(10)]
    fig = track_figure([load_track(make_run(tmp_path, "many", ids, tied=True))])
    titles = [ax.get_title().split(":")[0] for ax in panels(fig)]
    assert len(titles) == MAX_IDS and titles[0] == "id 0" and titles[-1] == "id 4095"
    assert f"({MAX_IDS} of 10 tracked ids shown)" in fig.subfigs[0]._suptitle.get_text()


def test_errors_are_one_line_exit_2(tmp_path, capsys):
    tied = make_run(tmp_path, "tied", [0, 7], tied=True, damaged=False)
    untracked = tmp_path / "untracked"
    untracked.mkdir()
    (untracked / "config.json").write_text("{}")
    empty = make_run(tmp_path, "empty", [0], tied=True)
    (empty / "track.jsonl").write_text('{"step": 1, "ids": [0], "se')  # only a torn line
    out = str(tmp_path / "t.png")
    cases = [
        (
            ["plot", "track", str(tied), "-o", out, "--table", "head"],
            "is tied (no head rows in track.jsonl): its head row is its embedding row",
        ),
        (
            ["plot", "track", str(tied), str(untracked), "-o", out],
            "did not track symbols; train with --track-symbols K",
        ),
        (["plot", "track", str(empty), "-o", out], "has no complete rows"),
    ]
    for args, message in cases:
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and message in err, (args, err)
    assert not (tmp_path / "t.png").exists()
