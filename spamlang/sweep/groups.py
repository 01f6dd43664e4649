"""A sweep's points in groups trainable together (one vmapped program each), and a shard's
share of them: whole groups, round-robin, so shards need no coordination."""

from __future__ import annotations

from typing import Any

from spamlang.errors import UserError
from spamlang.fields import as_int, in_range, is_int
from spamlang.sweep.spec import Sweep


def groups(sweep: Sweep, group_size: int = 0) -> list[list[tuple[str, Any]]]:
    """The points split into groups trainable together, sorted by the first member's run id.

    Members keep their point order. `group_size` > 0 caps a group's size (a larger group is cut
    into consecutive chunks, each a group of its own); 1 means every run alone; 0 means no cap.
    """
    group_size = in_range("group_size", as_int("group_size", group_size), ge=0)
    by_key: dict[str, list] = {}
    for point in sweep.points():
        by_key.setdefault(sweep.group_key_of(*point), []).append(point)
    out = []
    for members in by_key.values():
        size = group_size or len(members)
        out.extend(members[i : i + size] for i in range(0, len(members), size))
    return sorted(out, key=lambda g: g[0][0])


def parse_shard(text: str) -> tuple[int, int]:
    """ "i/n" -> (i, n) with 0 <= i < n (shards are numbered from 0)."""
    i, sep, n = str(text).partition("/")
    try:
        shard = (int(i), int(n))
    except ValueError:
        shard = None
    if not sep or shard is None:
        raise UserError(f"--shard must look like i/n (e.g. 0/4), got {text!r}")
    return check_shard(shard)


def check_shard(shard: Any) -> tuple[int, int]:
    try:
        i, n = shard
    except (TypeError, ValueError):
        raise UserError(f"shard must be a pair (i, n), got {shard!r}") from None
    if not (is_int(i) and is_int(n)) or not 0 <= i < n:
        raise UserError(f"shard (i, n) needs integers with 0 <= i < n, got {shard!r}")
    return int(i), int(n)


def shard_groups(sweep: Sweep, shard: tuple[int, int] = (0, 1), group_size: int = 0):
    """Shard i of n: groups i, i+n, i+2n, ... of the sorted group list, in point order.

    Round-robin over whole groups, so a group is never split across shards and shards need no
    coordination: every host computes the same list from the sweep alone. Growing an axis may
    move groups between shards; that is harmless, as finished runs are skipped wherever they ran.
    """
    i, n = check_shard(shard)
    mine = groups(sweep, group_size)[i::n]
    order = {run_id: k for k, (run_id, _) in enumerate(sweep.points())}
    return sorted(mine, key=lambda g: order[g[0][0]])


def empty_shard_note(sweep: Sweep, shard: tuple[int, int], group_size: int = 0) -> str | None:
    """A warning line when shard i of n holds no group (n larger than the sweep's groups)."""
    i, n = check_shard(shard)
    count = len(groups(sweep, group_size))
    if n == 1 or i < count:
        return None
    return (
        f"warning: shard {i}/{n} is empty: the sweep has {count} group(s) of runs, dealt "
        f"round-robin to shards 0..{min(count, n) - 1}; nothing to do here (use n <= "
        f"{count} to give every shard work)"
    )
