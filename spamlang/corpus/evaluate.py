"""A corpus run's evaluation, exact: every non-overlapping `seq_len` window of val.bin at the
end (the first 32K val tokens for evaluations during training), each target's loss summed by
its token id, so that the loss is tabulated by each token's fate (`spamlang.corpus.buckets`).
Every row also has `val_start_loss`, the first 32K tokens' loss, so that curves share one set."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from spamlang.corpus import buckets
from spamlang.corpus.files import open_corpus
from spamlang.loss import token_stats
from spamlang.members import over_members
from spamlang.rundir.schema import COVERAGE_COLUMNS

DURING_TRAINING_TOKENS = 32 * 1024  # val tokens scored by evaluations before the last
# What a language's evaluation reports that a corpus has no meaning for: empty in results.csv.
_EMPTY = (
    "repetition_accuracy",
    "loss_above_floor",
    *(c for c in COVERAGE_COLUMNS if c.startswith(("eval_", "repetition_"))),
)


def val_windows(val: np.ndarray, seq_len: int, max_tokens: int | None = None) -> np.ndarray:
    """int32[n, L]: the non-overlapping windows of val.bin (of its first `max_tokens`)."""
    tokens = val if max_tokens is None else val[:max_tokens]
    n = len(tokens) // seq_len
    return np.asarray(tokens[: n * seq_len], np.int32).reshape(n, seq_len)


class CorpusEvaluation:  # the jitted per-batch evaluation of one config's members
    exact = False  # no per-symbol scores of a position-invariant language

    def __init__(self, config, graphdef, rest, mesh: jax.sharding.Mesh):
        self.config, self.mesh = config, mesh
        corpus = open_corpus(config.corpus)
        V, L = corpus.vocab_size, config.seq_len
        self.final_windows = val_windows(corpus.val, L)
        self.training_windows = val_windows(corpus.val, L, DURING_TRAINING_TOKENS)
        if not len(self.training_windows):
            self.training_windows = self.final_windows
        targets = self.final_windows[:, 1:].reshape(-1)
        self.val_count_V = np.bincount(targets, minlength=V)
        self.unigram_loss = buckets.unigram_loss(self.val_count_V)
        self.batch = config.eval_batch_size or max(config.batch_size, 256)
        n_dev = mesh.devices.size
        split = n_dev > 1 and self.batch % n_dev == 0
        chunk = config.loss_chunk or None

        def member_sums(member, batch, _):
            tokens_bxL, keep_b = batch  # keep_b: 0 on the rows that pad the last batch
            model = nnx.merge(graphdef, member["params"], rest)
            nll_bxLm1, hit_bxLm1 = token_stats(
                model, tokens_bxL, chunk_size=chunk, mesh=mesh if split else None
            )
            nll = jnp.where(keep_b[:, None], nll_bxLm1, 0.0).reshape(-1)
            loss_V = jnp.zeros(V, jnp.float32).at[tokens_bxL[:, 1:].reshape(-1)].add(nll)
            return loss_V, jnp.where(keep_b[:, None], hit_bxLm1, 0.0).sum()

        self._rows = NamedSharding(mesh, P("data")) if split else NamedSharding(mesh, P())
        self._sums = jax.jit(over_members(member_sums), out_shardings=NamedSharding(mesh, P()))

    def _score(self, params, windows_NxL: np.ndarray, wait=None):
        """(loss_sum float64[K, V], hits float64[K]) over `windows_NxL`, batch by batch."""
        loss, hits = None, None
        for i in range(0, len(windows_NxL), self.batch):
            part = windows_NxL[i : i + self.batch]
            keep = np.arange(self.batch) < len(part)
            if len(part) < self.batch:  # one shape, one compilation
                part = np.concatenate(
                    [part, np.zeros((self.batch - len(part), part.shape[1]), np.int32)]
                )
            batch = jax.device_put((part, keep), self._rows)
            out = self._sums({"params": params}, batch, None)
            if wait is not None and i == 0:
                wait(out)
            out = jax.device_get(out)
            loss = out[0].astype(np.float64) + (0 if loss is None else loss)
            hits = out[1].astype(np.float64) + (0 if hits is None else hits)
        return loss, hits

    def evaluate(self, state, configs: list, wait=None, final: bool = False) -> list[dict]:
        """Each member's eval row; `final`: over all of val.bin, with "target_buckets"."""
        windows = self.final_windows if final else self.training_windows
        loss_KxV, hits_K = self._score(state["params"], windows, wait)
        n_targets = windows.shape[0] * (windows.shape[1] - 1)
        # The set every evaluation during training scores, at the end too: one curve.
        start, n_start = loss_KxV, n_targets
        if final:
            start = self._score(state["params"], self.training_windows)[0]
            n_start = self.training_windows.shape[0] * (self.training_windows.shape[1] - 1)
        history = jax.device_get({k: state[k] for k in ("target_count", "last_target")})
        steps = self.config.steps
        rows = []
        for i, config in enumerate(configs):
            row = {
                "eval_loss": float(loss_KxV[i].sum() / n_targets),
                "eval_accuracy": float(hits_K[i] / n_targets),
                "val_start_loss": float(start[i].sum() / n_start),
                "eval_method": "exact",
                **dict.fromkeys(_EMPTY),
                "adam_memory_steps": config.return_time["adam_memory_steps"],
            }
            if final:
                row["target_buckets"] = buckets.tabulate(
                    loss_KxV[i],
                    self.val_count_V,
                    history["target_count"][i],
                    history["last_target"][i],
                    steps,
                    row["adam_memory_steps"],
                )
                corpus = open_corpus(config.corpus)
                row["corpus"] = {
                    "name": corpus.name,
                    "val_tokens_scored": int(n_targets),
                    "val_unigram_loss": self.unigram_loss,
                    "train_tokens": int(corpus.train.shape[0]),
                    "epochs": config.tokens / int(corpus.train.shape[0]),
                }
            rows.append(row)
        return rows

    def symbol_stats(self, state) -> list[dict]:
        return []
