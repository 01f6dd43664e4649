"""benchmarks/accelerator_check.py at toy sizes on the CPU: every part runs, none errors.

The real check is for one shot on a borrowed GPU, so the same code path is exercised here
(`--cpu-smoke` changes only sizes) to keep a broken part from costing that shot.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "accelerator_check.py"
PARTS = set("abcde")


def run_script(*args: str, env_extra: dict | None = None, timeout: int = 240):
    env = {**os.environ, "JAX_PLATFORMS": "cpu", **(env_extra or {})}
    env.pop("OUT", None)  # the default --out must not write into a caller's $OUT
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=timeout,
    )


def table_rows(stdout: str) -> list[list[str]]:
    """Cells of the markdown table's body rows (header and separator dropped)."""
    lines = [line for line in stdout.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


# Preset peaks skip spamlang.perf's matmul measurement (seconds of a shared CPU); the
# script's own code paths are the same either way.
PEAKS = {"SPAMLANG_PEAK_FLOPS": "1e11", "SPAMLANG_PEAK_FLOPS_BF16": "1e11"}


def test_cpu_smoke_runs_every_part(tmp_path):
    out = tmp_path / "x.json"
    proc = run_script("--cpu-smoke", "--out", str(out), env_extra=PEAKS)
    assert proc.returncode == 0, proc.stderr[-4000:]
    rows = table_rows(proc.stdout)
    assert {row[0] for row in rows} == PARTS, proc.stdout
    assert not [row for row in rows if "ERROR" in row[2] or "SKIPPED" in row[2]], proc.stdout
    first_a = next(row for row in rows if row[0] == "a")
    assert "CPU compared with CPU" in first_a[1]
    assert first_a[2].startswith("PASS"), first_a

    data = json.loads(out.read_text())
    assert data["complete"] and set(data["parts"]) == PARTS
    assert data["header"]["peak_flops"]["bfloat16"]["source"] == "env SPAMLANG_PEAK_FLOPS_BF16"
    for part in "bce":  # the parts that time steps
        for row in data["parts"][part]:
            speeds = [v for k, v in row.items() if k.endswith("tokens_per_s")]
            assert speeds and all(isinstance(v, float) and v > 0 for v in speeds), row
    assert data["parts"]["a"][0]["max_rel_diff"] <= 1e-4
    assert all(row["result"] == "fits" for row in data["parts"]["d"]), data["parts"]["d"]
    final_losses = data["parts"]["e"][0]["final_losses"]
    assert len(final_losses) == 1 and all(isinstance(x, float) for x in final_losses)


def test_spent_budget_skips_parts(tmp_path, monkeypatch, capsys):
    # In this process: with the budget spent no part starts, so no JAX program is built.
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")  # main() sets both; restored after the test
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    spec = importlib.util.spec_from_file_location("accelerator_check", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "accelerator_check", script)  # its dataclasses look it up
    spec.loader.exec_module(script)
    out = tmp_path / "x.json"
    args = ["--cpu-smoke", "--parts", "a,e", "--budget-s", "0", "--out", str(out)]
    assert script.main(args) == 0
    rows = table_rows(capsys.readouterr().out)
    assert {row[0] for row in rows} == {"a", "e"}
    assert all(row[2] == "SKIPPED (budget)" for row in rows), rows
    assert set(json.loads(out.read_text())["parts"]) == {"a", "e"}
