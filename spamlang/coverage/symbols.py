"""Per-symbol sample complexity: how many updates a SpamLang symbol needs before it is learned.

A run's mean loss mixes symbols that training showed often with symbols it showed rarely.
Here every symbol (or an evenly spaced 4,096 of them when V is larger) is scored on its own
sequence `s s ... s`, and the scores are binned by the symbol's exposure (training sequences
that showed it, `spamlang.coverage.exposure`). A symbol counts as learned when its loss is under
`LEARNED_FRACTION` x log V (a tenth of the uniform guess's loss).

`updates_to_learn` is the exposure at which half of the symbols are learned: the first bin,
in increasing exposure, whose learned fraction reaches 1/2, interpolated linearly in exposure
from the bin before it. The two ways the data can fail to pin it down are reported, not
hidden (`updates_to_learn_bound`):
- "upper": already the least-exposed bin of seen symbols is at least half learned; the number
  is that bin's exposure, an upper bound. (When even the never-seen symbols are half learned,
  the model copies symbols it never trained on: the number is 0, exact.)
- "not reached": no bin reaches 1/2; the number is empty.
What separates the explanations: under pure coverage a symbol needs the same number of
updates at every V; under the head's bottleneck the number grows with V / rank.

Scoring uses length-2 sequences: SpamLang is position invariant under RoPE (every position of
`s s ... s` has the same hidden state), so the loss of `s s` is the loss at every position,
at a cost of S x 2 tokens.
"""

from __future__ import annotations

import math

import numpy as np

# A symbol is learned when its loss is under this fraction of log V.
LEARNED_FRACTION = 0.1
# Symbols scored per run at most (evenly spaced ids above this V).
MAX_SYMBOLS = 4096
# Adjacent exposure counts are pooled until a bin holds this many symbols, so that a learned
# fraction is not one symbol's coin flip.
MIN_BIN = 32
SCORE_LEN = 2
# What `learning_curve` returns, "symbol_curve" (the bins) aside.
RESULT_KEYS = ("updates_to_learn", "updates_to_learn_bound", "symbols_learned", "symbol_curve")


def applies(lang) -> bool:
    """Languages whose per-symbol score is one repeated symbol's loss (spam, zipf-spam)."""
    return bool(getattr(lang, "position_invariant", False))


def symbol_ids(vocab_size: int) -> np.ndarray:
    """int32[S]: every id when V <= MAX_SYMBOLS, else MAX_SYMBOLS evenly spaced ids."""
    n = min(vocab_size, MAX_SYMBOLS)
    return (np.arange(n, dtype=np.int64) * vocab_size // n).astype(np.int32)


def make_symbol_fn(vocab_size: int, batch_size: int, chunk_size):
    """A pure function `model -> float32[S]`: each of `symbol_ids(V)`'s loss on `s s`.

    Scored `batch_size` symbols at a time inside a `lax.map` (a last partial batch padded
    with id 0 and dropped), so memory stays at the eval's.
    """
    import jax.numpy as jnp
    from jax import lax

    from spamlang.loss import chunk_rows, token_stats, unchunk_rows

    ids_S = symbol_ids(vocab_size)
    S = len(ids_S)
    batch = min(batch_size, S)
    ids_KxB = chunk_rows(ids_S, batch)  # NumPy: the last batch padded with id 0

    def symbol_fn(model):
        def one(ids_b):
            tokens_bx2 = jnp.broadcast_to(ids_b[:, None], (batch, SCORE_LEN))
            nll_bx1, _ = token_stats(model, tokens_bx2, chunk_size=chunk_size)
            return nll_bx1.mean(axis=1)

        if len(ids_KxB) == 1:  # V <= the eval batch: no loop to compile
            return one(jnp.asarray(ids_KxB[0]))[:S]
        return unchunk_rows(lax.map(one, jnp.asarray(ids_KxB)), S)

    return symbol_fn


def learning_curve(losses_S, exposure_V, vocab_size: int) -> dict:
    """The binned curve and `updates_to_learn` from one member's symbol losses (host side).

    Returns {"updates_to_learn", "updates_to_learn_bound", "symbols_learned",
    "symbol_curve": {"exposure", "loss_median", "loss_mean", "learned", "symbols"}} (one entry
    per bin; "exposure" is the bin's mean exposure).
    """
    losses = np.asarray(losses_S, np.float64)
    exposure = np.asarray(exposure_V)[symbol_ids(vocab_size)]
    threshold = LEARNED_FRACTION * math.log(vocab_size)
    learned = losses < threshold
    bins = _bins(exposure)
    curve = {"exposure": [], "loss_median": [], "loss_mean": [], "learned": [], "symbols": []}
    for members in bins:
        curve["exposure"].append(float(exposure[members].mean()))
        curve["loss_median"].append(float(np.median(losses[members])))
        curve["loss_mean"].append(float(losses[members].mean()))
        curve["learned"].append(float(learned[members].mean()))
        curve["symbols"].append(int(members.size))
    seen = [k for k, x in enumerate(curve["exposure"]) if x > 0]
    if len(seen) < len(bins) and curve["learned"][0] >= 0.5:  # it copies never-seen symbols
        value, bound = 0.0, ""
    else:  # never-seen symbols say nothing of how many updates a seen one needs
        value, bound = crossing([curve["exposure"][k] for k in seen],
                                [curve["learned"][k] for k in seen])
    return {"updates_to_learn": value, "updates_to_learn_bound": bound,
            "symbols_learned": float(learned.mean()), "symbol_curve": curve}


def _bins(exposure_S: np.ndarray) -> list[np.ndarray]:
    """Indices grouped by exposure: the never-seen symbols on their own, then one group per
    distinct count, adjacent counts pooled until a group holds MIN_BIN symbols (a short last
    group joins the one before it)."""
    order = np.argsort(exposure_S, kind="stable")
    counts = exposure_S[order]
    start = int(np.sum(counts == 0))
    groups = [order[:start]] if start else []
    for end in range(1, len(order) + 1):
        at_edge = end == len(order) or counts[end] != counts[end - 1]
        if at_edge and end - start >= MIN_BIN:
            groups.append(order[start:end])
            start = end
    if start < len(order):
        if len(groups) > (counts[0] == 0):
            groups[-1] = np.concatenate([groups[-1], order[start:]])
        else:
            groups.append(order[start:])
    return groups


def crossing(exposure: list[float], learned: list[float]) -> tuple[float | None, str]:
    """(exposure where the learned fraction first reaches 1/2, bound) over ascending bins."""
    for k, fraction in enumerate(learned):
        if fraction < 0.5:
            continue
        if k == 0:
            return exposure[0], "upper"
        x0, x1, y0, y1 = exposure[k - 1], exposure[k], learned[k - 1], fraction
        return x0 + (0.5 - y0) * (x1 - x0) / (y1 - y0), ""
    return None, "not reached"
