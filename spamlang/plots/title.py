"""A figure's title: what it holds fixed that the sweep varies, so that a figure cut out of a
sweep by `--where` (or by `--lr`) says which slice it is."""

from __future__ import annotations

from collections.abc import Iterable

from spamlang.plots.layout import facet_title, ident
from spamlang.plots.runs import Run


def fixed_title(
    data: list[Run], shown: list[Run], where: dict | None, axes: Iterable[str | None] = ()
) -> str:
    """Every `--where` filter, then every other setting that `data` (the sweep's runs) holds
    more than one value of and `shown` (the runs drawn) only one, unless it is an axis of the
    figure (`axes`). A setting that comes out at one value reads `name=value` ('tied' /
    'untied'); other filters (several values, exclusions, patterns) as written. '' when
    nothing is fixed."""

    def single(key: str) -> list:
        values = {ident(r.settings.get(key)): r.settings.get(key) for r in shown}
        return list(values.values()) if len(values) == 1 and key in shown[0].settings else []

    axes = {a for a in axes if a}
    parts, said = [], set()
    for key, wanted in (where or {}).items():
        name, op = (key[:-1], "!=") if key.endswith("!") else (key, "=")
        one = single(name) if op == "=" and shown else []
        wanted = wanted if isinstance(wanted, (list, tuple)) else [wanted]
        parts.append(
            facet_title(name, one[0]) if one else f"{name}{op}{'|'.join(map(str, wanted))}"
        )
        said.add(name)
    for key in sorted({k for r in data for k in r.settings} - axes - said):
        if len({ident(r.settings.get(key)) for r in data}) > 1 and (one := single(key)):
            parts.append(facet_title(key, one[0]))
    return ", ".join(parts)
