"""SpamLang is position invariant: sequence length only multiplies the compute.

A SpamLang sequence holds one symbol at every position, so every value vector is the same and
causal attention returns it whatever its weights (RoPE rotates only q and k). Every position's
hidden state therefore equals position 0's at every layer, wq and wk get no gradient, and a
run at L = 2 (one predicted position) is the run at L = 64 up to float rounding. Languages
with context (`cycle` here) break all of this, which is what the controls check.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from spamlang import languages
from spamlang.loss import next_token_loss
from spamlang.model import ModelConfig, Transformer, generate
from spamlang.train import TrainConfig, load_run, run_training

V = 256
# name -> (preset, overrides): the two CPU presets and the paper's width (D = 576, 9 query /
# 3 KV heads of 64) cut to 2 of its 30 layers.
MODELS = {
    "tiny": ("tiny", {}),
    "small": ("small", {}),
    "smollm2-106m-2l": ("smollm2-106m", {"n_layers": 2}),
}
# (model, kernels) pairs checked, each model once. "xla" is the plain path (accelerators,
# decoding); "cpu" has its own attention and VJP (what CPU training runs), here at the paper's
# width with 3 query heads per KV head. Each pair compiles one program: seconds on 2 cores.
CASES = [("tiny", "xla"), ("small", "xla"), ("smollm2-106m-2l", "cpu")]

# float32 forward: the largest |h_l - h_0| may be this fraction of the largest |h|. Measured
# at most 1.1e-6 (smollm2-106m-2l, perturbed; the softmax weights sum to 1 only up to
# rounding, and the layers compound it; 1.5e-6 at -O2), so 20x headroom; on the cycle control
# every later position differs by more than 0.75 of max |h|.
HIDDEN_RTOL = 3e-5
# |grad wq|, |grad wk| over the global gradient norm. Analytically 0: the attention logits'
# cotangent is p (dp - <p, dp>) with dp the same for every key, i.e. p dp (1 - sum p).
# Measured <= 2.4e-8; on the cycle control >= 2.5e-2, and wv, wo >= 8e-2 on either.
QK_GRAD_RTOL = 1e-5


def _config(name: str, kernels: str) -> ModelConfig:
    preset, overrides = MODELS[name]
    return ModelConfig.preset(preset, vocab_size=V, kernels=kernels, **overrides)


@functools.cache
def _states(name: str) -> tuple[nnx.State, nnx.State]:
    """(init, perturbed) parameters of model `name` (the same for either kernels).

    The perturbation adds N(0, init_std^2) to every matrix and N(0, 0.5^2) to every RMSNorm
    scale (init: all ones), so no check leans on a symmetric or specially scaled init. The
    noise is NumPy's: jax.random compiles a program per shape, which here took seconds.
    """
    config = _config(name, "xla")
    state = nnx.split(Transformer(config, rngs=nnx.Rngs(0)))[1]
    rng = np.random.default_rng(1)

    def perturb(x):
        std = config.init_std if x.ndim > 1 else 0.5
        return x + std * rng.standard_normal(x.shape, np.float32)

    return state, jax.tree.map(perturb, state)


# LLVM at -O0: the program runs once per batch, and compiling it is most of this module's
# model checks' time (-O2 took ~1.5x as long); the tolerances cover either's rounding.
@functools.partial(
    jax.jit, static_argnums=0, compiler_options={"xla_backend_optimization_level": 0}
)
def _measure(graphdef, state, tokens_BxL) -> dict[str, jax.Array]:
    """What the two model tests check, from one compiled program per model and kernels.

    "gap_L": max over batch and features of |h_l - h_0| per position l, where h_BxLxD are the
    final-normed hidden states (the input of the LM head); "h_max": max |h|; "total": the
    global norm of d(mean next-token loss)/d(parameters), through the training loss (fused,
    chunked); "wq", "wk", "wv", "wo": float[n_layers], the norms of those projections' parts.
    """

    def loss(state):
        model = nnx.merge(graphdef, state)
        return next_token_loss(model, tokens_BxL, chunk_size=TrainConfig().loss_chunk)[0]

    h_BxLxD = nnx.merge(graphdef, state).hidden(tokens_BxL)
    grads = jax.grad(loss)(state)
    attn = [block.attn for block in nnx.merge(graphdef, grads).blocks]
    out = {
        w: jnp.stack([jnp.linalg.norm(getattr(a, w)[...]) for a in attn])
        for w in ("wq", "wk", "wv", "wo")
    }
    out["total"] = jnp.sqrt(sum(jnp.sum(g * g) for g in jax.tree.leaves(grads)))
    out["gap_L"] = jnp.max(jnp.abs(h_BxLxD - h_BxLxD[:, :1]), axis=(0, 2))
    out["h_max"] = jnp.max(jnp.abs(h_BxLxD))
    return out


@functools.cache
def _measured(name: str, kernels: str) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """{(weights, language): `_measure`'s numbers} for weights "init" and "perturbed" on a
    SpamLang batch and on a `cycle` (k = 3) control batch, B = 4, L = 16."""
    abstract = nnx.eval_shape(lambda: Transformer(_config(name, kernels), rngs=nnx.Rngs(0)))
    graphdef = nnx.graphdef(abstract)
    batches = {
        lang: languages.make(lang, vocab_size=V, **params).sample(jax.random.key(2), 4, 16)
        for lang, params in (("spam", {}), ("cycle", {"k": 3}))
    }
    return {
        (weights, lang): jax.device_get(_measure(graphdef, state, tokens_BxL))
        for weights, state in zip(("init", "perturbed"), _states(name))
        for lang, tokens_BxL in batches.items()
    }


@pytest.mark.parametrize("name, kernels", CASES)
def test_every_position_has_position_0s_hidden_state(name, kernels):
    measured = _measured(name, kernels)
    for weights in ("init", "perturbed"):
        spam, cycle = measured[weights, "spam"], measured[weights, "cycle"]
        tol = HIDDEN_RTOL * spam["h_max"]
        assert spam["gap_L"].max() <= tol, (weights, spam["gap_L"], tol)
        # Control: the same check on a batch with context fails at every later position, by
        # far more than the tolerance (so it is not a check that cannot fail).
        assert cycle["gap_L"][1:].min() > 100 * tol, (weights, cycle["gap_L"])


@pytest.mark.parametrize("name, kernels", CASES)
def test_query_and_key_projections_get_no_gradient(name, kernels):
    for (weights, lang), norms in _measured(name, kernels).items():
        rel = {w: norms[w] / norms["total"] for w in ("wq", "wk", "wv", "wo")}
        where = (weights, lang, rel)
        # The value and output projections learn either way, in every layer.
        assert min(rel["wv"].min(), rel["wo"].min()) > 1e-3, where
        if lang == "spam":
            assert max(rel["wq"].max(), rel["wk"].max()) <= QK_GRAD_RTOL, where
        else:  # control: with context, the attention pattern matters
            assert min(rel["wq"].min(), rel["wk"].min()) > 1e-3, where


# --- training at L = 2 and L = 64 ------------------------------------------------------------

TRAIN_V = 64
# 60 steps of 8 sequences, untied, cosine schedule with warmup (the same for both lengths,
# since it depends only on the step count). At this LR the run repeats ~2/3 of the symbols.
RUN = dict(
    preset="tiny",
    vocab_size=TRAIN_V,
    tie_embeddings=False,
    batch_size=8,
    lr=1e-2,
    seed=0,
    eval_sequences=64,
    log_every=5,
    checkpoint_every=0,
)
STEPS = 60
# |loss(L=2) - loss(L=64)|, nats. The per-step gradients agree up to rounding (the L = 64 loss
# averages 63 identical per-position terms, in other chunks of the fused loss), and the
# difference grows over training. Measured over seeds 0-7: at most 2.7e-7 (final train loss)
# and 7.2e-7 (final eval loss) at this LR, 1.9e-6 at lr 3e-2. 1e-5 leaves >10x headroom and is
# ~1e-5 of the loss, which ends between 1.65 and 2.05 nats over those seeds.
LOSS_ATOL = 1e-5
# Parameters other than wq and wk, absolute (they are O(1)): measured at most 1.1e-6 over
# seeds 0-3. wq and wk differ by 2.6e-3 to 6.4e-3: their gradient is exactly 0 at L = 2 (one key
# per query) but rounding noise (~1e-9) at L = 64, which AdamW's m / (sqrt(v) + eps), eps 1e-8,
# turns into steps of O(0.1 lr). On SpamLang they do not change any output, so the losses
# still agree; on sequences with context (e.g. after a decoding error) they would.
PARAM_ATOL = 1e-5
# result.json fields that depend on the symbols trained on and evaluated, not on L.
EXACT = (
    "steps",
    "optimal_loss",
    "updates_per_symbol",
    "sequences_per_symbol",
    "exposure_min",
    "exposure_median",
    "exposure_max",
    "unseen_fraction",
    "eval_seen_sequences",
    "eval_unseen_sequences",
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{L: (run dir, result)} for one config trained at L = 2 and at L = 64."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPAMLANG_PEAK_FLOPS", "1e11")  # MFU needs a peak: skip measuring one
        out = {}
        for L in (2, 64):
            config = TrainConfig(**RUN, seq_len=L, tokens=RUN["batch_size"] * L * STEPS)
            run_dir = tmp_path_factory.mktemp(f"L{L}")
            out[L] = run_dir, run_training(config, run_dir, quiet=True)
    return out


@pytest.fixture(scope="module")
def models(runs):
    """{L: the trained model} (restored from the run's final checkpoint, plain kernels)."""
    return {L: load_run(run_dir)[1] for L, (run_dir, _) in runs.items()}


def _train_losses(run_dir: Path) -> list[float]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [r["loss"] for r in rows if r["kind"] == "train"]


def test_training_at_length_2_is_training_at_length_64(runs, models):
    (dir2, r2), (dir64, r64) = runs[2], runs[64]
    assert r2["steps"] == STEPS and not r2["diverged"] and not r64["diverged"]
    assert r2["final_train_loss"] < math.log(TRAIN_V) - 1  # it learned: not two idle runs
    assert {k: r2[k] for k in EXACT} == {k: r64[k] for k in EXACT}
    # eval_loss_unseen is None in both when every eval symbol was trained on.
    for key in ("final_train_loss", "final_eval_loss", "eval_loss_seen", "eval_loss_unseen"):
        assert r2[key] == pytest.approx(r64[key], abs=LOSS_ATOL), key
    # The whole logged trajectory, not just its end.
    np.testing.assert_allclose(_train_losses(dir2), _train_losses(dir64), rtol=0, atol=LOSS_ATOL)
    # Every position of an eval sequence has the same argmax: the accuracies agree unless a
    # near-tie flips, which would move one sequence's share, 1/eval_sequences.
    assert abs(r2["eval_accuracy"] - r64["eval_accuracy"]) <= 1 / RUN["eval_sequences"]
    params64 = dict(nnx.to_flat_state(nnx.state(models[64], nnx.Param)))
    for path, param in nnx.to_flat_state(nnx.state(models[2], nnx.Param)):
        if path[-1] not in ("wq", "wk"):
            np.testing.assert_allclose(
                param[...], params64[path][...], rtol=0, atol=PARAM_ATOL, err_msg=str(path)
            )
    # One test, not two, so that xdist never trains the pair of runs on two workers.
    _a_model_trained_at_length_2_repeats_forever_once_it_repeats(models)


def _a_model_trained_at_length_2_repeats_forever_once_it_repeats(models):
    prompts_Vx1 = jnp.arange(TRAIN_V, dtype=jnp.int32)[:, None]
    decoded_VxT = np.asarray(generate(models[2], prompts_Vx1, 32))  # greedy, 31 new tokens
    repeats_once_V = decoded_VxT[:, 1] == decoded_VxT[:, 0]
    repeats_always_V = (decoded_VxT == decoded_VxT[:, :1]).all(axis=1)
    # Decoding past position 1 sees the prompt symbol at every cached position: the same
    # hidden state as at position 0, hence the same argmax, for all of the 31 tokens.
    np.testing.assert_array_equal(repeats_always_V, repeats_once_V)
    assert repeats_once_V.any()  # not vacuous: the run learned to repeat some symbols
