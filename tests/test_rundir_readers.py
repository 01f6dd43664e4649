"""One reader of run directories: outside spamlang/rundir/, no module that names a run file
(config.json, metrics.jsonl, result.json, track.jsonl, diagnostics.json, by its constant in
spamlang.rundir.schema or its literal name) parses JSON itself (`json.load`, `json.loads`, a
`read_json` of its own); it reads through `spamlang.rundir.reading`. Read from the source with
`ast`, like tests/test_layers.py."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "spamlang"
RUN_FILES = {
    "CONFIG",
    "METRICS",
    "RESULT",
    "TRACK",
    "DIAGNOSTICS",
    "config.json",
    "metrics.jsonl",
    "result.json",
    "track.jsonl",
    "diagnostics.json",
}
PARSERS = {"load", "loads", "read_json", "_read_json"}
# Modules outside this session's edits, or whose config.json is no run's, each with its
# reason; an entry that matches nothing fails `test_allowlist_is_current`.
ALLOWED = {
    "model/hf_checkpoint.py": "a Hugging Face checkpoint's config.json, not a run's",
}


def _offending_lines(tree: ast.AST) -> list[int]:
    """Lines of the calls that parse JSON (json.load(s), a read_json not imported from
    spamlang.rundir) in functions that name a run file (its spamlang.rundir.schema constant or its
    file name)."""
    from_rundir = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spamlang.rundir")
        for alias in node.names
    }
    lines = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        nodes = list(ast.walk(func))
        if not any(
            isinstance(n, ast.Name)
            and n.id in RUN_FILES
            or isinstance(n, ast.Constant)
            and n.value in RUN_FILES
            for n in nodes
        ):
            continue
        for n in nodes:
            f = getattr(n, "func", None) if isinstance(n, ast.Call) else None
            if (
                isinstance(f, ast.Attribute)
                and f.attr in PARSERS
                and isinstance(f.value, ast.Name)
                and f.value.id in ("json", "fileio")
            ) or (isinstance(f, ast.Name) and f.id in PARSERS and f.id not in from_rundir):
                lines.append(n.lineno)
    return sorted(set(lines))


def _scan() -> dict[str, list[int]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if not name.startswith("rundir/"):
            lines = _offending_lines(ast.parse(path.read_text(encoding="utf-8"), name))
            if lines:
                found[name] = lines
    return found


def test_only_rundir_parses_run_files():
    offenders = {k: v for k, v in _scan().items() if k not in ALLOWED}
    assert offenders == {}, "parse run files through spamlang.rundir.reading"


def test_allowlist_is_current():
    assert set(ALLOWED) <= set(_scan())
