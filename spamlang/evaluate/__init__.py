"""A run's evaluation: the fixed eval set's metrics (`sets`), the coverage so far, the
held-out symbols and the per-symbol learning, one row per member.

`Evaluation(config, lang, graphdef, rest, mesh, optimal_loss)` compiles the eval once for a
program; `evaluate(state)` and `symbol_stats(state)` take a state with a member axis (the
train state's params and exposure counts) and return a list of dicts, member by member.
"""

from __future__ import annotations

import jax
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec as P

from spamlang.coverage import exposure, symbols
from spamlang.evaluate.sets import HELDOUT_KEYS, make_eval_fn, make_heldout_eval_fn
from spamlang.members import over_members


class Evaluation:
    """The jitted evaluation of one training config's models (any number of members)."""

    def __init__(self, config, lang, graphdef, rest, mesh: jax.sharding.Mesh,
                 optimal_loss: float):
        self.config, self.lang, self.optimal_loss = config, lang, optimal_loss
        replicated = NamedSharding(mesh, P())
        args = (config.seq_len, config.eval_sequences, config.eval_batch,
                config.loss_chunk or None, mesh)
        eval_model = make_eval_fn(lang, *args)
        heldout_eval = make_heldout_eval_fn(lang, *args)  # None without a holdout

        def member_eval(member):
            model = nnx.merge(graphdef, member["params"], rest)
            out = eval_model(model, member["exposure"])
            if heldout_eval is not None:
                out.update(heldout_eval(model, member["exposure"]))
            return out

        self._eval = jax.jit(over_members(member_eval), out_shardings=replicated)
        # Its own program, not part of the eval's: it depends on the model's shapes alone, so
        # runs that differ in anything else (LR, optimizer, language parameters) share it
        # through the compilation cache.
        self._symbols = None
        if symbols.applies(lang):
            symbol_fn = symbols.make_symbol_fn(config.vocab_size, config.eval_batch,
                                               config.loss_chunk or None)
            self._symbols = jax.jit(over_members(
                lambda member: symbol_fn(nnx.merge(graphdef, member["params"], rest))),
                out_shardings=replicated)

    def evaluate(self, state, configs: list | None = None, wait=None) -> list[dict[str, float]]:
        """Each member's evaluation (`spamlang.evaluate.sets`: the loss, its floor, accuracies,
        the seen / unseen split), its coverage so far (`spamlang.coverage.exposure.summary`) and
        its return time against its Adam memory, from `configs[i]` (default: the program's
        config, whose b2 is a placeholder when members differ in it). `wait(arrays)` is called
        on the dispatched evaluation before it is read (the loop shows progress there)."""
        dispatched = self._eval({"params": state["params"], "exposure": state["exposure"]})
        if wait is not None:
            wait(dispatched)
        out, counts = jax.device_get((dispatched, state["exposure"]))
        sequences = self.config.steps * self.config.batch_size
        symbol_loss = None if self._symbols is None else \
            jax.device_get(self._symbols({"params": state["params"]}))
        rows = []
        for i in range(len(counts)):
            row = {k: float(v[i]) for k, v in out.items()}
            row["loss_above_floor"] = row["eval_loss"] - self.optimal_loss
            for k in ("eval_seen_sequences", "eval_unseen_sequences"):
                row[k] = int(row[k])
            row.update(self._heldout_exposure(counts[i]))
            row.update(self._learning(symbol_loss, counts, i))
            rows.append({**row, **exposure.summary(counts[i], sequences),
                         **(self.config if configs is None else configs[i]).return_time})
        return rows

    def symbol_stats(self, state) -> list[dict]:
        """Each member's per-symbol learning (`spamlang.coverage.symbols.learning_curve`) now;
        [] for languages without per-symbol scores. Cheap: S x 2 tokens per member."""
        if self._symbols is None:
            return []
        losses, counts = jax.device_get((self._symbols({"params": state["params"]}),
                                         state["exposure"]))
        return [self._learning(losses, counts, i) for i in range(len(counts))]

    def _learning(self, symbol_loss, counts, i: int) -> dict:
        if symbol_loss is None:
            return dict.fromkeys(symbols.RESULT_KEYS)
        return symbols.learning_curve(symbol_loss[i], counts[i], self.config.vocab_size)

    def _heldout_exposure(self, counts_V) -> dict:
        """The held-out symbols and the most training sequences any of them occurred in
        (0 unless training drew one: the check that the holdout held)."""
        held = getattr(self.lang, "heldout_ids", lambda: ())()
        if not len(held):
            return {"heldout_symbols": None, "heldout_exposure_max": None,
                    **dict.fromkeys(HELDOUT_KEYS)}
        return {"heldout_symbols": len(held), "heldout_exposure_max": int(counts_V[held].max())}
