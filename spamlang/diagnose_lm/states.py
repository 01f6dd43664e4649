"""A transformers causal LM, run in torch: its hidden states H and its head matrix W.

H comes from the base model, so the N x V logits are never computed, except for one row that
checks the logits really are H W^T (+ b): a model that scales or soft-caps its logits after the
head fails with a clear error instead of being measured wrongly.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from spamlang.errors import UserError, first_line

INSTALL_HINT = 'pip install "spamlang[hf]" (or pip install -e ".[hf]" in a clone)'


def require(*modules: str) -> None:
    """Import-check the `hf` extra; UserError naming what is missing and how to install it."""
    missing = []
    for name in modules or ("torch", "transformers", "safetensors"):
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise UserError(f"this needs {', '.join(missing)} (the 'hf' extra): {INSTALL_HINT}")


_DTYPES = ("float32", "bfloat16", "float16")
# Largest |logits - H W^T| / max |logits| of a linear head: rounding, not a scale or soft cap.
_HEAD_CHECK_TOL = {"float32": 1e-4, "bfloat16": 3e-2, "float16": 1e-2}
# Any one of these makes a directory's tokenizer worth loading.
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")
# Tokens per torch forward call: a few MB of activations per layer at D ~ 1e3.
_TOKENS_PER_CALL = 4096


class Checkpoint(NamedTuple):  # a checkpoint directory read as far as config and tokenizer
    path: Path  # the directory
    config: Any  # transformers PretrainedConfig
    tokenizer: Any  # its tokenizer, or None when the directory has none

    @property
    def max_positions(self) -> int | None:
        c = self.config
        return getattr(c, "max_position_embeddings", None) or getattr(c, "n_positions", None)


class HeadStates(NamedTuple):  # what the JAX diagnostics need, on the host
    h_NxD: np.ndarray  # float32 hidden states feeding the head, one row per predicted position
    y_N: np.ndarray  # int32 next tokens
    W_VxD: np.ndarray  # float32 head rows of the real tokens
    bias_V: np.ndarray | None  # float32 head bias of those rows, None for a bias-free head
    head_rows: int  # rows of the head matrix before the cut to real tokens (padding included)
    head_check: float  # max |logits - H W^T - b| / max |logits| on the first row


def open_checkpoint(model_dir: str | os.PathLike) -> Checkpoint:
    """Config and tokenizer (if any) of a local transformers checkpoint; UserError if none."""
    require()
    path = Path(model_dir)
    if not path.is_dir():
        raise UserError(f"no such model directory: {os.fspath(model_dir)}")
    if not (path / "config.json").is_file():
        raise UserError(
            f"{os.fspath(model_dir)} has no config.json: not a transformers "
            "checkpoint directory (save one with model.save_pretrained(DIR))"
        )
    import transformers

    try:
        config = transformers.AutoConfig.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, KeyError) as e:
        why = first_line(e) or type(e).__name__
        raise UserError(f"cannot read the config of {os.fspath(model_dir)}: {why}") from None
    transformers.utils.logging.disable_progress_bar()  # one line per shard is noise here
    tokenizer = None
    # Without its files AutoTokenizer may still build an empty tokenizer from the model type.
    if any((path / name).is_file() for name in _TOKENIZER_FILES):
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
        except Exception:  # noqa: BLE001 - files that transformers cannot read: no tokenizer
            tokenizer = None
    return Checkpoint(path, config, tokenizer)


def torch_device(device: str) -> str:  # "auto": "cuda" when torch sees a GPU, else "cpu"
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UserError(f"--device {device}: torch sees no CUDA GPU (use --device cpu)")
    if device != "cpu" and not device.startswith("cuda"):
        raise UserError(f"--device must be auto, cpu or cuda[:N], got {device!r}")
    return device


def load_weights(ckpt: Checkpoint, *, device: str = "auto", dtype: str = "float32"):  # eval mode
    if dtype not in _DTYPES:
        raise UserError(f"--dtype must be one of {', '.join(_DTYPES)}, got {dtype!r}")
    import torch
    import transformers

    device = torch_device(device)
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(ckpt.path, local_files_only=True)
    except ValueError as e:  # transformers' word for "no causal-LM class for this config"
        raise UserError(
            f"{ckpt.path} is not a causal LM that AutoModelForCausalLM can load "
            f"(model_type {ckpt.config.model_type!r}): {first_line(e)}"
        ) from None
    except OSError as e:  # no weights file
        why = first_line(e) or type(e).__name__
        raise UserError(f"cannot load the weights of {ckpt.path}: {why}") from None
    return model.to(device=device, dtype=getattr(torch, dtype)).eval()


def real_vocab(ckpt: Checkpoint, head_rows: int, vocab_size: int | None = None) -> int:
    """The head's real-token rows: vocab_size, else the tokenizer's length, else all."""
    if vocab_size is not None:
        if not 2 <= vocab_size <= head_rows:
            raise UserError(
                f"--vocab-size must lie in [2, {head_rows}] (the head's rows), got {vocab_size}"
            )
        return vocab_size
    return min(head_rows, len(ckpt.tokenizer)) if ckpt.tokenizer is not None else head_rows


def head_states(
    model, ckpt: Checkpoint, rows_NxL: np.ndarray, *, vocab_size: int | None = None
) -> HeadStates:
    """Run the model on rows [N, L]: H at the predicted positions, the targets, the head's rows."""
    import torch

    head = model.get_output_embeddings()
    if head is None or getattr(head, "weight", None) is None or head.weight.ndim != 2:
        raise UserError(
            f"{ckpt.path}: the model has no linear output embedding "
            "(get_output_embeddings()) to measure"
        )
    head_rows, D = head.weight.shape
    V = real_vocab(ckpt, head_rows, vocab_size)
    N, L = rows_NxL.shape
    if rows_NxL.min() < 0 or rows_NxL.max() >= V:
        raise UserError(
            f"token ids run from {rows_NxL.min()} to {rows_NxL.max()}, but the model "
            f"has {V} real tokens: the tokens were not made for this model"
        )
    if ckpt.max_positions and L > ckpt.max_positions:
        raise UserError(
            f"rows of {L} tokens exceed the model's {ckpt.max_positions} positions "
            "(pass a smaller --seq-len)"
        )
    base = model.base_model
    if base is model:
        raise UserError(
            f"{ckpt.path}: cannot separate the decoder from the head of {type(model).__name__}"
        )
    device = head.weight.device
    h_NxD = np.empty((N * (L - 1), D), np.float32)
    per_call = max(1, _TOKENS_PER_CALL // L)
    with torch.no_grad():
        for start in range(0, N, per_call):
            ids = torch.as_tensor(rows_NxL[start : start + per_call], device=device)
            out = base(input_ids=ids, use_cache=False)
            h = out[0][:, :-1].float().cpu().numpy()
            h_NxD[start * (L - 1) : start * (L - 1) + h.shape[0] * (L - 1)] = h.reshape(-1, D)
        W_VxD = head.weight[:V].float().cpu().numpy()
        bias = getattr(head, "bias", None)
        bias_V = None if bias is None else bias[:V].float().cpu().numpy()
        logits = (
            model(input_ids=torch.as_tensor(rows_NxL[:1], device=device), use_cache=False)
            .logits[0, :-1, :V]
            .float()
            .cpu()
            .numpy()
        )
    mine = h_NxD[: L - 1] @ W_VxD.T + (0 if bias_V is None else bias_V)
    check = float(np.abs(logits - mine).max() / max(np.abs(logits).max(), 1e-30))
    dtype = str(head.weight.dtype).removeprefix("torch.")
    if not check <= _HEAD_CHECK_TOL.get(dtype, 1e-4):
        raise UserError(
            f"{ckpt.path}: the model's logits are not H W^T (+ b) of its output "
            f"embedding (relative difference {check:.2g}); it transforms them after "
            "the head (a logit scale or soft cap?), which diagnose-lm does not model"
        )
    y_N = np.ascontiguousarray(rows_NxL[:, 1:]).reshape(-1).astype(np.int32)
    return HeadStates(h_NxD, y_N, W_VxD, bias_V, int(head_rows), check)
