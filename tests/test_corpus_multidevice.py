"""A corpus run on 4 forced CPU devices: the same losses as on 1, train.bin replicated (never
gathered across devices) and the step's FLOPs split 4 ways, read off the compiled program."""

import textwrap

import numpy as np
from test_multidevice import run_child

CHILD = textwrap.dedent("""
    import json, re, sys
    import jax
    import numpy as np
    from jax.sharding import AxisType
    from spamlang.train.config import TrainConfig
    from spamlang.train.step import Program

    folder = sys.argv[1]
    rng = np.random.default_rng(0)
    for name, n in (("train.bin", 5000), ("val.bin", 600)):
        (rng.zipf(1.5, n) % 256).astype("<u2").tofile(f"{folder}/{name}")
    open(f"{folder}/meta.json", "w").write(json.dumps({"vocab_size": 256, "dtype": "uint16"}))
    config = TrainConfig(corpus=folder, seq_len=16, batch_size=16, tokens=16 * 16 * 6, lr=1e-2,
                         schedule="constant", warmup_frac=0.0, kernels="xla",
                         model={"n_layers": 1})
    out = {}
    for n in (1, 4):
        mesh = jax.make_mesh((n,), ("data",), axis_types=(AxisType.Auto,), devices=jax.devices()[:n])
        prog = Program(config, mesh)
        state = prog.init([0, 1], [1e-2, 3e-3])
        losses = []
        for _ in range(config.steps):
            state, m = prog.step(state)
            losses.append(jax.device_get(m["loss"]).tolist())
        ev = prog.evaluate(state, final=True)
        compiled = prog.lower_step(2).compile()
        cost = compiled.cost_analysis()
        hlo = compiled.as_text()
        out[n] = {"loss": losses, "eval": [e["eval_loss"] for e in ev],
                  "counts": jax.device_get(state["target_count"]).tolist(),
                  "flops": (cost[0] if isinstance(cost, list) else cost)["flops"],
                  "gathers": [l.strip()[:160] for l in hlo.splitlines()
                              if re.search(r"all-gather(-start)?\\(", l)],
                  "corpus_sharding": str(prog.shared["corpus"].sharding.spec)}
    print("RESULT " + json.dumps(out))
""")


def test_a_corpus_run_on_four_devices_equals_one_device(tmp_path):
    code = CHILD.replace("sys.argv[1]", repr(str(tmp_path)))
    out = run_child(code, timeout=300)
    one, four = out["1"], out["4"]
    np.testing.assert_allclose(four["loss"], one["loss"], rtol=1e-5)
    np.testing.assert_allclose(four["eval"], one["eval"], rtol=1e-5)
    assert four["counts"] == one["counts"]  # each device counts its rows; one psum
    assert four["gathers"] == [] and four["corpus_sharding"] in ("P()", "PartitionSpec()")
    assert four["flops"] < 0.4 * one["flops"], (four["flops"], one["flops"])
