"""The same sweep at another sequence length, for languages where the length changes nothing.

With RoPE a SpamLang sequence (one symbol repeated) has the same hidden state at every
position, and the loss averages over positions, so a run's result is fixed by V, the model, the
batch, the steps, the LR schedule and the seed: the sequence length only multiplies the
compute. `at_seq_len(sweep, 2)` is the sweep with every point at L = 2 and the same batch and
step count (each token budget scaled to match), which costs about 2 / L of the original. It is
refused for languages whose positions differ (`Language.position_invariant`), and for sweeps
that vary the sequence length themselves, whose question is the length.
"""

from __future__ import annotations

from typing import Any

from spamlang.errors import UserError
from spamlang.sweep.spec import Sweep, fields_of


def _budget(tokens: int, batch_size: int, old_len: int, new_len: int) -> int:
    """The token budget that keeps the step count of `tokens` at the new length."""
    return tokens // (batch_size * old_len) * batch_size * new_len


def at_seq_len(sweep: Sweep, seq_len: int) -> Sweep:
    """`sweep` with every point at `seq_len` and its batch and steps unchanged (module doc);
    named `<name>-L<seq_len>` so that it never mixes with the original's runs."""
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 2:
        raise UserError(f"--seq-len must be an integer >= 2, got {seq_len!r}")
    fields = [n for axis in sweep.axes for n in fields_of(axis)]
    if "seq_len" in fields:
        raise UserError(
            f"sweep {sweep.name!r} varies seq_len itself; --seq-len would erase that axis"
        )
    for run_id, config in sweep.points():
        if not config.make_language().position_invariant:
            raise UserError(
                f"--seq-len: run {run_id} trains on {config.language!r}, whose "
                "positions differ (context matters), so its length changes the "
                "run; only position-invariant languages (spam, zipf-spam) can"
            )
    base = sweep.base
    old = base.seq_len

    def scaled(axis: str, value: Any) -> Any:
        names = fields_of(axis)
        if "tokens" not in names:
            return value
        values = list(value) if len(names) > 1 else [value]
        batch = values[names.index("batch_size")] if "batch_size" in names else base.batch_size
        i = names.index("tokens")
        values[i] = _budget(values[i], batch, old, seq_len)
        return values if len(names) > 1 else values[0]

    short = Sweep(
        f"{sweep.name}-L{seq_len}",
        base.replace(seq_len=seq_len, tokens=_budget(base.tokens, base.batch_size, old, seq_len)),
        {axis: [scaled(axis, v) for v in values] for axis, values in sweep.axes.items()},
        bracket_lr=sweep.bracket_lr,
        overrides=sweep.overrides,
    )
    for (run_id, a), (_, b) in zip(sweep.points(), short.points()):
        if (a.steps, a.batch_size) != (b.steps, b.batch_size):
            # One budget over several batch sizes that do not divide it evenly.
            raise UserError(
                f"--seq-len: run {run_id} would change from {a.steps} to {b.steps} "
                "steps; give each batch size its own tokens (a linked axis)"
            )
    return short
