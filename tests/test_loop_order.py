"""The loop never makes the host wait for the step it just dispatched.

At a log step n with nothing else to do, the metrics of step n are read only after step
n + 1 is queued behind it (as nanodo's loop does), so the device always has work while the
host writes rows. The final step has no successor and is read at once.
"""

import copy
import json

import jax

from spamlang.train import TrainConfig, run_training
from spamlang.train import run as run_module

CFG = TrainConfig(
    vocab_size=32,
    seq_len=8,
    batch_size=8,
    tokens=8 * 8 * 12,
    lr=3e-3,
    schedule="constant",
    warmup_frac=0.0,
    log_every=4,
    checkpoint_every=0,
    eval_sequences=8,
    model={"n_layers": 1},
)


def test_step_n_plus_1_is_dispatched_before_step_n_is_read(tmp_path, monkeypatch):
    events: list[tuple[str, int]] = []
    dispatched = [0]
    real_program, real_get = run_module.get_program, jax.device_get

    def program(config):
        prog = copy.copy(real_program(config))  # the shared Program itself stays as it is
        real_step = prog.step

        def step(state, batch=None):
            out = real_step(state)
            dispatched[0] += 1
            events.append(("dispatch", dispatched[0]))
            return out

        prog.step = step
        return prog

    def device_get(tree):
        # The loop reads step metrics as a list of dicts holding "loss", one per step.
        if isinstance(tree, list) and tree and isinstance(tree[0], dict) and "loss" in tree[0]:
            events.append(("read", dispatched[0], len(tree)))
        return real_get(tree)

    monkeypatch.setattr(run_module, "get_program", program)
    monkeypatch.setattr(jax, "device_get", device_get)
    run_training(CFG, tmp_path / "run", quiet=True)

    reads = [e for e in events if e[0] == "read"]
    # Steps 4 and 8 are read once steps 5 and 9 are queued; 12, the last, has no successor.
    assert [(dispatched_then, n) for _, dispatched_then, n in reads] == [(5, 4), (9, 4), (12, 4)]
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert [r["step"] for r in rows if r["kind"] == "train"] == [4, 8, 12]
