"""Multi-host training: 2 processes x 2 CPU devices train (and resume) like 1 process x 4 devices.

Each process of the pair calls `jax.distributed.initialize` (coordinator on a free local port,
gloo CPU collectives) with 2 forced CPU devices, so the default mesh spans 4 devices over two
processes, exactly as on a SLURM job with one task per host. The pair trains a tiny run into a
shared directory, stops at step 12 (`stop_after_step`: checkpoint + `Interrupted`), and a fresh
pair (a resubmitted job) resumes it to the end. The test's own process (one device) trains the
same config uninterrupted meanwhile; the two runs must agree (4 devices equal 1:
tests/test_multidevice.py). The children are in
tests/multihost_child.py; they run here with a hard deadline and are killed on failure.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from multihost_child import config as child_config  # tests/multihost_child.py

from spamlang.train import run_training

CHILD = Path(__file__).with_name("multihost_child.py")
DEADLINE_S = 240  # for the whole test; children still running then are killed
EXIT_FINISHED, EXIT_INTERRUPTED = 0, 3  # see multihost_child.py
STOP_STEP, TOTAL_STEPS, LOG_EVERY = 12, 24, 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Child:
    """A child process with its output in files (no pipe can fill up and block it)."""

    def __init__(self, name: str, args: list[str], devices: int, logs: Path):
        self.name = name
        self.stdout_path, self.stderr_path = logs / f"{name}.out", logs / f"{name}.err"
        env = dict(
            os.environ,
            JAX_PLATFORMS="cpu",
            SPAMLANG_PEAK_FLOPS="1e12",
            XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} "
            f"--xla_force_host_platform_device_count={devices}",
        )
        with open(self.stdout_path, "w") as out, open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(CHILD), *args],
                env=env,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: only its processes
            except ProcessLookupError:
                pass
            self.proc.wait()

    def tail(self, n: int = 3000) -> str:
        err = self.stderr_path.read_text(errors="replace")[-n:]
        out = self.stdout_path.read_text(errors="replace")[-1000:]
        return (
            f"--- {self.name}: exit status {self.proc.returncode} ---\n"
            f"stdout tail:\n{out}\nstderr tail:\n{err}\n"
        )

    def report(self) -> dict:
        lines = [ln for ln in self.stdout_path.read_text().splitlines() if ln.startswith("RESULT ")]
        assert lines, f"{self.name} printed no RESULT line\n{self.tail()}"
        return json.loads(lines[-1][len("RESULT ") :])


def wait_all(children: dict[Child, int], deadline: float, everyone: list[Child]) -> None:
    """Wait until every child has exited with its expected status. On a wrong status or the
    deadline, kill every child still running (a pair's survivor would hang in a collective)
    and fail with their output."""
    while True:
        pending = [c for c in children if c.proc.poll() is None]
        wrong = [
            c
            for c in children
            if c.proc.returncode is not None and c.proc.returncode != children[c]
        ]
        late = time.monotonic() > deadline
        if wrong or late:
            for c in everyone:
                c.kill()
            what = (
                f"{', '.join(c.name for c in wrong)} exited with an unexpected status"
                if wrong
                else f"deadline of {DEADLINE_S} s passed; children killed"
            )
            raise AssertionError(what + "\n" + "".join(c.tail() for c in everyone))
        if not pending:
            return
        time.sleep(0.1)


def read_metrics(run_dir: Path) -> list[dict]:
    return [json.loads(ln) for ln in (run_dir / "metrics.jsonl").read_text().splitlines()]


def by_kind(rows: list[dict], kind: str) -> dict[int, dict]:
    steps = [r["step"] for r in rows if r["kind"] == kind]
    assert steps == sorted(set(steps)), f"{kind} steps not strictly increasing: {steps}"
    return {r["step"]: r for r in rows if r["kind"] == kind}


def close(a: float, b: float, rtol: float = 1e-5) -> bool:
    return abs(a - b) <= rtol * max(abs(a), abs(b), 1e-12)


def test_two_processes_resume_and_equal_one_process(tmp_path):
    deadline = time.monotonic() + DEADLINE_S
    logs = tmp_path / "logs"
    logs.mkdir()
    multi, single = tmp_path / "multi", tmp_path / "single"
    everyone: list[Child] = []

    def pair(tag: str, stop: int | None) -> list[Child]:
        port = free_port()
        extra = ["--stop-after-step", str(stop)] if stop else []
        kids = [
            Child(
                f"{tag}-p{i}",
                [
                    "--out",
                    str(multi),
                    "--expect-devices",
                    "4",
                    "--coordinator",
                    f"127.0.0.1:{port}",
                    "--num-processes",
                    "2",
                    "--process-id",
                    str(i),
                    *extra,
                ],
                devices=2,
                logs=logs,
            )
            for i in range(2)
        ]
        everyone.extend(kids)
        return kids

    try:
        first = pair("first", STOP_STEP)
        # The reference run, in this process while the first pair trains: one Python and one
        # JAX start fewer than a child of its own.
        ref_result = run_training(child_config(), single, quiet=True)
        wait_all({c: EXIT_INTERRUPTED for c in first}, deadline, everyone)
        for i, c in enumerate(first):
            r = c.report()
            assert (
                r["process_index"],
                r["process_count"],
                r["device_count"],
                r["local_device_count"],
            ) == (i, 2, 4, 2), r
            assert r["interrupted_step"] == STOP_STEP, r
        assert not (multi / "result.json").exists()
        assert (multi / "checkpoints" / str(STOP_STEP)).is_dir(), sorted(
            p.name for p in (multi / "checkpoints").iterdir()
        )
        before = (multi / "metrics.jsonl").read_text()
        assert [r["step"] for r in by_kind(read_metrics(multi), "train").values()] == list(
            range(LOG_EVERY, STOP_STEP + 1, LOG_EVERY)
        )

        second = pair("second", None)  # a resubmitted job: fresh processes, same command
        wait_all({c: EXIT_FINISHED for c in second}, deadline, everyone)
    finally:
        for c in everyone:
            c.kill()
    reports = [c.report() for c in (*first, *second)]

    # The resumed pair started at the checkpoint: the rows of steps <= 12 are the first pair's
    # lines byte for byte (timing fields included; a restart would have rewritten them), the
    # file has no duplicated step, and process 0 said so.
    after = (multi / "metrics.jsonl").read_text()
    assert after.startswith(before) and len(after) > len(before)
    assert "resum" in second[0].stderr_path.read_text().lower(), second[0].tail()
    rows, ref_rows = read_metrics(multi), read_metrics(single)
    train, ref_train = by_kind(rows, "train"), by_kind(ref_rows, "train")
    evals, ref_evals = by_kind(rows, "eval"), by_kind(ref_rows, "eval")

    # The two-process run equals the one-process run.
    assert list(train) == list(ref_train) == list(range(LOG_EVERY, TOTAL_STEPS + 1, LOG_EVERY))
    for step, row in train.items():
        assert close(row["loss"], ref_train[step]["loss"]), (step, row, ref_train[step])
    np.testing.assert_allclose(
        [r["grad_norm"] for r in train.values()],
        [r["grad_norm"] for r in ref_train.values()],
        rtol=1e-4,
    )
    assert train[TOTAL_STEPS]["loss"] < train[LOG_EVERY]["loss"]  # it trained
    assert list(evals) == list(ref_evals) and TOTAL_STEPS in evals
    for step, row in evals.items():
        assert close(row["eval_loss"], ref_evals[step]["eval_loss"]), (step, row)
    result = json.loads((multi / "result.json").read_text())
    assert result["steps"] == ref_result["steps"] == TOTAL_STEPS
    assert close(result["final_eval_loss"], ref_result["final_eval_loss"]), (result, ref_result)
    assert close(result["final_train_loss"], ref_result["final_train_loss"])
    for r in reports[2:]:  # both processes return the same result
        assert close(r["result"]["final_eval_loss"], result["final_eval_loss"]), r

    # Only process 0 wrote the run files: config.json once (first launch), result.json once
    # (second launch), nothing else left behind; process 1 wrote nothing outside checkpoints/.
    assert reports[1]["writes"] == [] and reports[3]["writes"] == [], reports
    renamed = [path for r in reports for event, path in r["writes"] if event == "rename"]
    assert renamed.count("config.json") == 1 and renamed.count("result.json") == 1, renamed
    assert ["rename", "config.json"] in reports[0]["writes"]
    assert ["rename", "result.json"] in reports[2]["writes"]
    assert sorted(p.name for p in multi.iterdir()) == [
        "checkpoints",
        "config.json",
        "metrics.jsonl",
        "result.json",
        "symbol_evals.jsonl",
        "symbols.npz",
    ]
