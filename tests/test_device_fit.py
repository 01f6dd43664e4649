"""A sweep's vmapped group fits its device: XLA's memory analysis caps the members per program.

On CPU, with the device's memory declared by SPAMLANG_DEVICE_MEMORY (tiny programs: the
memory is MiB, and the compiles take a second or two each)."""

from __future__ import annotations

import json
import re

import pytest

from spamlang.cli.sweep_cmd import main as sweep_main
from spamlang.errors import UserError
from spamlang.sweep import Sweep, fit, run_sweep, runner
from spamlang.train.config import TrainConfig

# 20 steps of 8 x 16 tokens through one layer of `tiny` (compiles are most of this file's
# time): four LRs form one group of 4.
TINY = TrainConfig(
    preset="tiny",
    model={"n_layers": 1},
    vocab_size=16,
    seq_len=16,
    batch_size=8,
    tokens=20 * 8 * 16,
    log_every=10,
    eval_sequences=16,
    checkpoint_every=0,
)
LRS = [1e-3, 3e-3, 1e-2, 3e-2]
SWEEP = Sweep("fit", TINY, {"lr": LRS})


def test_parse_bytes_units():
    assert (
        fit.parse_bytes("80GiB")
        == fit.parse_bytes("80G")
        == fit.parse_bytes("80 gib")
        == 80 * 2**30
    )
    assert fit.parse_bytes("80GB") == 80 * 10**9 and fit.parse_bytes("1.5M") == 3 * 2**19
    assert fit.parse_bytes("85899345920") == fit.parse_bytes("8.589934592e10") == 80 * 2**30
    for bad in ("eighty", "80X", "-1G", "0", "80 GiBs", "i"):
        with pytest.raises(ValueError):
            fit.parse_bytes(bad)


def test_no_cap_on_cpu_without_the_variable(monkeypatch):
    monkeypatch.delenv(fit.ENV, raising=False)
    assert fit.device_memory() is None
    monkeypatch.setenv(fit.ENV, "80GiB")
    assert fit.device_memory() == fit.DeviceMemory(80 * 2**30, fit.ENV)
    monkeypatch.setenv(fit.ENV, "lots")
    with pytest.raises(UserError, match=fit.ENV):
        fit.device_memory()


@pytest.fixture(scope="module")
def sizes():
    """Bytes of the step of 1 and 4 members (compiled, not run)."""
    return {k: fit.program_bytes(TINY, k) for k in (1, 4)}


def test_members_that_fit(sizes, monkeypatch):
    m1, m4 = sizes[1], sizes[4]
    assert 0 < m1 < m4
    assert fit.members_that_fit(TINY, 4, memory_bytes=10 * m4).members == 4
    none = fit.members_that_fit(TINY, 4, memory_bytes=m1 // 2)
    assert none.members == 0 and "even 1 member needs" in none.line("x")
    # Between: the line through 1 and 4 members picks about 2; its compiled step fits.
    compiled = []
    real = fit.program_bytes
    monkeypatch.setattr(fit, "program_bytes", lambda *a: compiled.append(a[1]) or real(*a))
    memory = _memory_for_two(sizes)
    found = fit.members_that_fit(TINY, 4, memory_bytes=memory)
    assert 1 <= found.members < 4 and found.needed[found.members] <= memory * (1 - fit.MARGIN)
    assert compiled[:2] == [4, 1] and len(compiled) <= fit.MAX_COMPILES


def _memory_for_two(sizes) -> int:
    """A device on which the linear estimate fits 2.5 members of 4."""
    m1, m4 = sizes[1], sizes[4]
    return int((m1 + 1.5 * (m4 - m1) / 3) / (1 - fit.MARGIN))


def _final_losses(out) -> dict[str, float]:
    return {
        p.parent.name: json.loads(p.read_text())["final_eval_loss"]
        for p in out.glob("*/result.json")
    }


def _spy_groups(monkeypatch) -> list[int]:
    """The member counts of the programs the sweep trains."""
    from spamlang.train import run as train_run

    sizes = []
    group, single = train_run.run_group, train_run.run_training
    monkeypatch.setattr(
        train_run,
        "run_group",
        lambda configs, *a, **kw: sizes.append(len(configs)) or group(configs, *a, **kw),
    )
    monkeypatch.setattr(
        train_run,
        "run_training",
        lambda config, *a, **kw: sizes.append(1) or single(config, *a, **kw),
    )
    return sizes


def test_sweep_splits_a_group_that_does_not_fit(sizes, tmp_path, monkeypatch, capsys):
    parts = _spy_groups(monkeypatch)
    memory = _memory_for_two(sizes)
    # Declared memory: the group of 4 is cut into programs of the members that fit.
    monkeypatch.setenv(fit.ENV, str(memory))
    run_sweep(SWEEP, tmp_path / "split", quiet=True, vmap=True)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "needs" in ln]
    assert len(lines) == 1, lines
    match = re.fullmatch(
        r"lr1e-3: group of 4 needs (\S+ \S+) > (\S+ \S+) usable \((\S+ \S+) "
        r"from SPAMLANG_DEVICE_MEMORY, 10% margin\): (\d) members? per "
        r"program \(\S+ \S+\)",
        lines[0],
    )
    assert match, lines[0]
    cap = int(match.group(4))
    assert 1 <= cap < 4 and parts == [cap] * (4 // cap) + [4 % cap] * bool(4 % cap)
    assert match.group(3) == fit.gib(memory)

    # An explicit --group-size is kept whole, with a warning (the fit found above, no compile).
    lines = []
    todo = [(f"lr{i}", TINY.replace(lr=lr)) for i, lr in enumerate(LRS)]
    memory_of = fit.DeviceMemory(memory, fit.ENV)
    assert runner._fit_parts(todo, memory_of, 4, {}, lines.append) == [todo]
    assert (
        len(lines) == 1
        and "(--group-size 4)" in lines[0]
        and f"may run out of memory; {cap} member" in lines[0]
    ), lines

    # Without the variable, on CPU: nothing is compiled to check, no line, one program of 4,
    # whose results the split programs' equal (the members are independent).
    monkeypatch.delenv(fit.ENV)
    monkeypatch.setattr(fit, "members_that_fit", lambda *a, **k: pytest.fail("compiled to fit"))
    parts.clear()
    run_sweep(SWEEP, tmp_path / "whole", quiet=True, vmap=True)
    assert parts == [4] and "needs" not in capsys.readouterr().err
    split, whole = _final_losses(tmp_path / "split"), _final_losses(tmp_path / "whole")
    assert len(split) == 4 and split.keys() == whole.keys()
    for run_id in split:
        assert split[run_id] == pytest.approx(whole[run_id], rel=1e-6)


def test_bad_variable_is_one_line_and_status_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(fit.ENV, "80 gigs")
    out = tmp_path / "bad"
    assert sweep_main(SWEEP, ["--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fit.ENV in err[0] and "80 gigs" in err[0], err
    assert not out.exists()
