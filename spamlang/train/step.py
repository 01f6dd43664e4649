"""The train state, the one jitted train step, and `Trainer`, the interface the run loop uses.

Design (nanodo / levanter style):
- The state is a plain dict pytree: params (nnx.State of the model's Params), opt_state,
  step, lr (the peak LR, a float32 array so a vmapped group holds K of them), data_key,
  diverged, diverged_step (-1 while the run is healthy).
- The step is ONE pure function `step_fn(state, rest) -> (state, metrics)` (rest: the model's
  non-parameter variables, usually empty), jitted in one place with the state donated. It
  draws its own batch from `fold_in(data_key, step)`, so there is no host data pipeline and a
  resumed run sees exactly the batches it would have seen.
- Data parallel with `jit` + shardings over a 1-D mesh ("data",) of every device: the batch
  is sharded on "data", parameters and optimizer state are replicated, and XLA inserts the
  gradient all-reduce. Row r of step s is `lang.sample(fold_in(fold_in(data_key, s), r), 1, L)`
  generated from a row-index vector sharded on "data", so each device generates only its own
  rows and the global batch is the same for any number of devices.
- Micro-batches (`micro_batch`, auto on CPU): the gradient is averaged over a `lax.scan` of
  micro-batches inside the same step, so activations stay cache-sized; see `micro_batches`.
- Divergence (a non-finite loss or gradient norm, or loss > config.diverge_loss) sets
  `diverged` and `diverged_step` and freezes params and optimizer state, all on device: no
  host sync. The run loop sees it when it fetches metrics.

Several hosts: run the same program on every host after `jax.distributed.initialize()`
(which reads SLURM's / the cluster's environment; e.g. `srun --ntasks-per-node=1 spamlang
train ...` with the CLI calling it first). `jax.devices()` is then the global device list,
the default mesh spans every host, and each process generates only the rows of the batch
that live on its devices; nothing else changes.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec as P

from spamlang.errors import UserError
from spamlang.loss import next_token_loss
from spamlang.model import Transformer
from spamlang.train import optim
from spamlang.train.config import TrainConfig
from spamlang.train.evaluate import make_eval_fn, sample_rows, sharded_rows

State = dict[str, Any]


def default_mesh() -> jax.sharding.Mesh:
    """A 1-D ("data",) mesh over every device (of every host), with automatic sharding."""
    n = jax.device_count()
    return jax.make_mesh((n,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))


# Auto micro-batches on CPU keep a micro-batch's widest activation -- [tokens, d_ff] in the
# MLP or [tokens, n_heads * seq_len] attention probabilities, float32 -- within 1 MiB, half of
# a 2 MiB L2 cache. Measured on the 2-core development machine: `small` at seq 128 (512
# tokens per micro-batch) 1.4x the whole-batch throughput; `tiny` at seq 64 (the whole
# 2,048-token batch fits) would lose 12% at V = 4,096 if it were split.
_CPU_MICRO_FLOATS = 2**18


def micro_batches(config: TrainConfig, mesh: jax.sharding.Mesh) -> int:
    """How many micro-batches the step of `config` scans over on `mesh` (1: the whole batch)."""
    n_dev = mesh.devices.size
    rows = config.batch_size // n_dev  # per device
    if config.micro_batch:
        if config.micro_batch % n_dev:
            raise UserError(f"micro_batch ({config.micro_batch}) must be divisible by the number "
                            f"of devices ({n_dev})")
        return config.batch_size // config.micro_batch
    if mesh.devices.flat[0].platform != "cpu":
        return 1
    model = config.model_config()
    width = max(model.d_ff, model.n_heads * config.seq_len)
    want = max(1, _CPU_MICRO_FLOATS // (width * config.seq_len))  # rows per micro-batch
    micro_rows = max(r for r in range(1, min(want, rows) + 1) if rows % r == 0)
    return rows // micro_rows


def make_step_fn(config: TrainConfig, graphdef, lang, mesh, tx, schedule):
    """The pure train step `(state, rest) -> (state, metrics)` of `config` (not jitted).

    Shared by `Trainer` (jitted as is) and `GroupTrainer` (jitted under vmap), so a group
    member runs exactly the same computation as its sequential run.
    """
    B, L = config.batch_size, config.seq_len
    chunk = config.loss_chunk or None
    shard = mesh.devices.size > 1
    limit = jnp.float32(config.diverge_loss)
    batch_sharding = NamedSharding(mesh, P("data", None))
    n_micro = micro_batches(config, mesh)

    def loss_fn(params, rest, tokens_BxL):
        return next_token_loss(nnx.merge(graphdef, params, rest), tokens_BxL, chunk_size=chunk)

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    def loss_and_grads(params, rest, tokens_BxL):
        if n_micro == 1:
            return grad_fn(params, rest, tokens_BxL)
        # Micro-batch i takes rows j * n_micro + i, so each device's rows split evenly
        # across micro-batches and every device works on every micro-batch.
        tokens_MxbxL = tokens_BxL.reshape(B // n_micro, n_micro, L).swapaxes(0, 1)
        if shard:
            tokens_MxbxL = jax.lax.with_sharding_constraint(
                tokens_MxbxL, NamedSharding(mesh, P(None, "data", None)))

        def accumulate(total, tokens_bxL):
            return jax.tree.map(jnp.add, total, grad_fn(params, rest, tokens_bxL)), None

        zeros = jax.tree.map(jnp.zeros_like, jax.eval_shape(grad_fn, params, rest, tokens_MxbxL[0]))
        total, _ = jax.lax.scan(accumulate, zeros, tokens_MxbxL)
        # Every micro-batch has the same number of predicted tokens: the mean of the
        # micro-batch means is the batch mean.
        return jax.tree.map(lambda x: x / n_micro, total)

    def step_fn(state: State, rest) -> tuple[State, dict]:
        step = state["step"]
        with jax.named_scope("data"):
            key = jax.random.fold_in(state["data_key"], step)
            tokens_BxL = sample_rows(lang, key, sharded_rows(B, mesh, shard), L)
            if shard:
                tokens_BxL = jax.lax.with_sharding_constraint(tokens_BxL, batch_sharding)

        (loss, aux), grads = loss_and_grads(state["params"], rest, tokens_BxL)
        with jax.named_scope("optimizer"):
            grad_norm = optax.tree.norm(grads)
            updates, opt_state = tx.update(grads, state["opt_state"], state["params"])
            lr_t = state["lr"] * schedule(step)
            params = jax.tree.map(lambda p, u: (p + lr_t * u).astype(p.dtype), state["params"],
                                  updates)

        bad = ~(jnp.isfinite(loss) & jnp.isfinite(grad_norm)) | (loss > limit)
        frozen = state["diverged"] | bad

        def keep_old_if_frozen(new, old):
            return jax.tree.map(lambda n, o: jnp.where(frozen, o, n), new, old)

        new_state = {
            "params": keep_old_if_frozen(params, state["params"]),
            "opt_state": keep_old_if_frozen(opt_state, state["opt_state"]),
            "step": step + 1,
            "lr": state["lr"],
            "data_key": state["data_key"],
            "diverged": frozen,
            "diverged_step": jnp.where(bad & ~state["diverged"], step, state["diverged_step"]),
        }
        metrics = {"loss": loss, "accuracy": aux["accuracy"], "grad_norm": grad_norm,
                   "lr": lr_t.astype(jnp.float32)}
        return new_state, metrics

    return step_fn


# Fields that change neither the step nor the evaluation program: runs that differ only in
# these share one compiled program (lr is state; seed only enters the initial state).
_NOT_COMPILED = dict(lr=1e-3, seed=0, log_every=1, eval_every=0, checkpoint_every=0,
                     keep_checkpoints=1, diag_every=0)
_PROGRAMS: "OrderedDict[tuple, Program]" = OrderedDict()
_MAX_PROGRAMS = 8


class Program:
    """Everything compiled for one config, shared by every run that differs only in lr, seed
    and logging cadence (a sweep over LRs compiles once per process)."""

    def __init__(self, config: TrainConfig, mesh: jax.sharding.Mesh):
        self.mesh = mesh
        self.lang = config.make_language()
        self.model_config = config.model_config()
        self.tx, self.schedule = optim.from_config(config)
        self.replicated = NamedSharding(mesh, P())

        abstract = nnx.eval_shape(lambda: Transformer(self.model_config, rngs=nnx.Rngs(0)))
        self.graphdef = nnx.split(abstract, nnx.Param, ...)[0]
        self.init_jit = jax.jit(self.init_fn, out_shardings=self.replicated)
        # Non-parameter variables (none in the current model) are constants of the run.
        self.rest = jax.jit(lambda: nnx.split(
            Transformer(self.model_config, rngs=nnx.Rngs(0)), nnx.Param, ...)[2],
            out_shardings=self.replicated)()

        self.step_fn = make_step_fn(config, self.graphdef, self.lang, mesh, self.tx, self.schedule)
        self.step_jit = jax.jit(self.step_fn, donate_argnums=0,
                                out_shardings=(self.replicated, self.replicated))
        eval_model = make_eval_fn(self.lang, config.seq_len, config.eval_sequences,
                                  config.batch_size, config.loss_chunk or None, mesh)
        self.eval_fn = lambda params, rest: eval_model(nnx.merge(self.graphdef, params, rest))
        self.eval_jit = jax.jit(self.eval_fn, out_shardings=self.replicated)
        # The vmapped versions for GroupTrainer (jit retraces per group size by itself).
        self.group_step_jit = jax.jit(jax.vmap(self.step_fn, in_axes=(0, None)), donate_argnums=0,
                                      out_shardings=(self.replicated, self.replicated))
        self.group_eval_jit = jax.jit(jax.vmap(self.eval_fn, in_axes=(0, None)),
                                      out_shardings=self.replicated)
        self.optimal_loss = float(self.lang.optimal_loss(config.seq_len))
        self.flops_per_step = _flops_per_token(self.model_config, config.seq_len) \
            * config.tokens_per_step

    def init_fn(self, key: jax.Array, lr: jax.Array) -> State:
        """The step-0 state from a PRNG key (split into the init and data streams) and the peak LR."""
        param_key, data_key = jax.random.split(key)
        model = Transformer(self.model_config, rngs=nnx.Rngs(params=param_key))
        params = nnx.split(model, nnx.Param, ...)[1]
        return {
            "params": params,
            "opt_state": self.tx.init(params),
            "step": jnp.zeros((), jnp.int32),
            "lr": jnp.asarray(lr, jnp.float32),
            "data_key": data_key,
            "diverged": jnp.zeros((), jnp.bool_),
            "diverged_step": jnp.full((), -1, jnp.int32),
        }


def program(config: TrainConfig, mesh: jax.sharding.Mesh) -> Program:
    """The (cached) compiled program of `config` on `mesh`."""
    shared = config.replace(**_NOT_COMPILED)
    key = (json.dumps(shared.to_json(), sort_keys=True), mesh)
    if key not in _PROGRAMS:
        _PROGRAMS[key] = Program(shared, mesh)
        while len(_PROGRAMS) > _MAX_PROGRAMS:
            _PROGRAMS.popitem(last=False)
    _PROGRAMS.move_to_end(key)
    return _PROGRAMS[key]


class Trainer:
    """One run's model, optimizer, jitted step and evaluation, on a data-parallel mesh.

    >>> trainer = Trainer(TrainConfig(vocab_size=64, tokens=64 * 32 * 100))
    >>> state = trainer.init_state()
    >>> state, metrics = trainer.step(state)    # device scalars; fetch them when logging
    >>> trainer.evaluate(state)["eval_loss"]
    """

    def __init__(self, config: TrainConfig, mesh: jax.sharding.Mesh | None = None):
        self.config = config
        mesh = default_mesh() if mesh is None else mesh
        if "data" not in mesh.axis_names:
            raise UserError(f"the mesh needs a 'data' axis, got axes {mesh.axis_names}")
        n_dev = mesh.devices.size
        if config.batch_size % n_dev:
            raise UserError(f"batch_size ({config.batch_size}) must be divisible by the number "
                            f"of devices ({n_dev})")
        self.program = program(config, mesh)
        p = self.program
        self.mesh, self.lang, self.model_config = p.mesh, p.lang, p.model_config
        self.replicated, self.graphdef, self._rest = p.replicated, p.graphdef, p.rest
        self.step_fn, self.eval_fn = p.step_fn, p.eval_fn
        self.optimal_loss, self.flops_per_step = p.optimal_loss, p.flops_per_step

    # ----- state ---------------------------------------------------------------------------
    def init_state(self, *, seed: int | None = None, lr: float | None = None) -> State:
        """The step-0 state (params replicated on the mesh) from config.seed and config.lr.

        `seed` / `lr` override the config's (GroupTrainer builds its members this way).
        """
        seed = self.config.seed if seed is None else seed
        lr = self.config.lr if lr is None else lr
        return self.program.init_jit(jax.random.PRNGKey(seed), jnp.float32(lr))

    def abstract_state(self) -> State:
        """The state's shapes, dtypes and shardings (jax.ShapeDtypeStruct), for orbax restore."""
        shapes = jax.eval_shape(self.program.init_fn, jax.random.PRNGKey(0), jnp.float32(0))
        return jax.tree.map(
            lambda s: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=self.replicated), shapes)

    def model(self, state: State) -> nnx.Module:
        """The model with the state's parameters (for sampling and diagnostics)."""
        return nnx.merge(self.graphdef, state["params"], self._rest)

    # ----- step and evaluation -------------------------------------------------------------
    def step(self, state: State) -> tuple[State, dict]:
        """One optimizer step; `state` is donated (do not reuse it). Metrics stay on device."""
        return self.program.step_jit(state, self._rest)

    def evaluate(self, state: State) -> dict[str, float]:
        """eval_loss, loss_above_floor, eval_accuracy, repetition_accuracy (host floats)."""
        out = jax.device_get(self.program.eval_jit(state["params"], self._rest))
        return with_floor({k: float(v) for k, v in out.items()}, self.optimal_loss)


def with_floor(metrics: dict[str, float], optimal_loss: float) -> dict[str, float]:
    """The eval metrics in contract order, with loss_above_floor = eval_loss - optimal_loss."""
    return {"eval_loss": metrics["eval_loss"],
            "loss_above_floor": metrics["eval_loss"] - optimal_loss,
            "eval_accuracy": metrics["eval_accuracy"],
            "repetition_accuracy": metrics["repetition_accuracy"]}


def _flops_per_token(model_config, seq_len: int) -> float:
    """Training FLOPs per token (6N + attention; see spamlang.perf)."""
    from spamlang.perf import flops_per_token

    return float(flops_per_token(model_config, seq_len))
