"""The package's import graph: no import circle, and no import from a lower layer to a higher one.

The graph is read from the source, not from a running interpreter: every spamlang/**/*.py is
parsed with `ast`, and each `import spamlang.x` / `from spamlang.x import y` is an edge wherever
it stands (at the top, inside a function, under a condition). A lazy import only postpones a
dependency: it still couples the two modules, and a circle through one fails at the first call
instead of at import time. A module that imports by name (`importlib.import_module`) has an edge
to every spamlang module it names in a string constant (the CLI's verb list, `spamlang.train`'s
lazy exports).

The layers, lowest first, are `LAYERS` below, each placed for the reason its comment gives,
with three rules checked on their own: nothing imports `cli`, `plots` never imports
`train`, and the siblings over train (`SIBLINGS`) import none of each other.
"""

from __future__ import annotations

import ast
import functools
from collections import deque
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "spamlang"

# Components (top-level modules and subpackages of spamlang), lowest layer first. A component
# may import from its own layer or a lower one, never from a higher one; within a layer the
# cycle check keeps the imports one-way.
LAYERS = (
    # Foundations, below every subject: the error type, field checks, and the commands' error
    # policy (`error_policy`: shared by `spamlang VERB` and `python sweeps/X.py`, so that sweep
    # needs nothing of cli).
    ("spamlang", "errors", "notation", "fields", "glyphs", "error_policy"),
    # The on-disk contract: file names, atomic writes, locks, reading runs, orbax checkpoints.
    ("rundir",),
    # Experiment trackers: a run's rows, config and result mirrored (imported by train.run).
    ("tracking",),
    ("languages",),  # the generators
    ("token_files",),  # the token-file format, knowing nothing of datasets
    ("data",),  # SequenceDataset and its export into a token file
    ("model",),  # the Transformer, presets, heads, kernels
    # The (chunked) loss on model.kernels; FLOP counts of a ModelConfig and the CPU-measured
    # throughput table; the optimizers.
    ("loss", "perf", "throughput", "optim", "members", "progress"),
    # diagnostics: the trainer logs its measurements every `diag_every` steps (train.run).
    # coverage: exposure counts and per-symbol scores, which training and evaluation record.
    # corpus: token files of real text, their windows, exact evaluation and `tokenize`.
    # results: the one reader of sweeps and runs as DataFrames (a model's preset gives its
    # d_model), under everything that reads them: sweep, law, plots, sample.
    ("diagnostics", "coverage", "corpus", "results"),
    ("evaluate",),  # the eval set's metrics, coverage and per-symbol rows of a run's models
    ("train",),  # config, state and step, loop, runs
    # Siblings over train, none importing another (`SIBLINGS`): sample loads a run
    # (train.load_run); diagnose_lm measures a Hugging Face LM with diagnostics; plots draws
    # what is on disk and what its caller passes in (samples, a law's predictions); law fits a
    # formula to a sweep's cells; sweep trains grids of runs. The CLI glues them: a sweep's
    # --plots, a sample table's figure, the law's validation figure and its dry-run forecast.
    ("sample", "diagnose_lm", "plots", "law", "sweep"),
    ("cli",),  # `spamlang VERB`: may import anything, imported by nothing
    ("__main__",),  # `python -m spamlang`
)
RANK = {name: rank for rank, layer in enumerate(LAYERS) for name in layer}
# The house is flat: what stands on train stands side by side, so that the longest chain of
# imports runs cli -> one of these -> train, whichever it is.
SIBLINGS = ("sample", "diagnose_lm", "plots", "law", "sweep")

# Edges that break a rule below and cannot be fixed in place yet, each with its reason. An
# entry that no longer matches an edge fails `test_allowlist_is_current`, so the list only
# shrinks.
ALLOWED: dict = {}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def component(module: str) -> str:
    """`spamlang.sweep.files` -> "sweep", `spamlang.data` -> "data", `spamlang` -> "spamlang"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


@functools.cache
def _modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(module: str, path: Path, known: set[str]) -> dict[str, int]:
    """{imported spamlang module: first line} for one source file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        if target == "spamlang" or target.startswith("spamlang."):
            # `import spamlang.a.b` of a name that is no module (a typo) still names spamlang.a
            while target not in known and "." in target:
                target = target.rpartition(".")[0]
            found.setdefault(target, line)

    by_name = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
                by_name |= alias.name == "importlib"
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from .x import y
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            by_name |= base == "importlib"
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                add(sub if sub in known else base, node.lineno)
    if by_name:  # importlib.import_module("spamlang.x"): the string names the edge
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in known:
                add(node.value, node.lineno)
    found.pop(module, None)
    return found


def import_graph() -> dict[str, dict[str, int]]:
    """{module: {imported module: line of the (first) import}} over spamlang/**/*.py."""
    modules = _modules()
    known = set(modules)
    return {m: _imports(m, p, known) for m, p in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One shortest circle (a, b, ..., a) through each strongly connected set of nodes."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm; the graph is small enough to recurse
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                members.add(w)
                if w == v:
                    break
            if len(members) > 1:
                found.append(_shortest_circle(graph, members))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _shortest_circle(graph: dict[str, set[str]], members: set[str]) -> list[str]:
    start = min(members)
    parent = {start: None}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(graph.get(v, ())):
            if w == start:
                path = [v]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if w in members and w not in parent:
                parent[w] = v
                queue.append(w)
    raise AssertionError(f"no circle through {start}")  # impossible in a strong component


def _edges(graph):
    for src, targets in sorted(graph.items()):
        for dst, line in sorted(targets.items()):
            yield src, dst, line


def _where(src: str, line: int) -> str:
    path = _modules()[src].relative_to(PACKAGE.parent)
    return f"{path}:{line}"


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_graph_is_read(graph):
    # The parser sees top-level, in-function and by-name imports (a broken walker would pass
    # every rule below with an empty graph).
    assert len(graph) > 50
    assert "spamlang.token_files" in graph["spamlang.data"]  # top level
    assert "spamlang.train" in graph["spamlang.sample"]  # inside sample_run
    assert "spamlang.cli.sweep_cmd" in graph["spamlang.cli"]  # importlib, by name
    assert "spamlang.cli" in graph["spamlang.__main__"]


def test_every_component_has_a_layer(graph):
    missing = sorted({component(m) for m in graph} - set(RANK))
    assert not missing, f"add these to LAYERS in {__file__}: {missing}"


def test_no_import_circle_between_modules(graph):
    found = cycles({m: set(targets) for m, targets in graph.items()})
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_no_import_circle_between_components(graph):
    comps: dict[str, set[str]] = {}
    for src, dst, _ in _edges(graph):
        if component(src) != component(dst) and (src, dst) not in ALLOWED:
            comps.setdefault(component(src), set()).add(component(dst))
    found = cycles(comps)
    assert not found, "circles between components:\n" + "\n".join(" -> ".join(c) for c in found)


def test_no_import_from_a_lower_layer_to_a_higher_one(graph):
    bad = [
        f"{_where(src, line)}: {src} (layer {RANK[component(src)]}) imports {dst} "
        f"(layer {RANK[component(dst)]})"
        for src, dst, line in _edges(graph)
        if component(src) in RANK
        and component(dst) in RANK
        and RANK[component(src)] < RANK[component(dst)]
        and (src, dst) not in ALLOWED
    ]
    assert not bad, "imports from a lower layer to a higher one:\n" + "\n".join(bad)


def test_nothing_imports_cli(graph):
    # Only `python -m spamlang`'s __main__ runs the CLI.
    bad = [
        f"{_where(src, line)}: {src} imports {dst}"
        for src, dst, line in _edges(graph)
        if component(dst) == "cli" and component(src) not in ("cli", "__main__")
    ]
    assert not bad, "imports of spamlang.cli:\n" + "\n".join(bad)


def test_plots_never_imports_train(graph):
    # plots reads results from disk: drawing a figure imports no trainer (and no JAX).
    bad = [
        f"{_where(src, line)}: {src} imports {dst}"
        for src, dst, line in _edges(graph)
        if component(src) == "plots" and component(dst) == "train" and (src, dst) not in ALLOWED
    ]
    assert not bad, "plots importing train:\n" + "\n".join(bad)


def test_siblings_over_train_import_none_of_each_other(graph):
    bad = [
        f"{_where(src, line)}: {src} imports {dst}"
        for src, dst, line in _edges(graph)
        if component(src) in SIBLINGS
        and component(dst) in SIBLINGS
        and component(src) != component(dst)
    ]
    assert not bad, "siblings over train importing each other:\n" + "\n".join(bad)


def test_allowlist_is_current(graph):
    stale = [f"{src} -> {dst}" for src, dst in ALLOWED if dst not in graph.get(src, {})]
    assert not stale, f"ALLOWED lists edges that are gone; remove them: {stale}"


def test_cycles_finds_a_circle():
    circle = cycles({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()})
    assert circle == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_a_verb_module_that_fails_to_import_is_an_error(monkeypatch):
    # A renamed or broken verb module stops the CLI instead of silently dropping its verb.
    import spamlang.cli as cli

    monkeypatch.setattr(cli, "_VERB_MODULES", (*cli._VERB_MODULES, "spamlang.cli.no_such_cmd"))
    with pytest.raises(ModuleNotFoundError, match="no_such_cmd"):
        cli.build_parser()
