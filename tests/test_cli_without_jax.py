"""JAX only where it computes: every verb's --help, every plot and `import spamlang.results`
work in a process where `import jax` fails."""

import json
import subprocess
import sys

from test_plot_bottleneck_lm import write_lm
from test_plot_recency import write_run as write_recency_run
from test_plot_track import make_run as make_track_run
from test_plots import make_sweep

from spamlang.cli import _VERB_MODULES, build_parser

# Runs `main(argv)` for each argv of argv[1] (JSON) with JAX unimportable; prints
# [[exit status, stdout], ...] and whether anything imported JAX after all.
CHILD = """
import contextlib, io, json, sys

class NoJax:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("jax", "jaxlib"):
            raise ImportError(f"JAX is unimportable in this test ({name})")

sys.meta_path.insert(0, NoJax())
import spamlang.results
from spamlang.cli import main

out = []
for argv in json.loads(sys.argv[1]):
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        try:
            status = main(argv)
        except SystemExit as e:
            status = e.code
    out.append([status, stdout.getvalue()])
print(json.dumps([out, sorted(m for m in sys.modules if m.startswith(("jax", "jaxlib")))]))
"""


def _commands() -> list[list[str]]:
    """`--help` of the program, of every verb and of every kind under a verb."""
    parser = build_parser()
    verbs = parser._subparsers._group_actions[0].choices
    commands = [["--help"]]
    for verb, sub in verbs.items():
        commands.append([verb, "--help"])
        for action in sub._actions:
            if hasattr(action, "choices") and isinstance(action.choices, dict):
                commands += [[verb, kind, "--help"] for kind in action.choices]
    return commands


def test_help_plots_and_results_import_no_jax(tmp_path):
    sweep = make_sweep(tmp_path / "sweep")
    for name in ("V64-lr0.001-tied", "V1024-lr0.001-tied"):  # per-symbol curves for `plot symbols`
        result = json.loads((sweep / name / "result.json").read_text())
        result["symbol_curve"] = {"exposure": [1, 4, 16], "loss_median": [3.0, 1.0, 0.1]}
        (sweep / name / "result.json").write_text(json.dumps(result))
    lm = write_lm(tmp_path / "lm" / "smol", "llama", "SmolLM2-135M", 576, 49152, 0.1)
    track = make_track_run(tmp_path / "track", "run", [3, 5], tied=False)
    write_recency_run(tmp_path / "recency", "a")
    out = str(tmp_path / "figure.png")
    plots = [
        ["plot", "heatmap", str(sweep), "-o", out],
        ["plot", "curves", str(sweep), "-o", out],
        ["plot", "lines", str(sweep), "-o", out, "--x", "lr", "--y", "final_eval_loss"],
        ["plot", "bottleneck", str(lm), "-o", out],
        ["plot", "track", str(track), "-o", out],
        ["plot", "symbols", str(sweep), "-o", out],
        ["plot", "recency", str(tmp_path / "recency"), "-o", out],
    ]
    commands = _commands()
    assert len(commands) > len(_VERB_MODULES) + 10  # every verb, and the kinds of plot and law
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(commands + plots)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    results, jax_modules = json.loads(proc.stdout.splitlines()[-1])
    assert jax_modules == []
    for argv, (status, stdout) in zip(commands + plots, results):
        assert status == 0, (argv, proc.stderr)
        assert (
            stdout.startswith("usage: spamlang")
            if argv[-1] == "--help"
            else f"wrote {out}" in stdout
        ), (argv, stdout)
