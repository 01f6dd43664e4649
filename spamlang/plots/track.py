"""The mechanism diagnostic (`spamlang plot track`): how each step moved tracked symbols' rows
(track.jsonl), and whether the pull-up at appearances or the push-down between them wins."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from spamlang.errors import UserError
from spamlang.fields import finite
from spamlang.plots.canvas import PAPER_WIDTH_IN, line_colour, note, writer
from spamlang.plots.layout import MAX_FACETS
from spamlang.rundir.reading import check_dir, read_lines, read_object
from spamlang.rundir.schema import ADAM_B2, CONFIG, TRACK

TABLES = ("embed", "head")
MAX_IDS = 6  # panels per run; more would be too narrow to read
APPEARANCES = "appearances"  # gid of each panel's appearance markers
PULL_COLOUR, BETWEEN_COLOUR = "0.45", "0.75"  # faint: the bars are the background


def summarise(rows: list[dict]) -> dict[str, dict]:
    """Per table and tracked id of track.jsonl `rows`: the components summed over the steps that
    showed the symbol ("pull") and the others ("between"), and the appearance count."""
    if not rows:
        return {}
    seen_SxK = np.array([r["seen"] for r in rows]) > 0
    out: dict[str, dict] = {}
    for table in (t for t in TABLES if t in rows[0]):
        comp_SxK = np.array([r[table] for r in rows], dtype=float)
        pull_K, between_K = (np.where(m, comp_SxK, 0.0).sum(0) for m in (seen_SxK, ~seen_SxK))
        sums = zip(rows[0]["ids"], seen_SxK.sum(0), pull_K.tolist(), between_K.tolist())
        out[table] = {
            i: {"appearances": int(n), "pull": p, "between": b, "net": p + b} for i, n, p, b in sums
        }
    return out


@dataclass(frozen=True)
class Track:
    """One run's track.jsonl rows for one table, with what the figure says about the run."""

    name: str  # the run directory's name
    config: dict  # its config.json ({} when unreadable)
    table: str  # "embed" or "head"
    rows: list[dict]  # complete track.jsonl rows, by step
    ids: list[int]  # the tracked ids
    sums: dict  # `summarise`'s sums for `table`, by id


def load_track(run_dir: str | Path, table: str = "embed") -> Track:
    """RUN_DIR/track.jsonl's complete rows for `table`; other rows are left out with a note."""
    if table not in TABLES:  # a library caller's typo would otherwise read as "is tied"
        raise UserError(f"table must be one of {', '.join(TABLES)}, got {table!r}")
    run = check_dir(run_dir)
    path = run / TRACK
    if not path.is_file():
        how = "--track-symbols K (spamlang train) or set track_symbols in a sweep's base config"
        raise UserError(f"{run} has no {TRACK}: the run did not track symbols; train with {how}")
    # A live run's torn last line is no loss (the next read has it whole); other bad lines count.
    lines = read_lines(path)
    rows, broken = lines.rows, len(lines.bad)
    if not rows:
        raise UserError(f"{path} has no complete rows")
    if table not in rows[0]:
        why = f"(no head rows in {TRACK}): its head row is its embedding row"
        raise UserError(f"{run} is tied {why}; use --table embed")
    usable = [r for r in rows if _complete(r, table, rows[0]["ids"])]
    if not usable:
        raise UserError(f"{path} has no rows with finite {table} updates")
    if broken or len(usable) < len(rows):
        left = f"left out {broken + len(rows) - len(usable)} incomplete or non-finite rows"
        print(f"note: {run.name}: {left} of {TRACK}", file=sys.stderr)
    usable.sort(key=lambda r: r["step"])
    sums = summarise(usable)[table]
    return Track(run.name, read_object(run / CONFIG) or {}, table, usable, usable[0]["ids"], sums)


def _complete(row: dict, table: str, ids: list) -> bool:
    """The first row's ids and a finite number per id in "seen" and `table` (null: NaN)."""

    def numbers(v) -> bool:
        return isinstance(v, list) and len(v) == len(ids) and all(finite(x) is not None for x in v)

    step = isinstance(row.get("step"), (int, float))
    return row.get("ids") == ids and step and numbers(row.get("seen")) and numbers(row.get(table))


def describe_run(track: Track) -> str:
    """'NAME: adamw b2=0.999 (memory ... = 1000 steps), return time V/B = ... = 128 steps'."""
    c = track.config
    optimizer = c.get("optimizer", "adamw")
    text = f"{track.name}: {optimizer}"
    b2 = c.get(ADAM_B2)
    if isinstance(b2, (int, float)):
        text += f" b2={b2:g}"
        if "adam" in optimizer and b2 < 1:
            text += f" (memory 1/(1-b2) = {1 / (1 - b2):.0f} steps)"
    v, b = c.get("vocab_size"), c.get("batch_size")
    if isinstance(v, int) and isinstance(b, int) and b > 0:
        text += f", return time V/B = {v}/{b} = {v / b:.3g} steps"
    return text


def shown(k: int, cap: int = MAX_IDS) -> list[int]:
    """The tracked ids drawn: all, or `cap` spread evenly (from frequent to rare symbols)."""
    if k <= cap:
        return list(range(k))
    return sorted({round(i * (k - 1) / (cap - 1)) for i in range(cap)})


def sums_table(tracks: list[Track]) -> str:
    table = tracks[0].table if tracks else "embed"
    header = ("run", "id", "appearances", "pull", "between", "net")
    lines = [
        [t.name, str(i), str(s["appearances"]), *(f"{s[k]:+.6g}" for k in header[3:])]
        for t in tracks
        for i, s in t.sums.items()
    ]
    widths = [max(len(x) for x in col) for col in zip(header, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" if k < 1 else f"{{:>{w}}}" for k, w in enumerate(widths))
    title = f"{table} rows: update along the row, summed over the steps that showed the symbol"
    title += " (pull) and the others (between)"
    return "\n".join([title, fmt.format(*header), *(fmt.format(*line) for line in lines)])


def track_figure(tracks: list[Track]) -> Figure:
    """A row of panels per run (titled with its time scales), a panel per shown tracked id."""
    if not tracks:
        raise UserError("no run directory given")
    if len(tracks) > MAX_FACETS:
        many = f"{len(tracks)} runs would each get a row of panels"
        raise UserError(f"{many}; draw at most {MAX_FACETS} at once")
    n_cols = max(len(shown(len(t.ids))) for t in tracks)
    size = (max(PAPER_WIDTH_IN, 2.3 * n_cols), 2.5 * len(tracks) + 0.5)
    fig = Figure(figsize=size, layout="constrained")
    subfigs = fig.subfigures(len(tracks), 1, squeeze=False)[:, 0]
    for sub, track in zip(subfigs, tracks):
        picked = shown(len(track.ids))
        title = describe_run(track)
        if len(picked) < len(track.ids):
            title += f" ({len(picked)} of {len(track.ids)} tracked ids shown)"
        sub.suptitle(title, fontsize=9)
        axes = sub.subplots(1, n_cols, squeeze=False)[0]
        for ax in axes[len(picked) :]:
            ax.set_visible(False)
        for c, (ax, j) in enumerate(zip(axes, picked)):
            _draw_panel(ax, track, j, first=c == 0, last=c == len(picked) - 1)
    what = "embedding" if tracks[0].table == "embed" else "head"
    note(
        fig,
        f"line: cumulative sum over steps of the update to the symbol's {what} row along "
        "itself, <p'-p, p>/|p|; bars (right axis): each step's, dark when the batch "
        "showed the symbol",
        "triangles: steps that showed it; pull/between: sums over those steps / the others",
    )
    return fig


plot_track = writer(track_figure)


def _draw_panel(ax, track: Track, j: int, first: bool, last: bool) -> None:
    """One tracked id: per-step bars behind (right axis), the cumulative line in front."""
    steps_n = np.array([r["step"] for r in track.rows], dtype=float)
    comp_n = np.array([r[track.table][j] for r in track.rows], dtype=float)
    seen_n = np.array([r["seen"][j] > 0 for r in track.rows], dtype=bool)
    cum_n = np.cumsum(comp_n)
    bars = ax.twinx()
    # The line's axes in front of the bars' (a twin is drawn above its host by default).
    ax.set_zorder(bars.get_zorder() + 1)
    ax.patch.set_visible(False)
    for mask, colour in ((~seen_n, BETWEEN_COLOUR), (seen_n, PULL_COLOUR)):
        bars.vlines(steps_n[mask], 0, comp_n[mask], color=colour, lw=0.6)
    bars.tick_params(labelsize=6, colors="0.45")
    if last:
        bars.set_ylabel("per step", fontsize=7, color="0.45")
    colour = line_colour(0, 1)
    ax.axhline(0, color="0.5", lw=0.5)
    ax.plot(steps_n, cum_n, color=colour, lw=1.2)
    ax.plot(steps_n[seen_n], cum_n[seen_n], "^", color=colour, ms=3, ls="none", gid=APPEARANCES)
    # In the title, not a box inside: a box would hide part of a line that may go anywhere.
    s = track.sums[track.ids[j]]
    pull = f"id {track.ids[j]}: pull {s['pull']:+.3g} over {s['appearances']} appearances"
    ax.set_title(f"{pull}\nbetween {s['between']:+.3g}, net {s['net']:+.3g}", fontsize=6.5)
    ax.tick_params(labelsize=6)
    _align_zero(ax, bars)
    ax.set_xlabel("step", fontsize=7)
    if first:
        ax.set_ylabel("cumulative update along row", fontsize=7)


def _align_zero(*axes) -> None:
    """Put 0 at the same height on twin axes, so that the bars start from the line's zero."""
    limits = [(min(lo, 0.0), max(hi, 0.0)) for lo, hi in (ax.get_ylim() for ax in axes)]
    # Zero's height (0 bottom, 1 top); at most 0.9, so that an all-negative axis leaves its
    # twin's positive values some room.
    below = min(max(-lo / (hi - lo) if hi > lo else 0.5 for lo, hi in limits), 0.9)
    for ax, (lo, hi) in zip(axes, limits):
        span = max(hi / (1.0 - below), -lo / below if below > 0 else 0.0) or 1.0
        ax.set_ylim(-below * span, (1.0 - below) * span)
