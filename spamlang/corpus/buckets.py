"""Each token's fate: the validation loss tabulated by how often the token was a training target
(log2 buckets) and how many steps ago it last was one (log2 buckets), with the counts of each
cell; the question is whether a token's loss rises once that gap passes Adam's memory."""

from __future__ import annotations

import numpy as np


def log2_bucket(values: np.ndarray) -> np.ndarray:
    """Bucket b holds [2^(b-1), 2^b) for b >= 1 and 0 holds 0: 0 | 1 | 2-3 | 4-7 | ..."""
    values = np.asarray(values, np.int64)
    out = np.zeros(values.shape, np.int64)
    pos = values > 0
    out[pos] = np.floor(np.log2(values[pos])).astype(np.int64) + 1
    return out


def _edges(b: int) -> tuple[int, int]:
    return (0, 1) if b == 0 else (2 ** (b - 1), 2**b)


def tabulate(
    loss_sum_V, val_count_V, train_count_V, last_target_V, steps: int, memory: float | None
) -> dict:
    """result.json's "target_buckets": a row per (training-target count, steps since last a target)
    cell holding validation targets, with their mean loss."""
    loss_sum = np.asarray(loss_sum_V, np.float64)
    val_n = np.asarray(val_count_V, np.int64)
    train_n = np.asarray(train_count_V, np.int64)
    last = np.asarray(last_target_V, np.int64)
    never = last < 0
    count_b = log2_bucket(train_n)
    age_b = np.where(never, -1, log2_bucket(np.where(never, 0, steps - last)))
    rows = []
    for cb, ab in sorted({(int(c), int(a)) for c, a in zip(count_b[val_n > 0], age_b[val_n > 0])}):
        cell = (count_b == cb) & (age_b == ab) & (val_n > 0)
        n = int(val_n[cell].sum())
        count_lo, count_hi = _edges(cb)
        age_lo, age_hi = (None, None) if ab < 0 else _edges(ab)
        rows.append(
            {
                "count_lo": count_lo,
                "count_hi": count_hi,
                "age_lo": age_lo,
                "age_hi": age_hi,
                "ids": int(cell.sum()),
                "val_targets": n,
                "val_loss": float(loss_sum[cell].sum() / n),
            }
        )
    return {"steps": int(steps), "adam_memory_steps": memory, "rows": rows}


def unigram_loss(val_count_V) -> float:
    """The validation targets' unigram entropy: what no model without context beats."""
    n = np.asarray(val_count_V, np.float64)
    p = n[n > 0] / n.sum()
    return float(-(p * np.log(p)).sum())
