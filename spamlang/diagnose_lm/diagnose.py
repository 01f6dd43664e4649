"""`diagnose_lm`: the bottleneck measurements of a Hugging Face causal LM.

Torch runs the model once and hands over H (N x D), the next tokens and W (V x D); the model is
then freed and `spamlang.diagnostics.diagnose_head` does the rest in JAX, so the peak memory is
the larger of the two stages, not their sum (`spamlang diagnose-lm --help`). The token rows are
taken in file order: a measurement is a function of its inputs alone.
"""

from __future__ import annotations

import gc
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

from spamlang.diagnose_lm.states import head_states, load_weights, open_checkpoint
from spamlang.errors import UserError


def rows_from_text(
    path: str | os.PathLike, tokenizer, *, num_seqs: int | None = None, seq_len: int = 128
) -> np.ndarray:
    """The text of `path` tokenized in one stream, cut into rows of seq_len."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"no such text file: {os.fspath(path)}") from None
    except UnicodeDecodeError as e:
        raise UserError(
            f"{os.fspath(path)!r} is not UTF-8 text ({e.reason} at byte {e.start})"
        ) from None
    # Only as much text as the rows need: a tokenizer on a multi-GB file would take minutes.
    if num_seqs is not None:
        text = text[: num_seqs * seq_len * 64]
    ids = np.asarray(tokenizer(text, add_special_tokens=False)["input_ids"], np.int64)
    n = len(ids) // seq_len
    if num_seqs is not None:
        n = min(n, num_seqs)
    if n < 1:
        raise UserError(
            f"{os.fspath(path)!r} gives {len(ids)} tokens, fewer than one row of "
            f"--seq-len {seq_len}"
        )
    return ids[: n * seq_len].reshape(n, seq_len).astype(np.int32)


def peak_rss_mib() -> float:
    """This process's peak resident memory so far, MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)


def _rows(ckpt, tokens, text, num_seqs, seq_len) -> tuple[np.ndarray, str]:  # and their source
    if (tokens is None) == (text is None):
        raise UserError(
            "give exactly one input: --tokens FILE (a spamlang token file) or --text FILE.txt"
        )
    if num_seqs is not None and num_seqs < 1:
        raise UserError(f"--num-seqs must be >= 1, got {num_seqs}")
    if seq_len is not None and seq_len < 2:
        raise UserError(
            f"--seq-len must be >= 2 (one predicted position needs two tokens), got {seq_len}"
        )
    if text is not None:
        if ckpt.tokenizer is None:
            raise UserError(
                f"{ckpt.path} has no tokenizer to read --text with; pass token "
                "ids with --tokens instead"
            )
        return rows_from_text(
            text, ckpt.tokenizer, num_seqs=num_seqs, seq_len=seq_len or 128
        ), os.fspath(text)
    if isinstance(tokens, (str, os.PathLike)):
        # A `spamlang export` file, each row cut to seq_len (a longer one is an error, not padding).
        from spamlang.token_files import load_tokens

        rows_NxL, source = load_tokens(tokens), os.fspath(tokens)
        N, L = rows_NxL.shape
        if seq_len is not None and seq_len > L:
            raise UserError(
                f"--seq-len {seq_len} is longer than the rows of {source!r} ({L} tokens)"
            )
        if L < 2 or N < 1:
            raise UserError(
                f"{source!r} holds {N} rows of {L} tokens; diagnose-lm needs "
                "at least one row of 2 tokens"
            )
        return np.asarray(rows_NxL[:num_seqs, :seq_len], np.int32), source
    rows = np.asarray(tokens)
    if rows.ndim != 2 or rows.shape[1] < 2 or not np.issubdtype(rows.dtype, np.integer):
        raise UserError(
            f"tokens must be integer rows [N, L] with L >= 2, got {rows.dtype} {rows.shape}"
        )
    return rows[:num_seqs, :seq_len].astype(np.int32), "array"


def diagnose_lm(
    model_dir: str | os.PathLike,
    tokens=None,
    *,
    text=None,
    num_seqs: int | None = None,
    seq_len: int | None = None,
    vocab_size: int | None = None,
    device: str = "auto",
    dtype: str = "float32",
    **settings,
) -> dict:
    """Every bottleneck measurement of the checkpoint in model_dir on its next-token loss: tokens (a
    token file or int array [N, L]) or text (a UTF-8 file); vocab_size: the head's real rows;
    settings: `diagnose_head`'s. Its dict, the model and input, wall time and each stage's peak."""
    from spamlang.diagnostics import diagnose_head

    start = time.perf_counter()
    ckpt = open_checkpoint(model_dir)
    rows_NxL, source = _rows(ckpt, tokens, text, num_seqs, seq_len)
    model = load_weights(ckpt, device=device, dtype=dtype)
    loaded = time.perf_counter()
    states = head_states(model, ckpt, rows_NxL, vocab_size=vocab_size)
    torch_device = str(model.get_output_embeddings().weight.device)
    del model  # the JAX stage runs without the torch weights
    gc.collect()
    if torch_device.startswith("cuda"):  # hand torch's cached GPU memory to JAX
        import torch

        torch.cuda.empty_cache()
    forward, torch_peak = time.perf_counter(), peak_rss_mib()
    diag = diagnose_head(states.h_NxD, states.y_N, states.W_VxD, states.bias_V, **settings)
    config = ckpt.config
    meta = {
        "source": "diagnose-lm",
        "model_type": config.model_type,
        "model_name": ckpt.path.resolve().name,
        "model_dir": os.fspath(model_dir),
        "tie_embeddings": bool(getattr(config, "tie_word_embeddings", False)),
        "head_rows": states.head_rows,
        "head_bias": states.bias_V is not None,
        "seq_len": int(rows_NxL.shape[1]),
        "num_seqs": int(rows_NxL.shape[0]),
        "input": source,
        "torch_device": torch_device,
        "torch_dtype": dtype,
        "head_check": states.head_check,
    }
    diag["seconds"] = {
        "load": round(loaded - start, 3),
        "torch_forward": round(forward - loaded, 3),
        **diag["seconds"],
    }
    return {
        **meta,
        **diag,
        "wall_seconds": round(time.perf_counter() - start, 3),
        "peak_rss_mib": peak_rss_mib(),
        "peak_rss_torch_mib": torch_peak,
    }
