"""Data parallelism: 4 forced CPU devices train exactly like 1 (run in a subprocess).

XLA_FLAGS must be set before JAX starts, and the rest of the suite must not see it, so the
check runs in a child process that builds a 1-device mesh and a 4-device mesh from the same
four host devices and trains the same config on both.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
from _compare import assert_same_eval  # tests/_compare.py

CHILD = textwrap.dedent("""
    import json
    import jax
    from jax.sharding import AxisType
    from spamlang.errors import UserError
    from spamlang.train.config import TrainConfig
    from spamlang.train.step import Program

    assert jax.device_count() == 4, jax.devices()
    # One layer: equality across devices does not depend on depth, and compiling is most of
    # this test's time.
    config = TrainConfig(vocab_size=64, seq_len=16, batch_size=16, tokens=16 * 16 * 12,
                         lr=1e-2, schedule="constant", warmup_frac=0.0, eval_sequences=24,
                         model={"n_layers": 1})

    def train(config, n, steps):
        mesh = jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,),
                             devices=jax.devices()[:n])
        prog = Program(config, mesh)
        state = prog.init([config.seed], [config.lr])
        losses, norms = [], []
        for _ in range(steps):
            state, m = prog.step(state)
            losses.append(float(m["loss"][0]))
            norms.append(float(m["grad_norm"][0]))
        return prog, state, losses, norms

    def _row(row):
        # The per-symbol losses as a list: JSON, and compared as numbers by the parent.
        return {**row, "symbol_loss": row["symbol_loss"].tolist()}

    out = {}
    for n in (1, 4):
        prog, state, losses, norms = train(config, n, config.steps)
        leaf = jax.tree.leaves(state["params"])[0]
        out[n] = {"loss": losses, "grad_norm": norms,
                  "param_devices": len(leaf.sharding.device_set),
                  "replicated": bool(leaf.sharding.is_fully_replicated),
                  "eval": _row(prog.evaluate(state)[0]),
                  "exposure": jax.device_get(state["exposure"][0]).tolist(),
                  # ids 32.. marked unseen: both sides of the split hold sequences
                  "half": _row(prog.evaluate(
                      {**state, "exposure": state["exposure"].at[:, 32:].set(0)})[0])}
    # Micro-batches (2 of 8 rows: 2 rows per device each) on 4 devices equal 1 device.
    for n in (1, 4):
        out[f"micro{n}"] = train(config.replace(micro_batch=8), n, 4)[2]
    def refusal(config):
        try:
            Program(config, jax.make_mesh((4,), ("data",), axis_types=(AxisType.Auto,)))
            return "accepted"
        except UserError as e:
            return str(e)

    out["micro_indivisible"] = refusal(config.replace(micro_batch=2))
    out["indivisible"] = refusal(config.replace(batch_size=18))
    print("RESULT " + json.dumps(out))
""")


def run_child(code: str, timeout: int) -> dict:
    """Run `code` in a child with 4 forced CPU devices; the JSON it printed after RESULT."""
    env = dict(
        os.environ,
        XLA_FLAGS=os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4",
        JAX_PLATFORMS="cpu",
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT ") :])


def test_four_devices_equal_one_device():
    out = run_child(CHILD, timeout=300)
    one, four = out["1"], out["4"]
    np.testing.assert_allclose(four["loss"], one["loss"], rtol=1e-5)
    np.testing.assert_allclose(four["grad_norm"], one["grad_norm"], rtol=1e-4)
    assert one["loss"][-1] < 0.7 * one["loss"][0]  # it trained, so equal curves mean something
    assert four["param_devices"] == 4 and four["replicated"]
    for ev in ("eval", "half"):
        assert_same_eval(four[ev], one[ev], rel=1e-5, where=ev)
    # Each device counts its own rows; the psum of the counts is the one-device count.
    assert four["exposure"] == one["exposure"] and sum(one["exposure"]) == 12 * 16
    assert one["half"]["eval_unseen_sequences"] == 32  # the exact eval: ids 32.. unseen
    assert "divisible by the number of devices (4)" in out["indivisible"]
    np.testing.assert_allclose(out["micro4"], out["micro1"], rtol=1e-5)
    np.testing.assert_allclose(out["micro1"], one["loss"][:4], rtol=1e-5)
    assert (
        "micro_batch (2) must be divisible by the number of devices (4)" in out["micro_indivisible"]
    )


# The optimizers whose state is not adamw's (CHILD's config), in a vmapped pair of LRs, with
# tracked rows: lazy_adamw's present ids meet in a psum, adafactor's factored moments are
# replicated; each must train on 4 devices as on 1. (sgd's momentum is one more replicated
# tree of the parameters' shapes, as adamw's moments are: CHILD covers it.) A child of its
# own, so that it runs beside CHILD.
OPT_CHILD = textwrap.dedent("""
    import json
    import jax
    from jax.sharding import AxisType
    from spamlang.train.config import TrainConfig
    from spamlang.train.step import Program

    config = TrainConfig(vocab_size=16, seq_len=16, batch_size=16, tokens=16 * 16 * 12,
                         schedule="constant", warmup_frac=0.0, eval_sequences=24,
                         track_symbols=2, model={"n_layers": 1})  # as in CHILD
    out = {}
    for name in ("lazy_adamw", "adafactor"):
        for n in (1, 4):
            mesh = jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,),
                                 devices=jax.devices()[:n])
            prog = Program(config.replace(optimizer=name), mesh)
            state = prog.init([0, 1], [0.1, 0.3] if name == "sgd" else [1e-2, 3e-2])
            rows = []
            for _ in range(2):
                state, m = prog.step(state)
                rows.append({k: jax.device_get(v).tolist() for k, v in m.items()})
            out[f"{name}{n}"] = rows
    print("RESULT " + json.dumps(out))
""")


def test_every_optimizer_on_four_devices_equals_one_device():
    out = run_child(OPT_CHILD, timeout=300)
    for name in ("lazy_adamw", "adafactor"):
        one, four = out[f"{name}1"], out[f"{name}4"]
        for a, b in zip(one, four):
            assert a["track_seen"] == b["track_seen"], name
            for key in ("loss", "grad_norm", "track_embed", "track_head"):
                np.testing.assert_allclose(
                    b[key], a[key], rtol=2e-4, atol=1e-7, err_msg=f"{name} {key}"
                )
        assert one[-1]["loss"][0] < one[0]["loss"][0], name  # the steps moved the model


# The compiled step on 4 devices: no device holds another device's hidden states, and the
# per-device FLOPs fall to a quarter. XLA's cost analysis counts a while-loop body once, so the
# cost check runs the loss in one chunk per device (loss_chunk >= rows) and without
# micro-batches, which makes the analysis count the head and loss in full; the all-gather
# check runs the default chunked loss with the CPU kernels' automatic micro-batches.
DP_CHILD = textwrap.dedent("""
    import json, re
    import jax
    from jax.sharding import AxisType
    from spamlang.train.config import TrainConfig
    from spamlang.train.step import Program

    def compiled(config, n, k):
        mesh = jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])
        return Program(config, mesh).lower_step(k).compile()

    def flops(c):
        cost = c.cost_analysis()
        return (cost[0] if isinstance(cost, list) else cost)["flops"]

    base = TrainConfig(preset="small", vocab_size=16384, seq_len=128, batch_size=32,
                       tokens=32 * 128 * 10, kernels="xla", loss_chunk=4096, micro_batch=32,
                       model={"n_layers": 1})  # one layer: every check holds per layer
    out = {"ratio": {}, "gathers": {}}
    # Every factor (K, tying, head) at both levels, in two cells; the benchmark
    # bench_data_parallel.py measures all eight.
    for k, tied, head in [(1, False, "softmax"), (2, True, "mos:2")]:
        config = base.replace(tie_embeddings=tied, head=head)
        out["ratio"][f"K{k}-{head}-{'tied' if tied else 'untied'}"] = \\
            flops(compiled(config, 4, k)) / flops(compiled(config, 1, k))
    # V x D gradient buffers all-reduced: E and W untied, the one tied matrix once (K = 2: the
    # untied count is read off the all-gather check's xla program, not a compile of its own).
    out["vd_reduced"] = {}
    for kernels, tied in (("xla", False), ("cpu", False), ("xla", True)):
        config = base.replace(kernels=kernels, loss_chunk=256, micro_batch=0, tie_embeddings=tied)
        hlo = compiled(config, 4, 2).as_text()
        if kernels == "xla":
            out["vd_reduced"]["tied" if tied else "untied"] = sum(
                l.split(" all-reduce")[0].count("f32[2,16384,64]") for l in hlo.splitlines()
                if re.search(r"\\sall-reduce(-start)?\\(", l))
        if not tied:
            out["gathers"][kernels] = [l.strip()[:160] for l in hlo.splitlines()
                                       if re.search(r"all-gather(-start)?\\(", l)]
            out["psum"] = out.get("psum", 0) + len(re.findall(r"all-reduce(-start)?\\(", hlo))
    print("RESULT " + json.dumps(out))
""")


def test_step_is_data_parallel_in_the_compiled_program():
    out = run_child(DP_CHILD, timeout=400)
    for cell, ratio in out["ratio"].items():
        assert 0.2 <= ratio <= 0.3, (cell, ratio)
    assert out["gathers"] == {"xla": [], "cpu": []}
    assert out["psum"] > 0  # the gradients (and loss sums) are still reduced
    # A tied embedding's two gradient contributions meet before one all-reduce.
    assert out["vd_reduced"] == {"untied": 2, "tied": 1}
