"""Llama-family Hugging Face checkpoints in spamlang's own model: config mapping and weights.

    model = load_hf("SmolLM2-135M", vocab_size=4096)  # a Transformer on the first 4,096 ids

A local `save_pretrained` directory (model_type "llama"): whatever the model cannot represent
(biases, scaled RoPE, a tensor it has no place for) is a UserError, never a different model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import ml_dtypes  # noqa: F401  (NumPy's bfloat16, which safetensors' numpy reader needs)
import numpy as np
from flax import nnx

from spamlang.errors import UserError, first_line
from spamlang.model.config import ModelConfig
from spamlang.model.transformer import Transformer

SUPPORTED_TYPES = ("llama",)
# The ModelConfig fields a checkpoint fixes; the rest stay choices of the run.
ARCHITECTURE = tuple(
    "d_model n_layers n_heads n_kv_heads d_ff rope_theta norm_eps max_seq_len init_std".split()
)
CONFIG = "config.json"
SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
# LlamaConfig's defaults, which transformers applies to keys a config.json leaves out.
_DEFAULTS = dict(
    hidden_act="silu",
    max_position_embeddings=2048,
    initializer_range=0.02,
    rms_norm_eps=1e-6,
    tie_word_embeddings=False,
    rope_theta=10_000.0,
)
_REQUIRED = tuple(
    "vocab_size hidden_size intermediate_size num_hidden_layers num_attention_heads".split()
)
# Non-parameter buffers that some checkpoints carry: RoPE frequencies, recomputed from theta.
_IGNORED = re.compile(r"(^|\.)rotary_emb\.inv_freq$")
_EMBED, _HEAD = "model.embed_tokens.weight", "lm_head.weight"


def hf_config(model_dir: str | Path) -> ModelConfig:
    """The ModelConfig of a Llama checkpoint's config.json (softmax, float32, plain kernels)."""
    path = Path(model_dir)
    if not path.exists():
        raise UserError(
            f"checkpoint directory {path} does not exist (a local Hugging Face checkpoint; "
            "download one first, e.g. hf download ORG/NAME --local-dir DIR)"
        )
    if not path.is_dir():
        raise UserError(f"{path} is not a directory (expected a Hugging Face checkpoint directory)")
    path = path / CONFIG
    if not path.is_file():
        raise UserError(f"{path.parent} has no {CONFIG}: not a Hugging Face checkpoint directory")
    raw = _read_json(path)
    if not isinstance(raw, dict):
        raise UserError(f"{path} is not a JSON object")
    model_type = raw.get("model_type")
    if model_type not in SUPPORTED_TYPES:
        raise UserError(
            f"{path}: model_type {model_type!r} is not supported; spamlang reads "
            f"Llama-architecture checkpoints only (model_type {', '.join(SUPPORTED_TYPES)})"
        )
    missing = [k for k in _REQUIRED if raw.get(k) is None]
    if missing:
        raise UserError(f"{path} lacks {', '.join(missing)}")
    raw = {**_DEFAULTS, **{k: v for k, v in raw.items() if v is not None}}
    for key in ("attention_bias", "mlp_bias"):
        if raw.get(key):
            raise UserError(f"{path}: {key} is true, but spamlang's model has no biases")
    if raw["hidden_act"] not in ("silu", "swish"):  # transformers' "swish" is SiLU too
        raise UserError(
            f"{path}: hidden_act {raw['hidden_act']!r} is not supported (SwiGLU with silu only)"
        )
    if raw.get("rope_interleaved"):
        raise UserError(
            f"{path}: rope_interleaved is true, but spamlang's RoPE rotates halves "
            f"(transformers' layout)"
        )
    d_model, n_heads = raw["hidden_size"], raw["num_attention_heads"]
    head_dim = raw.get("head_dim")
    if head_dim is not None and (
        not isinstance(n_heads, int) or n_heads < 1 or head_dim * n_heads != d_model
    ):
        raise UserError(
            f"{path}: head_dim {head_dim} differs from hidden_size / num_attention_heads = "
            f"{d_model} / {n_heads}; spamlang's model needs them equal"
        )
    try:
        return ModelConfig(
            vocab_size=raw["vocab_size"],
            d_model=d_model,
            n_layers=raw["num_hidden_layers"],
            n_heads=n_heads,
            n_kv_heads=raw.get("num_key_value_heads", n_heads),
            d_ff=raw["intermediate_size"],
            rope_theta=_rope_theta(raw, path),
            norm_eps=raw["rms_norm_eps"],
            max_seq_len=raw["max_position_embeddings"],
            init_std=raw["initializer_range"],
            tie_embeddings=raw["tie_word_embeddings"],
        )
    except UserError as e:
        raise UserError(f"{path}: {e}") from None


def _rope_theta(raw: dict, path: Path) -> float:
    """The RoPE base of a config.json; UserError for any RoPE scaling."""
    theta = raw["rope_theta"]
    for key in ("rope_parameters", "rope_scaling"):  # transformers 5, and before
        params = raw.get(key)
        if params is None:
            continue
        if not isinstance(params, dict):
            raise UserError(f"{path}: {key} must be an object, got {params!r}")
        kind = params.get("rope_type", params.get("type", "default"))
        if kind != "default":
            raise UserError(
                f"{path}: {key} has rope_type {kind!r}; spamlang's RoPE supports "
                f"'default' only (no scaling)"
            )
        theta = params.get("rope_theta", theta)
    theta = _DEFAULTS["rope_theta"] if theta is None else theta
    if isinstance(theta, bool) or not isinstance(theta, (int, float)):
        raise UserError(f"{path}: rope_theta must be a number, got {theta!r}")
    return float(theta)


def check_fits(checkpoint: ModelConfig, config: ModelConfig, model_dir) -> None:
    """UserError unless a model of `config` can start from `checkpoint`'s weights: the same
    architecture, its first V rows, a softmax head, no narrow embedding, tied only from tied."""
    for name in ARCHITECTURE:
        if name in ("max_seq_len", "init_std"):  # shape nothing and change no function
            continue
        if getattr(config, name) != getattr(checkpoint, name):
            raise UserError(
                f"{name} {getattr(config, name)!r} differs from {model_dir}'s "
                f"{getattr(checkpoint, name)!r}"
            )
    if config.vocab_size > checkpoint.vocab_size:
        raise UserError(
            f"vocab_size {config.vocab_size} exceeds the {checkpoint.vocab_size} "
            f"token ids of {model_dir}; the model keeps the first vocab_size rows"
        )
    if config.head_kind != "softmax":
        raise UserError(
            f"head {config.head!r} cannot start from {model_dir}: a pretrained LM "
            f"head is one matrix (use head 'softmax')"
        )
    if config.embed_projected:
        raise UserError(
            f"embed_dim {config.embed_dim} cannot start from {model_dir}, whose "
            f"embedding is {checkpoint.d_model} wide (leave embed_dim unset)"
        )
    if config.tie_embeddings and not checkpoint.tie_embeddings:
        raise UserError(
            f"{model_dir} has an untied lm_head, which a tied model would discard; "
            f"load it untied (tie_embeddings false)"
        )


def adopt_checkpoint(config) -> tuple[dict, ModelConfig | None]:
    """(`model` with the checkpoint's architecture written in, checkpoint config) of a TrainConfig
    with `init_from`; (its own, None) when its config.json holds it and the checkpoint is gone."""
    where, overrides = config.init_from, config.model
    if set(ARCHITECTURE) <= set(overrides) and not (Path(where) / CONFIG).is_file():
        return overrides, None
    checkpoint = hf_config(where)
    fixed = {name: getattr(checkpoint, name) for name in ARCHITECTURE}
    for name, value in overrides.items():
        if name in fixed and value != fixed[name]:
            raise UserError(
                f"model {name}={value!r} contradicts {where}/{CONFIG} ({name} {fixed[name]!r}); "
                "with init_from the checkpoint fixes the architecture"
            )
    if config.seq_len > checkpoint.max_seq_len:
        raise UserError(
            f"seq_len {config.seq_len} exceeds init_from {where}'s "
            f"max_position_embeddings ({checkpoint.max_seq_len})"
        )
    return {**overrides, **fixed}, checkpoint


def check_unstarted_weights(configs, out_dirs) -> None:
    """UserError, before any write, when a run from `init_from` cannot read it."""
    from spamlang.rundir.schema import CHECKPOINTS, RESULT

    checked = set()
    for config, d in zip(configs, out_dirs):
        started = (Path(d) / RESULT).exists() or (Path(d) / CHECKPOINTS).is_dir()
        if config.init_from and not started and config.init_from not in checked:
            check_weights(config.init_from, config.model_config())
            checked.add(config.init_from)


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise UserError(f"{path} is not valid JSON: {e}") from None


def _tensor_files(path: Path) -> dict[str, Path]:  # every tensor name and its file
    single, index = path / SINGLE, path / INDEX
    if index.is_file():
        raw = _read_json(index)
        weight_map = raw.get("weight_map") if isinstance(raw, dict) else None
        if not isinstance(weight_map, dict):
            raise UserError(f"{index} has no weight_map")
        files = {name: path / shard for name, shard in weight_map.items()}
        absent = sorted({p.name for p in files.values() if not p.is_file()})
        if absent:
            raise UserError(f"{index} lists {absent[0]}, which is not in {path}")
        return files
    if single.is_file():
        with _open(single) as f:
            return dict.fromkeys(f.keys(), single)
    other = sorted(p.name for p in path.iterdir() if p.suffix in (".bin", ".pt", ".pth", ".ckpt"))
    if other:
        raise UserError(
            f"{path} holds {other[0]} but no {SINGLE}; spamlang reads safetensors "
            f"only: convert it once with transformers, e.g. AutoModelForCausalLM."
            f"from_pretrained(DIR).save_pretrained(DIR)"
        )
    raise UserError(f"{path} has no {SINGLE} or {INDEX}")


def _open(file: Path):
    try:
        from safetensors import safe_open
    except ImportError:
        raise UserError(
            "reading Hugging Face checkpoints needs safetensors: pip install 'spamlang[hf]'"
        ) from None
    try:
        return safe_open(str(file), framework="numpy")
    except Exception as e:  # safetensors raises its own SafetensorError for damaged files
        raise UserError(f"cannot read {file}: {first_line(e) or type(e).__name__}") from None


def _by_file(layout: dict, files: dict):
    """(file, open file, tensor name) for every tensor of `layout`, one file open at a time."""
    for file in sorted(set(files[n] for n in layout)):
        with _open(file) as f:
            for name in (n for n in layout if files[n] == file):
                yield file, f, name


def _layout(c: ModelConfig, checkpoint: ModelConfig) -> dict[str, tuple[str, tuple, bool]]:
    """HF tensor name -> (our parameter path, its shape in the checkpoint, transposed)."""
    D, F, V = c.d_model, c.d_ff, checkpoint.vocab_size
    q, kv = c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim
    out = {_EMBED: ("embed", (V, D), False), "model.norm.weight": ("final_norm/scale", (D,), False)}
    if not checkpoint.tie_embeddings:
        out[_HEAD] = ("head/w", (V, D), False)
    for i in range(c.n_layers):
        hf, ours = f"model.layers.{i}.", f"blocks/{i}/"
        out |= {
            hf + "input_layernorm.weight": (ours + "attn_norm/scale", (D,), False),
            hf + "post_attention_layernorm.weight": (ours + "mlp_norm/scale", (D,), False),
            hf + "self_attn.q_proj.weight": (ours + "attn/wq", (q, D), True),
            hf + "self_attn.k_proj.weight": (ours + "attn/wk", (kv, D), True),
            hf + "self_attn.v_proj.weight": (ours + "attn/wv", (kv, D), True),
            hf + "self_attn.o_proj.weight": (ours + "attn/wo", (D, q), True),
            hf + "mlp.gate_proj.weight": (ours + "mlp/w_gate", (F, D), True),
            hf + "mlp.up_proj.weight": (ours + "mlp/w_up", (F, D), True),
            hf + "mlp.down_proj.weight": (ours + "mlp/w_down", (D, F), True),
        }
    return out


def check_weights(model_dir: str | Path, config: ModelConfig):
    """(layout, files) after checking tensor names and shapes in the safetensors headers only."""
    checkpoint = hf_config(model_dir)
    check_fits(checkpoint, config, model_dir)
    path = Path(model_dir)
    files = _tensor_files(path)
    layout = _layout(config, checkpoint)
    missing = [name for name in layout if name not in files]
    if missing:
        raise UserError(
            f"{path} lacks tensor {missing[0]}"
            + (f" and {len(missing) - 1} more" if len(missing) > 1 else "")
        )
    # A tied checkpoint may also store lm_head (the same matrix): it is not needed.
    extra = sorted(
        n
        for n in files
        if n not in layout
        and not _IGNORED.search(n)
        and not (n == _HEAD and checkpoint.tie_embeddings)
    )
    if extra:
        raise UserError(
            f"{path} has tensor(s) spamlang's Llama model has no place for: "
            f"{', '.join(extra[:3])}" + (f" and {len(extra) - 3} more" if len(extra) > 3 else "")
        )
    for file, f, name in _by_file(layout, files):
        if name not in f.keys():
            raise UserError(f"{file} lacks tensor {name}, which {INDEX} places there")
        shape = tuple(f.get_slice(name).get_shape())
        if shape != layout[name][1]:
            raise UserError(
                f"{path}: tensor {name} has shape {list(shape)}, config.json "
                f"implies {list(layout[name][1])}"
            )
    return layout, files


def load_params(
    model_dir: str | Path,
    config: ModelConfig,
    put: Callable[[np.ndarray, jax.ShapeDtypeStruct], jax.Array] | None = None,
):
    """`Transformer(config)`'s parameter state from the checkpoint, in param_dtype; `put(array,
    abstract_leaf)` places each array (default `jnp.asarray`)."""
    layout, files = check_weights(model_dir, config)
    weights: dict[str, np.ndarray] = {}  # by parameter path ("embed", "blocks/0/attn/wq")
    for _, f, name in _by_file(layout, files):
        ours, _, transposed = layout[name]
        if name in (_EMBED, _HEAD):
            value = f.get_slice(name)[: config.vocab_size]  # only the rows the model keeps
        else:
            value = f.get_tensor(name)
        # torch's Linear stores out x in, ours in x out; our RoPE is transformers' rotate-half.
        value = value.T if transposed else value
        weights[ours] = np.ascontiguousarray(value, dtype=jnp.dtype(config.param_dtype))
    if not config.tie_embeddings and "head/w" not in weights:  # untying a tied checkpoint
        weights["head/w"] = weights["embed"].copy()
    abstract = nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0)))
    params = nnx.split(abstract, nnx.Param, ...)[1]
    put = put or (lambda value, _: jnp.asarray(value))

    def fill(path, leaf):
        name = "/".join(str(k.key) for k in path if isinstance(k, jax.tree_util.DictKey))
        value = weights.pop(name)
        assert value.shape == leaf.shape and value.dtype == leaf.dtype, (path, value.shape)
        return put(value, leaf)

    params = jax.tree_util.tree_map_with_path(fill, params)
    assert not weights, f"weights without a parameter: {sorted(weights)}"
    return params


def load_hf(
    model_dir: str | Path,
    *,
    vocab_size: int | None = None,
    tie_embeddings: bool | None = None,
    dtype: str = "float32",
    param_dtype: str = "float32",
    kernels: str = "xla",
) -> Transformer:
    """A Llama checkpoint directory as a `Transformer` (ModelConfig: `.config`). vocab_size: keep
    the first V ids; tie_embeddings None: the checkpoint's, False on a tied one copies the
    embedding."""
    checkpoint = hf_config(model_dir)
    config = checkpoint.replace(
        vocab_size=checkpoint.vocab_size if vocab_size is None else vocab_size,
        tie_embeddings=checkpoint.tie_embeddings if tie_embeddings is None else tie_embeddings,
        dtype=dtype,
        param_dtype=param_dtype,
        kernels=kernels,
    )
    abstract = nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0)))
    graphdef, _, rest = nnx.split(abstract, nnx.Param, ...)
    rest = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), rest)  # none in the current model
    return nnx.merge(graphdef, load_params(model_dir, config), rest)
