"""A run's evaluation, one row per member: the eval metrics, the coverage so far, the
held-out symbols and the per-symbol learning. Position-invariant languages (spam, zipf-spam)
are scored exactly (`exact`, `eval_method` "exact"), languages with context on a fixed sample of
sequences (`sets`, "sampled"). `Evaluation` compiles it once for a program.
"""

from __future__ import annotations

import jax
import numpy as np
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from spamlang.coverage import exposure, symbols
from spamlang.evaluate import exact
from spamlang.evaluate.sets import make_eval_fn
from spamlang.members import over_members
from spamlang.rundir.schema import HELDOUT_COLUMNS

# A held-out evaluation scores at least this many sequences (the eval set's size if larger).
HELDOUT_SEQUENCES = 1024


class Evaluation:  # the jitted evaluation of one config's members
    def __init__(self, config, lang, graphdef, rest, mesh: jax.sharding.Mesh, optimal_loss: float):
        self.config, self.lang, self.optimal_loss = config, lang, optimal_loss
        replicated = NamedSharding(mesh, P())
        self.exact = exact.applies(lang)
        if self.exact:
            self.probability_V = np.asarray(lang.symbol_probabilities(), np.float64)
            symbol_fn = exact.make_symbol_fn(
                config.vocab_size, config.eval_batch, config.loss_chunk or None, mesh
            )
            self._symbols = jax.jit(
                over_members(lambda member: symbol_fn(nnx.merge(graphdef, member["params"], rest))),
                out_shardings=replicated,
            )
            return
        args = (config.eval_batch, config.loss_chunk or None, mesh)
        eval_model = make_eval_fn(lang, config.seq_len, config.eval_sequences, *args)
        # The held-out symbols (never drawn in training) on a fixed set of their own.
        heldout_eval = None
        if getattr(lang, "n_heldout", 0):
            n_heldout = max(config.eval_sequences, HELDOUT_SEQUENCES)
            heldout_eval = make_eval_fn(lang.heldout_view(), config.seq_len, n_heldout, *args)

        def member_eval(member):
            model = nnx.merge(graphdef, member["params"], rest)
            out = eval_model(model, member["exposure"])
            if heldout_eval is not None:
                held = heldout_eval(model, member["exposure"])
                metrics = ("eval_loss", "eval_accuracy", "repetition_accuracy")
                out.update(zip(HELDOUT_COLUMNS, (held[k] for k in metrics)))
            return out

        self._eval = jax.jit(over_members(member_eval), out_shardings=replicated)

    def evaluate(self, state, configs: list, wait=None, final: bool = False) -> list[dict]:
        """Each member's evaluation, coverage and return time (`configs[i]`'s); exact rows also hold
        "symbol_loss". `wait(arrays)` sees the dispatched evaluation; `final` is a corpus's."""
        if self.exact:
            dispatched = self._symbols({"params": state["params"]})
        else:
            dispatched = self._eval({"params": state["params"], "exposure": state["exposure"]})
        if wait is not None:
            wait(dispatched)
        out, counts = jax.device_get((dispatched, state["exposure"]))
        sequences = self.config.steps * self.config.batch_size
        held = getattr(self.lang, "heldout_ids", lambda: ())()
        rows = []
        for i in range(len(counts)):
            if self.exact:
                loss_V, hit_V = out[0][i], out[1][i]
                row = exact.metrics(loss_V, hit_V, self.probability_V, counts[i], held)
                row.update(
                    symbols.learning_curve(loss_V, counts[i]),
                    symbol_loss=loss_V,
                    eval_method="exact",
                )
            else:
                row = {k: float(v[i]) for k, v in out.items()}
                for k in ("eval_seen_sequences", "eval_unseen_sequences"):
                    row[k] = int(row[k])
                row.update(dict.fromkeys(symbols.RESULT_KEYS), eval_method="sampled")
            row["loss_above_floor"] = row["eval_loss"] - self.optimal_loss
            # The most training sequences a held-out symbol occurred in: 0 if the holdout held.
            held_max = int(counts[i][held].max()) if len(held) else None
            row.update(heldout_symbols=len(held) or None, heldout_exposure_max=held_max)
            row.update({k: row.get(k) for k in HELDOUT_COLUMNS[:3]})
            rows.append({**row, **exposure.summary(counts[i], sequences), **configs[i].return_time})
        return rows

    def symbol_stats(self, state) -> list[dict]:
        """Each member's `symbols.learning_curve` now ([] without per-symbol scores)."""
        if not self.exact:
            return []
        (losses, _), counts = jax.device_get(
            (self._symbols({"params": state["params"]}), state["exposure"])
        )
        return [symbols.learning_curve(losses[i], counts[i]) for i in range(len(counts))]
