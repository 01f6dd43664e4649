"""The train state (a leading member axis K), the one pure step, and the compiled `Program`.

The state holds params, opt_state (each member's peak LR and optimizer scalars inside), the
data key, divergence flags and each symbol's history (`spamlang.coverage.history`). A member's
batch is a function of (data_key, step) (`batch_rows`), so a resumed run sees the same batches
on any device count. A non-finite loss or gradient, or loss > diverge_loss, freezes a member.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from spamlang import optim
from spamlang.corpus import windows
from spamlang.corpus.evaluate import CorpusEvaluation
from spamlang.corpus.files import open_corpus
from spamlang.coverage import exposure, tracking
from spamlang.errors import UserError
from spamlang.evaluate import Evaluation
from spamlang.evaluate.sets import sample_rows, sharded_rows
from spamlang.loss import next_token_loss
from spamlang.members import over_members
from spamlang.model import Transformer
from spamlang.model.kernels import micro_batches, resolve
from spamlang.train.config import MEMBER_FIELDS, TrainConfig

State = dict[str, Any]
HEAD_STEP = ("head_step_rms", "head_step_rms_absent")  # metrics read off the optimizer's state


def default_mesh() -> jax.sharding.Mesh:  # 1-D ("data",) over every device of every host
    return jax.make_mesh((jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,))


# Folded into the data key for the permutations, so they never reuse an iid step's key.
_PERMUTED = 0x5045524D


def batch_rows(sampling, lang, data_key, step, rows, batch_size: int, seq_len: int) -> jax.Array:
    """int32[len(rows), L]: rows `rows` of step `step`'s batch. iid: row r is
    `lang.sample(fold_in(fold_in(data_key, step), r), 1, L)[0]`; permuted: epoch e deals a
    permutation perm_e of the drawn symbols, so position t * B + r holds `perm_e[(t * B + r) mod
    n]`; cyclic: perm_0 always."""
    if sampling == "iid":
        return sample_rows(lang, jax.random.fold_in(data_key, step), rows, seq_len)
    ids_N = jnp.asarray(lang.drawn_ids())
    n = ids_N.shape[0]
    key = jax.random.fold_in(data_key, _PERMUTED)

    def deal(epoch):
        return jax.random.permutation(jax.random.fold_in(key, epoch), n)

    # uint32 positions: up to 2^32 rows per run (TrainConfig checks the budget).
    first = step.astype(jnp.uint32) * jnp.uint32(batch_size)
    position = first + rows.astype(jnp.uint32)
    slot = (position % n).astype(jnp.int32)
    if sampling == "cyclic":
        index = deal(jnp.uint32(0))[slot]
    else:
        epoch0 = first // n
        n_epochs = (batch_size - 1) // n + 2  # the most epochs a batch touches (static)
        perm_ExN = jax.vmap(deal)(epoch0 + jnp.arange(n_epochs, dtype=jnp.uint32))
        index = perm_ExN[(position // n - epoch0).astype(jnp.int32), slot]
    return jnp.broadcast_to(ids_N[index][:, None], (rows.shape[0], seq_len)).astype(jnp.int32)


def accumulated(grad_fn, params, tokens_BxL, n_micro: int, mesh):
    """The mean of `grad_fn` over n_micro micro-batches scanned in turn, sharded over `mesh`."""
    B, L = tokens_BxL.shape
    # Micro-batch i takes rows j * n_micro + i, so every device works on every micro-batch.
    tokens_MxbxL = tokens_BxL.reshape(B // n_micro, n_micro, L).swapaxes(0, 1)
    if mesh is not None:
        tokens_MxbxL = jax.lax.with_sharding_constraint(
            tokens_MxbxL, NamedSharding(mesh, P(None, "data", None))
        )

    def accumulate(total, tokens_bxL):
        return jax.tree.map(jnp.add, total, grad_fn(params, tokens_bxL)), None

    zeros = jax.tree.map(jnp.zeros_like, jax.eval_shape(grad_fn, params, tokens_MxbxL[0]))
    total, _ = jax.lax.scan(accumulate, zeros, tokens_MxbxL)
    # Equal-sized micro-batches: the mean of their means is the batch mean.
    return jax.tree.map(lambda x: x / n_micro, total)


def symbol_history(state: State, added_V, step) -> dict:  # after a step showing ids added_V times
    shown = added_V > 0
    # The gap that closes now: steps since the previous appearance (none: 0).
    gap = jnp.where(shown & (state["last_seen"] >= 0), step + 1 - state["last_seen"], 0)
    return {
        "exposure": state["exposure"] + added_V,
        "last_seen": jnp.where(shown, step + 1, state["last_seen"]),
        "first_seen": jnp.where(shown & (state["first_seen"] < 0), step + 1, state["first_seen"]),
        "max_gap": jnp.maximum(state["max_gap"], gap),
    }


def make_member_step(program: Program):  # state -> (state, metrics), not jitted nor vmapped
    config, mesh, lang, tx = program.config, program.mesh, program.lang, program.tx
    B, L, V = config.batch_size, config.seq_len, config.vocab_size
    shard = mesh.devices.size > 1
    where = mesh if shard else None  # what the loss and the counts shard over
    limit = jnp.float32(config.diverge_loss)
    tracked, needs_present = config.tracked_ids, config.optimizer == "lazy_adamw"

    def loss_fn(params, tokens_BxL):
        model = nnx.merge(program.graphdef, params, program.rest)
        return next_token_loss(model, tokens_BxL, chunk_size=config.loss_chunk or None, mesh=where)

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    if program.n_micro > 1:
        grad_fn = functools.partial(accumulated, grad_fn, n_micro=program.n_micro, mesh=where)

    corpus_tokens = program.corpus.train.shape[0] if program.corpus is not None else 0

    def member_step(state: State, shared=None, mapped=None) -> tuple[State, dict]:
        step = state["step"]
        with jax.named_scope("data"):
            rows = sharded_rows(B, mesh, shard)
            if mapped is not None:  # a memory-mapped corpus: the host gathered this batch
                tokens_BxL = mapped["batch"]
            elif shared is not None:  # a corpus on device, shared by the members
                starts_B = windows.window_starts(state["data_key"], step, rows, corpus_tokens, L)
                tokens_BxL = windows.gather(shared["corpus"], starts_B, L)
            else:
                tokens_BxL = batch_rows(config.sampling, lang, state["data_key"], step, rows, B, L)
            if shard:
                tokens_BxL = jax.lax.with_sharding_constraint(
                    tokens_BxL, NamedSharding(mesh, P("data", None))
                )
        (loss, aux), grads = grad_fn(state["params"], tokens_BxL)
        present_V = exposure.present_ids(tokens_BxL, V, where) if needs_present else None
        # Head rows shown more than push-down: untied the targets', tied every id's (one psum).
        if config.tie_embeddings:
            gate_V = present_V if needs_present else exposure.present_ids(tokens_BxL, V, where)
        else:
            gate_V = exposure.count_targets(tokens_BxL, V, where) > 0
        with jax.named_scope("optimizer"):
            grad_norm = optax.tree.norm(grads)
            updates, opt_state = tx.update(
                grads, state["opt_state"], state["params"], present_V=present_V, gate_V=gate_V
            )
            params = optax.apply_updates(state["params"], updates)
        bad = ~(jnp.isfinite(loss) & jnp.isfinite(grad_norm)) | (loss > limit)
        frozen = state["diverged"] | bad

        def unless_frozen(new, old):
            return jax.tree.map(lambda n, o: jnp.where(frozen, o, n), new, old)

        with jax.named_scope("exposure"):
            # A frozen (diverged) member's batch is not trained on, so it is not counted.
            added = jnp.where(frozen, 0, exposure.count_batch(tokens_BxL, V, where))
        new_params = unless_frozen(params, state["params"])
        new_state = {
            "params": new_params,
            "opt_state": unless_frozen(opt_state, state["opt_state"]),
            "step": step + 1,
            "data_key": state["data_key"],
            "diverged": frozen,
            "diverged_step": jnp.where(bad & ~state["diverged"], step, state["diverged_step"]),
            **symbol_history(state, added, step),
        }
        if program.corpus is not None:
            with jax.named_scope("targets"):  # each id's fate as a target (inputs: exposure)
                hit = jnp.where(frozen, 0, exposure.count_targets(tokens_BxL, V, where))
                new_state["target_count"] = state["target_count"] + hit
                new_state["last_target"] = jnp.where(hit > 0, step + 1, state["last_target"])
        lr_t = optim.peak_lr(state["opt_state"]) * program.schedule(step)
        # Divergence flags ride with the metrics: the next step takes (donates) this state.
        metrics = {
            "loss": loss,
            "accuracy": aux["accuracy"],
            "grad_norm": grad_norm,
            "lr": jnp.asarray(lr_t, jnp.float32),
            # The head's direction before LR and decay: every row, the rows absent this step.
            **{k: optax.tree_utils.tree_get(opt_state, k) for k in HEAD_STEP},
            "diverged": new_state["diverged"],
            "diverged_step": new_state["diverged_step"],
        }
        if tracked:
            with jax.named_scope("track"):
                metrics.update(tracking.row_updates(state["params"], new_params, tracked, V))
                metrics["track_seen"] = added[jnp.asarray(tracked)]
        return new_state, metrics

    return member_step


# Fields that change neither the step nor the evaluation: MEMBER_FIELDS and the loop's cadence.
_CADENCE = ("log_every", "eval_every", "checkpoint_every", "keep_checkpoints", "diag_every")
NOT_COMPILED = (*MEMBER_FIELDS, *_CADENCE)
assert set(NOT_COMPILED) <= {f.name for f in dataclasses.fields(TrainConfig)}


def program_key(config: TrainConfig) -> tuple:
    """What of `config` changes its compiled program, hashable: every field but NOT_COMPILED."""
    return tuple(
        (f.name, json.dumps(getattr(config, f.name), sort_keys=True))
        for f in dataclasses.fields(config)
        if f.name not in NOT_COMPILED
    )


class Program:
    """The jitted init, step and evaluation of one config on one mesh, for any K.

    >>> program = Program(TrainConfig(vocab_size=64, tokens=64 * 32 * 100))
    >>> state = program.init([0, 1], [1e-3, 3e-3])     # two members
    >>> state, metrics = program.step(state)            # metrics: device arrays of shape [K]
    >>> program.evaluate(state)[1]["eval_loss"]

    `program(config)` shares the compiled functions between the configs of one `program_key`,
    each caller getting a Program that holds its own config (lr, seed, cadence and all)."""

    def __init__(self, config: TrainConfig, mesh: jax.sharding.Mesh | None = None):
        mesh = default_mesh() if mesh is None else mesh
        if "data" not in mesh.axis_names:
            raise UserError(f"the mesh needs a 'data' axis, got axes {mesh.axis_names}")
        if config.batch_size % mesh.devices.size:
            raise UserError(
                f"batch_size ({config.batch_size}) must be divisible by the number "
                f"of devices ({mesh.devices.size})"
            )
        from spamlang.perf import flops_per_token

        self.config, self.mesh = config, mesh
        self.kernels = resolve(config.kernels, mesh.devices.flat[0].platform)
        self.replicated = NamedSharding(mesh, P())
        self.lang = config.make_language()
        # A corpus's train.bin: an argument of the step, on device or read per step on the host.
        self.corpus = open_corpus(config.corpus) if config.corpus else None
        self.shared, self.host_windows = None, None
        if self.corpus is not None and windows.on_device(self.corpus.train):
            self.shared = {"corpus": jax.device_put(np.asarray(self.corpus.train), self.replicated)}
        elif self.corpus is not None:
            self.host_windows = windows.HostWindows(
                self.corpus.train, config.batch_size, config.seq_len
            )
        self.model_config = config.model_config().replace(kernels=self.kernels)
        self.tx, self.schedule = optim.from_config(config)
        self.n_micro = micro_batches(config, mesh, self.kernels)
        self.optimal_loss = float(self.lang.optimal_loss(config.seq_len))
        flops = flops_per_token(self.model_config, config.seq_len)
        self.flops_per_step = float(flops) * config.tokens_per_step
        abstract = nnx.eval_shape(lambda: Transformer(self.model_config, rngs=nnx.Rngs(0)))
        self.graphdef, _, rest = nnx.split(abstract, nnx.Param, ...)
        # Non-parameter variables (none in the current model) are constants of the program.
        self.rest = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), rest)
        step = make_member_step(self)
        if self.corpus is not None:
            self.evaluation = CorpusEvaluation(config, self.graphdef, self.rest, mesh)
            self.optimal_loss = None  # unknown for real text
        else:
            self.evaluation = Evaluation(
                config, self.lang, self.graphdef, self.rest, mesh, self.optimal_loss
            )
        # One member at a time: compiled once per program, not once per group size.
        self._init = jax.jit(self._member_init, out_shardings=self.replicated)
        # One step of every member, `state` donated; the metrics stay on device, shape [K].
        self._step = jax.jit(
            over_members(step), donate_argnums=0, out_shardings=(self.replicated, self.replicated)
        )

    def step(self, state: State, batch=None) -> tuple[State, dict]:
        """One step of every member (a memory-mapped corpus's batch: `host_batch`)."""
        if self.host_windows is None:
            return self._step(state) if self.shared is None else self._step(state, self.shared)
        if batch is None:
            keys, at = jax.device_get((state["data_key"], state["step"][0]))
            batch = self.host_batch(keys, int(at))
        return self._step(state, None, batch)

    def host_batch(self, data_keys_K, step: int) -> dict:
        tokens = self.host_windows.batch(data_keys_K, step)
        rows = P(None, "data", None) if self.mesh.devices.size > 1 else P()
        return {"batch": jax.device_put(tokens, NamedSharding(self.mesh, rows))}

    def _member_init(self, key: jax.Array, hyper: dict) -> State:
        param_key, data_key = jax.random.split(key)
        model = Transformer(self.model_config, rngs=nnx.Rngs(params=param_key))
        params = nnx.split(model, nnx.Param, ...)[1]
        V = self.config.vocab_size
        return {
            "params": params,
            "opt_state": optim.with_hyperparams(self.tx.init(params), hyper),
            "step": jnp.zeros((), jnp.int32),
            "data_key": data_key,
            "diverged": jnp.zeros((), jnp.bool_),
            "diverged_step": jnp.full((), -1, jnp.int32),  # -1 while healthy
            # Each symbol's sequences, steps after its last / first appearance (-1), longest gap.
            "exposure": jnp.zeros(V, jnp.int32),
            "last_seen": jnp.full(V, -1, jnp.int32),
            "first_seen": jnp.full(V, -1, jnp.int32),
            "max_gap": jnp.zeros(V, jnp.int32),
        } | (
            # How often each id was a target, and the step count right after its last (-1 never).
            {"target_count": jnp.zeros(V, jnp.int32), "last_target": jnp.full(V, -1, jnp.int32)}
            if self.corpus is not None
            else {}
        )

    def init(self, seeds: list[int], lrs: list[float]) -> State:
        """The step-0 state of K members (member i from seeds[i] and peak LR lrs[i])."""
        pretrained = self.pretrained_params()
        return self.stack([self.init_member(s, lr, pretrained) for s, lr in zip(seeds, lrs)])

    def init_member(self, seed: int, lr: float, pretrained=None, config=None) -> State:
        """One member's step-0 state; with `init_from`, the checkpoint's weights."""
        source = self.config if config is None else config
        hyper = {f: jnp.float32(v) for f, v in optim.member_values(source).items()}
        state = self._init(jax.random.PRNGKey(seed), {**hyper, "lr": jnp.float32(lr)})
        if self.config.init_from:
            # The checkpoint's arrays replace the init's (zero moments do not depend on them).
            state["params"] = self.pretrained_params() if pretrained is None else pretrained
        return state

    def pretrained_params(self) -> State | None:
        if not self.config.init_from:
            return None
        from spamlang.model.hf_checkpoint import load_params

        def put(value, abstract):
            # From a callback, so that a multi-host mesh gets each process's own devices' copies.
            return jax.make_array_from_callback(value.shape, self.replicated, lambda i: value[i])

        return load_params(self.config.init_from, self.model_config, put)

    def abstract_state(self, k: int | None = None) -> State:
        """Shapes, dtypes and shardings of a K-member state (k=None: one member, no K axis)."""
        zeros = {f: jnp.float32(0) for f in optim.member_values(self.config)}
        shapes = jax.eval_shape(self._member_init, jax.random.PRNGKey(0), zeros)
        lead = () if k is None else (k,)
        return jax.tree.map(
            lambda s: jax.ShapeDtypeStruct(lead + s.shape, s.dtype, sharding=self.replicated),
            shapes,
        )

    def member(self, state: State, i: int) -> State:
        """Member i's state without the member axis (what a run directory checkpoints)."""
        return jax.tree.map(lambda x: x[i], state)

    def stack(self, members: list[State]) -> State:  # K member states -> a leading K axis
        return jax.device_put(jax.tree.map(lambda *xs: jnp.stack(xs), *members), self.replicated)

    def model(self, state: State, i: int = 0) -> nnx.Module:
        return nnx.merge(self.graphdef, self.member(state, i)["params"], self.rest)

    def evaluate(self, state: State, configs=None, wait=None, final=False) -> list[dict]:
        """Each member's evaluation; member i's return time is `configs[i]`'s (default: ours)."""
        configs = [self.config] * len(state["step"]) if configs is None else configs
        return self.evaluation.evaluate(state, configs, wait, final)

    def lower_step(self, k: int = 1) -> jax.stages.Lowered:
        """The step of K members lowered without running (HLO and cost checks)."""
        if self.host_windows is not None:
            rows = jax.ShapeDtypeStruct((k, self.config.batch_size, self.config.seq_len), jnp.int32)
            return self._step.lower(self.abstract_state(k), None, {"batch": rows})
        return self._step.lower(self.abstract_state(k), *([self.shared] if self.shared else []))


_SHARED: dict = {}  # the newest Programs by (program_key, mesh), least recently used first


def program(config: TrainConfig, mesh: jax.sharding.Mesh | None = None) -> Program:
    """The Program of `config`, sharing compiled functions per `program_key`."""
    mesh = default_mesh() if mesh is None else mesh
    key = (program_key(config), mesh)
    _SHARED[key] = shared = _SHARED.pop(key, None) or Program(config, mesh)
    if len(_SHARED) > 8:
        del _SHARED[next(iter(_SHARED))]
    if shared.config is config:
        return shared
    own = copy.copy(shared)  # the same jitted functions, evaluation and tables
    own.config = config
    return own
