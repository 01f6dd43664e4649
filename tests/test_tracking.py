"""Experiment trackers (spamlang.tracking): TensorBoard and W&B (offline) runs read back from
disk with the trackers' own formats, exact resumes, unchanged numbers, and the failure policy."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from spamlang import tracking
from spamlang.cli import main
from spamlang.errors import UserError
from spamlang.train import Interrupted, TrainConfig, run_training

# 20 steps, a train row every 5, eval and checkpoint every 10.
CFG = TrainConfig(
    preset="tiny",
    vocab_size=64,
    seq_len=2,
    batch_size=4,
    tokens=4 * 2 * 20,
    log_every=5,
    eval_every=10,
    checkpoint_every=10,
    eval_sequences=8,
    model={"n_layers": 1},  # one layer: nothing here depends on depth, and it compiles faster
)
TIMING = ("tokens_per_s", "wall_seconds", "mfu")


def metrics_steps(run_dir: Path, kind: str) -> list[int]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [r["step"] for r in rows if r["kind"] == kind]


def without_timing(run_dir: Path) -> dict:
    result = json.loads((run_dir / "result.json").read_text())
    return {k: v for k, v in result.items() if k not in TIMING}


def train_interrupted_then_resumed(spec, run_dir: Path) -> None:
    with tracking.session(spec), pytest.raises(Interrupted):
        run_training(CFG, run_dir, quiet=True, stop_after_step=12)
    with tracking.session(spec):
        run_training(CFG, run_dir, quiet=True)


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("plain") / "run"
    run_training(CFG, out, quiet=True)
    return out


def test_tensorboard_resumed_run_reads_back_once_per_step_and_changes_no_number(plain, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    run_dir = tmp_path / "run"
    train_interrupted_then_resumed(tracking.TrackerSpec("tensorboard", True, tmp_path), run_dir)
    events = EventAccumulator(str(tmp_path / "tensorboard" / "run"))
    events.Reload()
    # Every step once, as in metrics.jsonl, though the first process wrote past the checkpoint.
    assert [e.step for e in events.Scalars("train/loss")] == metrics_steps(run_dir, "train")
    assert [e.step for e in events.Scalars("eval/eval_loss")] == metrics_steps(run_dir, "eval")
    result = json.loads((run_dir / "result.json").read_text())
    assert events.Scalars("result/final_eval_loss")[-1].value == pytest.approx(
        result["final_eval_loss"]
    )
    content = events.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    hparams = plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info.hparams
    assert hparams["vocab_size"].number_value == CFG.vocab_size
    assert hparams["preset"].string_value == CFG.preset
    assert without_timing(run_dir) == without_timing(plain)  # bitwise: JSON floats round-trip


def wandb_records(path: Path):
    """The records of a W&B run file (.wandb: a 7-byte header, then LevelDB-log blocks of
    32 KiB, each record a 7-byte header and a chunk of a serialized Record)."""
    from wandb.proto import wandb_internal_pb2

    data, pos, block, chunks = path.read_bytes(), 7, 32768, []
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        if block - pos % block < 7:
            pos += block - pos % block  # the block's zero-filled tail
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunks.append(data[pos + 7 : pos + 7 + length])
        pos += 7 + length
        if kind in (1, 4):  # a whole record, or its last chunk
            yield wandb_internal_pb2.Record.FromString(b"".join(chunks))
            chunks = []


def test_wandb_offline_resumed_run_logs_every_step_once(plain, tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    run_dir = tmp_path / "run"
    spec = tracking.TrackerSpec("wandb", True, tmp_path, group="my-sweep")
    train_interrupted_then_resumed(spec, run_dir)
    # W&B's service process writes a run's file after `run.finish()` returns (the second run's
    # held only its 7-byte header in 2 of 4 tries beside a training job); at a process's exit
    # W&B's atexit hook tears the service down, which flushes every file. The test does so here.
    wandb.teardown()
    files = sorted((tmp_path / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(files) == 2  # one per process, of the same W&B run
    steps, runs = [], set()
    for path in files:
        for record in wandb_records(path):
            kind = record.WhichOneof("record_type")
            if kind == "run":
                runs.add((record.run.run_id, record.run.run_group, record.run.display_name))
            elif kind == "history":
                items = {
                    i.key or "/".join(i.nested_key): json.loads(i.value_json)
                    for i in record.history.item
                }
                if "train/loss" in items:
                    steps.append(record.history.step.num)
    assert runs == {(tracking.wandb_writer.run_id(run_dir), "my-sweep", "run")}
    assert steps == metrics_steps(run_dir, "train")
    assert without_timing(run_dir) == without_timing(plain)


def test_explicit_tracker_that_cannot_start_exits_2_before_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(__import__("sys").modules, "tensorboard", None)  # not installed
    out = tmp_path / "run"
    status = main(
        [
            "train",
            "--preset",
            "tiny",
            "--vocab-size",
            "64",
            "--seq-len",
            "2",
            "--batch-size",
            "4",
            "--tokens",
            "160",
            "--out",
            str(out),
            "--tracker",
            "tensorboard",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and ".[tensorboard]" in err[0]
    assert not (out / "config.json").exists()


def test_explicit_tracker_whose_folder_cannot_be_made_exits_2(tmp_path, monkeypatch, capsys):
    """`--tracker tensorboard` where `<out>/tensorboard` cannot be a folder warned and trained
    with exit 0; it is one line and exit 2 before training, and a writer that fails to start
    for another reason (here OSError) is an error too, not a warning."""
    pytest.importorskip("tensorboard")
    out = tmp_path / "run"
    out.mkdir()
    (out / "tensorboard").write_text("mine")  # a file where the tracker's folder goes
    argv = [
        "train",
        *("--preset", "tiny", "--vocab-size", "64", "--seq-len", "2", "--batch-size", "4"),
        *("--tokens", "160", "--out", str(out), "--tracker", "tensorboard"),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a folder" in err[0] and not (out / "config.json").exists()
    (out / "tensorboard").unlink()

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    from spamlang.tracking import tensorboard_writer

    monkeypatch.setattr(tensorboard_writer, "Writer", broken)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--tracker tensorboard cannot start" in err[0]
    assert not (out / "result.json").exists()


def test_default_tracker_that_cannot_start_warns_and_trains(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(__import__("sys").modules, "wandb", None)
    monkeypatch.setattr(tracking, "_DROPPED", set())
    with tracking.session(tracking.TrackerSpec("wandb", False, tmp_path)):
        result = run_training(CFG, tmp_path / "run", quiet=True)
    warnings = [line for line in capsys.readouterr().err.splitlines() if "wandb" in line]
    assert len(warnings) == 1 and ".[wandb]" in warnings[0]
    assert result["steps"] == CFG.steps


def test_sweep_tracker_must_be_known():
    from spamlang.sweep import Sweep

    with pytest.raises(UserError, match="tracker"):
        Sweep("s", CFG, {"lr": [1e-3]}, tracker="mlflow")


def test_sweep_is_one_tensorboard_experiment(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer

    from spamlang.cli.sweep_cmd import main as sweep_main
    from spamlang.sweep import Sweep

    sweep = Sweep("trk", CFG, {"lr": [1e-3, 3e-3]}, tracker="tensorboard")
    assert sweep_main(sweep, ["--out", str(tmp_path), "--quiet"]) == 0
    runs = EventMultiplexer().AddRunsFromDirectory(str(tmp_path / "tensorboard"))
    runs.Reload()
    ids = sorted(run_id for run_id, _ in sweep.points())
    assert sorted(runs.Runs()) == ids
    for run_id in ids:  # each run's final eval loss, the HParams dashboard's metric
        result = json.loads((tmp_path / run_id / "result.json").read_text())
        assert runs.Scalars(run_id, "result/final_eval_loss")[-1].value == pytest.approx(
            result["final_eval_loss"]
        )
