"""Sweeps: expansion and run ids, shards, validation, results.csv, vmapped groups, kill + resume."""

from __future__ import annotations

import csv
import json
import math
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import spamlang.sweep as sweep_mod
from spamlang.cli import main as cli_main
from spamlang.cli.sweep_cmd import main as sweep_main
from spamlang.errors import UserError
from spamlang.sweep import (
    RESULT_COLUMNS,
    SETTING_COLUMNS,
    Sweep,
    format_number,
    gather,
    groups,
    run_sweep,
    shard_groups,
)
from spamlang.sweep.sweep_file import check_sweep_file
from spamlang.train.config import TrainConfig

REPO = Path(__file__).resolve().parents[1]
# 20 steps of 8 x 16 tokens: a couple of seconds per compiled program on a busy CPU.
TINY = TrainConfig(
    preset="tiny",
    vocab_size=16,
    seq_len=16,
    batch_size=8,
    tokens=20 * 8 * 16,
    log_every=5,
    eval_sequences=16,
    checkpoint_every=10,
    model={"n_layers": 1},  # one layer: nothing here depends on depth, and it compiles faster
)
TINY_AXES = {"vocab_size": [16, 32], "lr": [3e-3, 1e-2]}


def tiny_sweep(name: str = "tiny") -> Sweep:
    return Sweep(name, TINY, dict(TINY_AXES))


# ----- expansion, run ids, groups, shards (no training) -------------------------------------


def test_format_number_is_short_and_injective():
    cases = {
        2.5e-4: "2.5e-4",
        1e-2: "1e-2",
        5e-4: "5e-4",
        3e-3: "3e-3",
        0.1: "1e-1",
        1.0: "1e0",
        123.0: "1.23e2",
        1.25e-5: "1.25e-5",
        0.0: "0",
        4096: "4096",
    }
    for value, text in cases.items():
        assert format_number(value) == text
    many = [k * 10.0**e for k in (1, 1.5, 2, 2.5, 3, 5, 7.5) for e in range(-6, 2)]
    assert len({format_number(x) for x in many}) == len(set(many))


def test_points_are_the_cartesian_product_with_readable_ids():
    s = Sweep(
        "ids",
        TINY,
        {"vocab_size": [4096, 64], "lr": [5e-4, 2.5e-4], "tie_embeddings": [False, True]},
    )
    ids = [run_id for run_id, _ in s.points()]
    assert ids == [
        "V4096-lr5e-4-untied",
        "V4096-lr5e-4-tied",
        "V4096-lr2.5e-4-untied",
        "V4096-lr2.5e-4-tied",
        "V64-lr5e-4-untied",
        "V64-lr5e-4-tied",
        "V64-lr2.5e-4-untied",
        "V64-lr2.5e-4-tied",
    ]
    for run_id, config in s.points():
        assert isinstance(config, TrainConfig)
        assert f"V{config.vocab_size}-" in run_id and config.preset == "tiny"
    assert [p[1] for p in s.points()][3] == TINY.replace(
        vocab_size=4096, lr=2.5e-4, tie_embeddings=True
    )
    # Stable: the same sweep built again (another process would do the same) gives the same ids.
    assert [p[0] for p in Sweep("ids", TINY, dict(s.axes)).points()] == ids


def test_ids_for_heads_dotted_axes_and_other_fields():
    s = Sweep(
        "misc",
        TINY.replace(language="cycle"),
        {
            "head": ["softmax", "lowrank:8", "mos:2"],
            "model.d_model": [16],
            "param.k": [2],
            "seed": [0, 1],
            "tokens": ["2K"],
            "residual": [False],
        },
    )
    ids = [run_id for run_id, _ in s.points()]
    assert ids[0] == "head-softmax-D16-k2-seed0-tok2K-noresidual"
    assert "head-lowrank8-D16-k2-seed1-tok2K-noresidual" in ids
    assert all(":" not in i and "/" not in i for i in ids) and len(set(ids)) == len(ids)
    config = dict(s.points())["head-mos2-D16-k2-seed1-tok2K-noresidual"]
    assert config.model == {**TINY.model, "d_model": 16} and config.language_params == {"k": 2}
    assert config.tokens == 2000 and config.seed == 1 and config.head == "mos:2"
    # An int for a float field is the same point (and id) as the float.
    assert Sweep("f", TINY, {"lr": [1]}).points() == Sweep("f", TINY, {"lr": [1.0]}).points()


def test_groups_share_everything_but_lr_and_seed_and_shards_partition_them():
    s = Sweep(
        "g",
        TINY,
        {
            "vocab_size": [16, 32, 64],
            "lr": [1e-3, 3e-3, 1e-2],
            "tie_embeddings": [True, False],
            "seed": [0, 1],
        },
    )
    all_ids = [run_id for run_id, _ in s.points()]
    gs = groups(s)
    assert len(gs) == 6 and all(len(g) == 6 for g in gs)
    for g in gs:
        base = g[0][1]
        assert all(c.replace(lr=base.lr, seed=base.seed) == base for _, c in g)
    assert sorted(r for g in groups(s, group_size=4) for r, _ in g) == sorted(all_ids)
    assert max(len(g) for g in groups(s, group_size=4)) == 4
    group_of = {run_id: k for k, g in enumerate(gs) for run_id, _ in g}
    for n in (1, 2, 4, 5, 7):
        seen = []
        for i in range(n):
            shard = shard_groups(s, (i, n))
            assert shard == shard_groups(s, (i, n))  # deterministic
            seen += [run_id for g in shard for run_id, _ in g]
            for g in shard:  # a group is never split: all its members are in this shard
                assert sorted(r for r, _ in g) == sorted(
                    r for r in all_ids if group_of[r] == group_of[g[0][0]]
                )
        assert sorted(seen) == sorted(all_ids) and len(seen) == len(all_ids)


@pytest.mark.parametrize(
    "axes, message",
    [
        ({"vocab": [16]}, "unknown axis 'vocab' (did you mean 'vocab_size'?)"),
        ({"tied": [True]}, "unknown axis 'tied' (did you mean 'tie_embeddings'?)"),
        ({"d_model": [32]}, "unknown axis 'd_model' (did you mean the width family of presets"),
        ({"n_layers": [4]}, "(did you mean 'model.n_layers'?)"),
        ({"lrr": [1e-3]}, "unknown axis 'lrr' (did you mean 'lr'?)"),
        ({"model.width": [16]}, "unknown axis 'model.width'"),
        ({"model.vocab_size": [16]}, "use the axis 'vocab_size'"),
        ({"lr": []}, "axis 'lr' is empty"),
        ({"lr": 1e-3}, "must be a list"),
        ({"vocab_size": ["big"]}, "sweep 'bad': vocab_size must be an integer, got 'big'"),
        ({"vocab_size": [16.0]}, "sweep 'bad': vocab_size must be an integer, got 16.0"),
        ({"vocab_size": [True]}, "sweep 'bad': vocab_size must be an integer, got True"),
        ({"tie_embeddings": [1]}, "sweep 'bad': tie_embeddings must be true or false, got 1"),
        ({"lr": ["fast"]}, "sweep 'bad': lr must be a number, got 'fast'"),
        ({"lr": [1e-3, 0.001]}, "twice"),
        ({"vocab_size": [16, 1]}, "run V1:"),  # every point is built: the bad one is named
        ({"head": ["lowrank:4"], "tie_embeddings": [True]}, "run head-lowrank4-tied"),
        # A member field (checked once per value, not per point) is still checked on every point.
        ({"vocab_size": [16, 32], "lr": [1e-3, -1.0]}, "run V16-lr-1e0: lr must be"),
    ],
)
def test_bad_axes_are_user_errors(axes, message):
    with pytest.raises(UserError, match=re.escape(message)):
        Sweep("bad", TINY, axes)


def test_an_unknown_axis_in_a_sweep_file_lists_every_known_axis_whole(tmp_path, capsys):
    """The list of known axes was cut at 300 characters, before the model fields."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"name": "s", "base": {}, "axes": {"vocab": [64]}}))
    assert cli_main(["sweep", str(path), "--dry-run", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "..." not in err
    assert "model.d_model" in err and "model.n_layers" in err and "param.<" in err


HUGE_SWEEP = """from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig
SWEEP = Sweep("huge", TrainConfig(preset="tiny", vocab_size=16, seq_len=16, batch_size=8,
                                  tokens=2560),
              {"lr": [1e-4 * (1 + i) for i in range(1000)], "seed": list(range(1000))})
"""


def test_a_huge_grid_is_refused_at_once_naming_the_limit(tmp_path):
    """1,000 LRs x 1,000 seeds printed nothing for a minute; now one line, before expanding."""
    path = tmp_path / "huge.py"
    path.write_text(HUGE_SWEEP)
    argv = [
        sys.executable,
        "-m",
        "spamlang",
        "sweep",
        str(path),
        "--dry-run",
        "--out",
        str(tmp_path / "out"),
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1
    assert (
        "sweep 'huge' has 1,000,000 points (1,000 lr x 1,000 seed), more than the limit "
        "of 100,000; pass --max-points 1000000"
    ) in proc.stderr
    assert not (tmp_path / "out").exists()


BAD_PRESET_SCRIPT = """
from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SWEEP = Sweep("bad", TrainConfig(preset="tiny-w120", vocab_size=16, seq_len=16, batch_size=8,
                                 tokens=2560), {"lr": [1e-3]})
raise SystemExit(main(SWEEP))
"""


def test_a_sweep_script_with_a_bad_setting_is_one_line_and_status_2(tmp_path):
    """The script builds its Sweep before `main` guards anything: a width the preset family
    refuses was a traceback with status 1; it is the one line and status 2 of any bad input."""
    path = tmp_path / "bad.py"
    path.write_text(BAD_PRESET_SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(path), "--dry-run"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "bad.py: error: preset 'tiny-w120': 15 heads cannot keep tiny's 2 query heads per KV "
        "head; tiny-w<D> takes D = 16, 32, 48, ... (multiples of 16)"
    ]


def test_max_points_flag_sets_the_limit(tmp_path, capsys):
    s = Sweep("twelve", TINY, {"vocab_size": [16, 32, 64], "lr": [1e-3, 3e-3, 1e-2, 3e-2]})
    out = str(tmp_path / "o")
    assert sweep_main(s, ["--out", out, "--dry-run", "--max-points", "11"]) == 2
    err = capsys.readouterr().err
    assert "has 12 points (3 vocab_size x 4 lr), more than the limit of 11" in err
    assert sweep_main(s, ["--out", out, "--dry-run", "--max-points", "12"]) == 0
    assert "12 runs in 3 group(s)" in capsys.readouterr().out
    with pytest.raises(UserError, match="limit of 5"):
        run_sweep(s, tmp_path / "o", max_points=5)


def test_a_large_grid_says_it_is_expanding_and_builds_every_point(capsys):
    """20,000 points (the progress threshold), built by sharing each group's checked config
    (the speed is benchmarks/bench_sweep_expand.py's): every point still equals a config built
    whole."""
    lrs = [1e-4 * (1 + i) for i in range(800)]
    s = Sweep("wide", TINY, {"vocab_size": [16, 32], "lr": lrs, "seed": list(range(25))})
    points = s.points()
    assert "sweep wide: expanding 40,000 points" in capsys.readouterr().err
    assert len(points) == 40_000 and len(groups(s)) == 2
    for run_id, config in points[::3999]:
        v, lr, seed = run_id.split("-lr")[0], *run_id.split("-lr")[1].split("-seed")
        assert config == TINY.replace(vocab_size=int(v[1:]), lr=float(lr), seed=int(seed))


def test_sweep_json_refuses_another_sweep_but_lets_axes_grow(tmp_path):
    check_sweep_file(Sweep("a", TINY, {"lr": [1e-3]}), tmp_path)
    stored = json.loads((tmp_path / "sweep.json").read_text())
    assert stored == {
        "name": "a",
        "base": TINY.to_json(),
        "axes": {"lr": [1e-3]},
        "axis_order": ["lr"],
    }
    check_sweep_file(Sweep("renamed", TINY, {"lr": [1e-3, 3e-3]}), tmp_path)  # grows: fine
    assert json.loads((tmp_path / "sweep.json").read_text())["axes"] == {"lr": [1e-3, 3e-3]}
    with pytest.raises(UserError, match="different base config .*seq_len"):
        check_sweep_file(Sweep("a", TINY.replace(seq_len=32), {"lr": [1e-3]}), tmp_path)
    with pytest.raises(UserError, match="axes may only grow"):
        check_sweep_file(Sweep("a", TINY, {"lr": [3e-3]}), tmp_path)
    # A new axis must list the value the existing runs have (seed 0: tests/test_sweep_grow.py).
    with pytest.raises(UserError, match="axes"):
        check_sweep_file(Sweep("a", TINY, {"lr": [1e-3, 3e-3], "seed": [1]}), tmp_path)


# ----- results.csv from hand-made run directories -------------------------------------------


def _fake_run(root: Path, run_id: str, config: TrainConfig, **result) -> None:
    d = root / run_id
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps(config.to_json()))
    full = {k: 1.5 for k in RESULT_COLUMNS}
    full.update(diverged=False, diverged_step=None, steps=20, tokens=2560)
    full.update(result)
    (d / "result.json").write_text(json.dumps(full))


def test_results_csv_has_the_contract_columns_and_round_trips(tmp_path):
    s = Sweep(
        "fake",
        TINY,
        {"vocab_size": [16, 32], "tie_embeddings": [True, False], "model.n_layers": [3]},
    )
    check_sweep_file(s, tmp_path)
    points = dict(s.points())
    _fake_run(
        tmp_path,
        "V32-untied-layers3",
        points["V32-untied-layers3"],
        diverged=True,
        diverged_step=7,
        final_eval_loss=float("nan"),
    )
    _fake_run(tmp_path, "V16-tied-layers3", points["V16-tied-layers3"], final_eval_loss=0.25)
    (tmp_path / "V16-untied-layers3").mkdir()  # unfinished: no result.json, no row
    rows = sweep_mod.write_results(tmp_path)
    assert [r["run_id"] for r in rows] == ["V16-tied-layers3", "V32-untied-layers3"]
    assert gather(tmp_path) == rows
    with open(tmp_path / "results.csv", newline="") as f:
        reader = csv.DictReader(f)
        table = list(reader)
    # model.n_layers is the standard n_layers column, holding the override
    assert reader.fieldnames == [*SETTING_COLUMNS, *RESULT_COLUMNS]
    first, second = table
    assert first["run_id"] == "V16-tied-layers3" and first["tie_embeddings"] == "True"
    assert first["d_model"] == "16" and first["language"] == "spam" and first["preset"] == "tiny"
    assert first["n_layers"] == "3" and first["head"] == "softmax" and first["seed"] == "0"
    assert float(first["lr"]) == TINY.lr and float(first["final_eval_loss"]) == 0.25
    assert first["diverged"] == "False" and first["diverged_step"] == ""
    assert second["tie_embeddings"] == "False" and second["diverged"] == "True"
    assert second["diverged_step"] == "7" and second["final_eval_loss"] == "nan"
    try:
        import pandas as pd
    except ImportError:
        return
    frame = pd.read_csv(tmp_path / "results.csv")
    assert list(frame.columns) == reader.fieldnames and frame["diverged"].dtype == bool
    assert frame["diverged_step"].isna().tolist() == [True, False]


# ----- CLI: malformed sweep files fail before any run ----------------------------------------

BAD_FILES = {
    "syntax.py": "SWEEP = (\n",
    "nosweep.py": "X = 1\n",
    "notasweep.py": "SWEEP = {'name': 'x'}\n",
    "axis.py": "from spamlang.sweep import Sweep\nfrom spamlang.train.config import TrainConfig\n"
    "SWEEP = Sweep('x', TrainConfig(), {'nope': [1]})\n",
    "bad.json": '{"name": "x", "axes": {',
    "types.json": '{"name": "x", "base": {"seq_len": "long"}, "axes": {"lr": [0.001]}}',
    "empty.json": '{"name": "x", "axes": {"lr": []}}',
    "wrongtype.json": '{"name": "x", "axes": {"vocab_size": [0.5]}}',
    "keys.json": '{"name": "x", "axis": {"lr": [0.001]}}',
    "sweep.txt": "hello",
    # A file that exits while being loaded ran nothing; status 0 would read as success.
    "exit0.py": "import sys\nsys.exit(0)\n",
    "exit_after.py": "import sys\nfrom spamlang.sweep import Sweep\n"
    "from spamlang.train.config import TrainConfig\n"
    "SWEEP = Sweep('x', TrainConfig(), {'lr': [1e-3]})\nsys.exit()\n",
}


@pytest.mark.parametrize("filename", sorted(BAD_FILES))
def test_malformed_sweep_files_exit_2_before_any_run(tmp_path, capsys, filename):
    path = tmp_path / filename
    path.write_text(BAD_FILES[filename])
    out = tmp_path / "out"
    assert cli_main(["sweep", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("spamlang sweep: error:") and len(err.splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("code", ["0", "None", "'bye'"])
def test_a_sweep_file_that_exits_is_an_error_even_in_a_dry_run(tmp_path, capsys, code):
    path = tmp_path / "exits.py"
    path.write_text(f"import sys\nsys.exit({code})\n")
    assert cli_main(["sweep", str(path), "--dry-run", "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1
    assert f"{path} called sys.exit({code}) while being loaded" in captured.err


def test_valid_sweep_files_load_from_json_and_python(tmp_path):
    (tmp_path / "s.json").write_text(
        json.dumps(
            {
                "name": "j",
                "base": {"preset": "tiny", "seq_len": 16},
                "axes": {"vocab_size": [16, 32]},
            }
        )
    )
    sweep, plots, _ = sweep_mod.load_sweep_file(tmp_path / "s.json")
    assert sweep == Sweep("j", TrainConfig(preset="tiny", seq_len=16), {"vocab_size": [16, 32]})
    assert plots is False
    (tmp_path / "s.py").write_text(
        "from spamlang.sweep import Sweep\n"
        "from spamlang.train.config import TrainConfig\n"
        "PLOTS = True\nSWEEP = Sweep('p', TrainConfig(), {'lr': [1e-3]})\n"
    )
    sweep, plots, _ = sweep_mod.load_sweep_file(tmp_path / "s.py")
    assert [r for r, _ in sweep.points()] == ["lr1e-3"] and plots is True
    for script in ("cpu_demo", "paper_fig5", "heads", "languages"):  # the shipped sweeps load
        sweep, _, _ = sweep_mod.load_sweep_file(REPO / "sweeps" / f"{script}.py")
        assert sweep.name == script and len(sweep.points()) >= 10


def test_script_main_reports_user_errors_and_interrupts(tmp_path, capsys, monkeypatch):
    s = tiny_sweep()
    assert sweep_main(s, ["--out", str(tmp_path / "o"), "--shard", "3/2"]) == 2
    assert "0 <= i < n" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("spamlang.sweep.runner.run_sweep", interrupted)
    assert sweep_main(s, ["--out", str(tmp_path / "o")]) == 130


def test_dry_run_lists_points_and_budget(tmp_path, capsys):
    assert (
        sweep_main(tiny_sweep(), ["--out", str(tmp_path / "o"), "--dry-run", "--shard", "1/2"]) == 0
    )
    out = capsys.readouterr().out
    assert "V32-lr3e-3" in out and "V32-lr1e-2" in out and "V16-lr3e-3" not in out
    assert "2 runs in 1 group(s)" in out and f"{2 * 20 * 8 * 16:,} training tokens" in out
    assert not (tmp_path / "o").exists()


def test_dry_run_reports_the_clash_the_real_run_refuses(tmp_path, capsys):
    out = tmp_path / "o"
    out.mkdir()
    check_sweep_file(Sweep("tiny", TINY.replace(seq_len=32), dict(TINY_AXES)), out)
    with pytest.raises(UserError) as real:
        check_sweep_file(tiny_sweep(), out)
    assert sweep_main(tiny_sweep(), ["--out", str(out), "--dry-run"]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"sweep tiny: error: {real.value}\n" and "seq_len" in captured.err
    assert captured.out == ""
    # A directory this sweep may go on in (its axes grow) is listed, and nothing is written.
    same = tmp_path / "same"
    same.mkdir()
    check_sweep_file(tiny_sweep(), same)
    stored = (same / "sweep.json").read_text()
    grown = Sweep("tiny", TINY, {"vocab_size": [16, 32, 64], "lr": [3e-3, 1e-2]})
    assert sweep_main(grown, ["--out", str(same), "--dry-run"]) == 0
    assert "6 runs" in capsys.readouterr().out and (same / "sweep.json").read_text() == stored


# ----- training through run_sweep: SIGKILL + resume, the vmapped group, plots ------------------

GROUP_SCRIPT = """
from spamlang.cli.sweep_cmd import main
from spamlang.sweep import Sweep
from spamlang.train.config import TrainConfig

SWEEP = Sweep("killme", TrainConfig.from_json({base}), {axes})

if __name__ == "__main__":
    raise SystemExit(main(SWEEP))
"""


def _wait_for(predicate, proc, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if proc.poll() is not None:
            raise AssertionError(f"sweep exited early: {proc.stderr.read()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("timed out waiting for the sweep to checkpoint")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def killed_and_resumed(tmp_path_factory):
    """A 2-LR group run as a script, SIGKILLed after its first checkpoint, then rerun in-process.

    Returns (sweep dir, the run_group calls the rerun made, the calls of run_training).
    """
    root = tmp_path_factory.mktemp("killed")
    script = root / "killme.py"
    script.write_text(
        GROUP_SCRIPT.format(base=repr(TINY.to_json()), axes=repr({"lr": [3e-3, 1e-2]}))
    )
    out = root / "out"
    proc = subprocess.Popen(
        [sys.executable, str(script), "--out", str(out), "--quiet", "--vmap"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
    )
    ckpt = out / "lr1e-2" / "checkpoints" / "10" / "commit_success.txt"
    _wait_for(ckpt.is_file, proc, timeout_s=240)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # Killed mid-run: checkpointed at step 10 of 20, nothing finished, no table yet.
    assert not list(out.glob("*/result.json")) and not (out / "results.csv").exists()

    from spamlang.train import run as train_run

    calls = {"group": [], "single": []}
    real_group, real_single = train_run.run_group, train_run.run_training

    def spy_group(configs, out_dirs, **kw):
        calls["group"].append([Path(d).name for d in out_dirs])
        return real_group(configs, out_dirs, **kw)

    def spy_single(config, out_dir, **kw):
        calls["single"].append(Path(out_dir).name)
        return real_single(config, out_dir, **kw)

    patch = pytest.MonkeyPatch()
    patch.setattr(train_run, "run_group", spy_group)
    patch.setattr(train_run, "run_training", spy_single)
    try:
        assert cli_main(["sweep", str(script), "--out", str(out), "--quiet", "--vmap"]) == 0
    finally:
        patch.undo()
    return out, calls


def test_sigkilled_sweep_resumes_with_every_run_once(killed_and_resumed):
    out, calls = killed_and_resumed
    # Both members resumed together in one vmapped program, nothing ran on its own.
    assert calls == {"group": [["lr3e-3", "lr1e-2"]], "single": []}
    with open(out / "results.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert [row["run_id"] for row in table] == ["lr1e-2", "lr3e-3"]
    for row in table:
        assert row["steps"] == "20" and row["diverged"] == "False" and row["vocab_size"] == "16"
        assert 0 < float(row["final_eval_loss"]) < math.log(16)  # learned something
    # Resumed runs log every step exactly once (the resume cut metrics.jsonl back to step 10).
    steps = [
        json.loads(line)["step"]
        for line in (out / "lr1e-2" / "metrics.jsonl").open()
        if json.loads(line)["kind"] == "train"
    ]
    assert steps == [5, 10, 15, 20]
    # symbols.csv.gz: each run's symbols binned by their history at its one (final) evaluation,
    # each of the 16 symbols in one bin, and the bins' mean the run's exact eval loss.
    import gzip

    with gzip.open(out / "symbols.csv.gz", "rt", newline="") as f:
        bins = list(csv.DictReader(f))
    for row in table:
        mine = [b for b in bins if b["run_id"] == row["run_id"]]
        assert {b["step"] for b in mine} == {"20"} and all(b["max_gap"] for b in mine)
        assert sum(int(b["symbols"]) for b in mine) == 16
        mean = sum(float(b["loss_mean"]) * int(b["symbols"]) for b in mine) / 16
        assert mean == pytest.approx(float(row["final_eval_loss"]), rel=1e-4)
    # Running it again trains nothing and leaves the same table.
    before = (out / "results.csv").read_text()
    rows = run_sweep(Sweep("killme", TINY, {"lr": [3e-3, 1e-2]}), out, quiet=True)
    assert [r["run_id"] for r in rows] == ["lr1e-2", "lr3e-3"]
    assert (out / "results.csv").read_text() == before


def test_vmapped_group_matches_the_sequential_run(killed_and_resumed, tmp_path, monkeypatch):
    """--no-vmap trains a group's members one by one; each equals its member of the vmapped
    group that --vmap trained."""
    out, _ = killed_and_resumed
    from spamlang.train import run as train_run

    real_group = train_run.run_group

    def no_group(configs, out_dirs, **kwargs):  # run_training is run_group of one
        if len(configs) > 1:
            raise AssertionError("vmap=False must not vmap")
        return real_group(configs, out_dirs, **kwargs)

    monkeypatch.setattr(train_run, "run_group", no_group)
    rows = run_sweep(Sweep("seq", TINY, {"lr": [3e-3, 1e-2]}), tmp_path, quiet=True, vmap=False)
    grouped = {r["run_id"]: r for r in gather(out)}
    assert sorted(r["run_id"] for r in rows) == sorted(grouped) == ["lr1e-2", "lr3e-3"]
    for sequential in rows:
        for key in ("final_train_loss", "final_eval_loss", "eval_accuracy", "repetition_accuracy"):
            assert sequential[key] == pytest.approx(
                grouped[sequential["run_id"]][key], rel=1e-5, abs=1e-7
            ), key


def test_plots_flag_writes_figures_for_a_finished_sweep(killed_and_resumed, tmp_path):
    out, _ = killed_and_resumed
    sweep = Sweep("killme", TINY, {"lr": [3e-3, 1e-2]})
    # A script's SAMPLES add Table 1's analogue of the cell's best-LR run.
    assert (
        sweep_main(
            sweep,
            ["--out", str(out), "--quiet", "--plots", "--figures", str(tmp_path / "figs")],
            samples=({"vocab_size": 16, "tie_embeddings": False},),
        )
        == 0
    )
    for name in ("heatmap.png", "curves.png", "samples_V16_untied.png"):
        assert (tmp_path / "figs" / name).stat().st_size > 1000


@pytest.mark.parametrize("seq_len, grouped", [(16, True), (64, False)])
def test_auto_vmap_on_cpu_only_for_small_steps(seq_len, grouped, tmp_path, monkeypatch):
    """auto (vmap=None) on CPU: a group of 8 x 16 = 128-token steps trains as one vmapped
    program, one of 8 x 64 = 512-token steps member by member (CPU_VMAP_TOKENS = 256)."""
    from spamlang.train import run as train_run

    calls = []

    def fake(configs, out_dirs, **kw):
        calls.append(len(configs))
        results = []
        for config, out_dir in zip(configs, out_dirs):
            out_dir.mkdir(parents=True, exist_ok=True)
            (out_dir / "config.json").write_text(json.dumps(config.to_json()))
            (out_dir / "result.json").write_text(json.dumps({"final_eval_loss": 1.0}))
            results.append({"final_eval_loss": 1.0})
        return results

    monkeypatch.setattr(train_run, "run_group", fake)
    monkeypatch.setattr(train_run, "run_training", lambda c, d, **kw: fake([c], [d])[0])
    base = TINY.replace(seq_len=seq_len, tokens=20 * 8 * seq_len)
    run_sweep(Sweep("auto", base, {"lr": [3e-3, 1e-2, 3e-2]}), tmp_path, quiet=True)
    assert calls == ([3] if grouped else [1, 1, 1])


def test_gather_fills_the_coverage_columns_of_older_runs(tmp_path):
    """A run written before updates_per_symbol and the return-time columns existed gets them
    from its old sequences_per_symbol and its config.json."""
    run = tmp_path / "old"
    run.mkdir()
    config = TINY.replace(vocab_size=32, b2=0.99)
    (run / "config.json").write_text(json.dumps(config.to_json()))
    (run / "result.json").write_text(
        json.dumps({"final_eval_loss": 1.0, "sequences_per_symbol": 5.0})
    )
    [row] = gather(tmp_path)
    assert row["updates_per_symbol"] == 5.0
    assert row["symbol_return_steps"] == 32 / 8
    assert row["adam_memory_steps"] == pytest.approx(100.0)
