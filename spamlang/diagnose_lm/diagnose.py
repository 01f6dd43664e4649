"""`diagnose_lm`: the bottleneck measurements of a Hugging Face causal LM.

Torch runs the model once and hands over H (N x D), the next tokens and W (V x D); the
model is then freed, and `spamlang.diagnostics.diagnose_head` does the rest in JAX. So the
peak memory is the larger of the two stages, not their sum:
- torch: the weights in --dtype, plus activations of ~4,096 tokens at a time;
- JAX (float32): W, its thin-QR basis Q and the QR's workspace (~3 x 4 V D bytes), H
  (4 N D), a few chunk x V arrays per head pass (4 x 256 V each), and the rank curve's
  rank_tokens x V gradient, held twice during its QR (2 x 4 x 1,024 V).
N x V (every position's logits at once) is never formed.
"""

from __future__ import annotations

import gc
import os
import resource
import sys
import time

import numpy as np

from spamlang.diagnose_lm.inputs import rows_from_text, rows_from_token_file
from spamlang.diagnose_lm.states import head_states, load_weights, open_checkpoint
from spamlang.errors import UserError


def peak_rss_mib() -> float:
    """This process's peak resident memory so far, MiB (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)


def _rows(ckpt, tokens, text, num_seqs, seq_len) -> tuple[np.ndarray, str]:
    if (tokens is None) == (text is None):
        raise UserError(
            "give exactly one input: --tokens FILE (a spamlang token file) or --text FILE.txt"
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
        return rows_from_token_file(tokens, num_seqs=num_seqs, seq_len=seq_len), os.fspath(tokens)
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
    """Every bottleneck measurement of the checkpoint in model_dir on its next-token loss.

    tokens: a spamlang token file path or an int array [N, L]; text: a UTF-8 file cut into
    rows with the checkpoint's tokenizer (seq_len default 128). num_seqs / seq_len keep the
    first rows / tokens of each. vocab_size: real tokens among the head's rows (default: the
    tokenizer's length). settings: `spamlang.diagnostics.diagnose_head` keywords
    (chunk_size, rank_tokens, ...). Returns a JSON-able dict: diagnose_head's keys plus
    source="diagnose-lm", model_type, model_name, model_dir, tie_embeddings, head_rows,
    head_bias, seq_len, num_seqs, input, torch_device, torch_dtype, head_check,
    wall_seconds, peak_rss_mib (the process's peak resident memory) and peak_rss_torch_mib
    (the same when the torch stage ended: the JAX stage raised the peak if it is higher).
    """
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
