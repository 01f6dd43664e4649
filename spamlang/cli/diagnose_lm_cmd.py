"""`spamlang diagnose-lm MODEL_DIR --tokens FILE --out DIR`: the bottleneck of a Hugging Face LM.

Measured on this repository's CPU (MEASURED_TABLE_PLACEHOLDER)
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from spamlang.errors import UserError

_MEMORY_HELP = """\
memory: the larger of two stages, never their sum. (1) torch: the weights in --dtype
(4 bytes per parameter in float32, 2 in bfloat16) plus activations of ~4,096 tokens at a
time. (2) JAX, float32: ~12 V D bytes for the head W, its thin-QR basis and the QR's
workspace, plus ~9 KiB per vocabulary entry for the token chunks and the rank curve
(--chunk-size 256, --rank-tokens 1,024). N x V never exists at once. Examples: GPT-2 small
(V 50,257, D 768) needs ~0.5 GiB for the JAX stage and ~0.5 GiB for the model in float32;
SmolLM2-135M (V 49,152, D 576) ~0.8 GiB and ~0.6 GiB; Llama-3-8B (V 128,256, D 4,096) ~7 GiB
and 16 GiB in bfloat16, so about 20 GiB fits it; Qwen3-8B (V 151,936) about the same.
"""


def _check_args(args: argparse.Namespace) -> None:
    for name in ("chunk_size", "rank_tokens"):
        if getattr(args, name) < 1:
            raise UserError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.format not in ("png", "pdf"):
        raise UserError(f"--format must be png or pdf, got {args.format!r}")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {args.out} exists and is not a directory")


def handler(args: argparse.Namespace) -> int:
    _check_args(args)
    from spamlang.fileio import atomic_write_json
    from spamlang.hf import require

    require()
    from spamlang.hf.diagnose import diagnose_lm

    diag = diagnose_lm(args.model_dir, args.tokens, text=args.text, num_seqs=args.num_seqs,
                       seq_len=args.seq_len, vocab_size=args.vocab_size, device=args.device,
                       dtype=args.dtype, chunk_size=args.chunk_size, rank_tokens=args.rank_tokens)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)  # only once the measurement succeeded
    atomic_write_json(out / "diagnostics.json", diag)
    paths = []
    if not args.no_figures:
        from spamlang.plots.diagnostics import plot_diagnostics

        paths = plot_diagnostics(diag, out, suffix="." + args.format)
    print(f"{diag['model_name']} ({diag['model_type']}) V={diag['vocab_size']} "
          f"D={diag['d_model']} tokens={diag['tokens']}: kernel fraction "
          f"{diag['kernel_fraction']:.4f} (sqrt(1-D/V) = "
          f"{math.sqrt(max(0.0, 1 - diag['d_over_v'])):.4f}), projected cosine "
          f"{diag['projected_cosine']:.4f}, loss {diag['loss']:.4f} "
          f"[{diag['wall_seconds']:.1f} s, peak {diag['peak_rss_mib']:.0f} MiB]")
    for path in [out / "diagnostics.json", *paths]:
        print(f"wrote {path}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "diagnose-lm",
        help="measure the gradient bottleneck of a Hugging Face causal LM (eq. 10, Figs 2, 6-8)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run a local transformers checkpoint (anything AutoModelForCausalLM loads: "
                    "GPT-2, Pythia, Llama, Qwen, ...) in torch on the given tokens, take the "
                    "hidden states H that feed its LM head and the head matrix W (real-token "
                    "rows), and measure with spamlang's diagnostics: the share of the logit-"
                    "gradient norm that W^T destroys (kernel fraction, G = softmax - onehot of "
                    "the next token), the projected cosine, the rank curve, the coefficient "
                    "profile and the update efficiency. Writes DIR/diagnostics.json and the "
                    "figures `spamlang diagnose` draws; `spamlang plot bottleneck DIR ...` "
                    "puts several models on the paper's Figure 6. Needs the 'hf' extra "
                    '(pip install "spamlang[hf]"). Nothing is downloaded.',
        epilog=_MEMORY_HELP)
    p.add_argument("model_dir", metavar="MODEL_DIR",
                   help="checkpoint directory (config.json + weights, as save_pretrained writes)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--tokens", metavar="FILE", default=None,
                     help="a spamlang token file (`spamlang export`); rows of its seq_len")
    src.add_argument("--text", metavar="FILE.txt", default=None,
                     help="plain UTF-8 text, tokenized with the checkpoint's own tokenizer and "
                          "cut into rows of --seq-len tokens")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (created)")
    p.add_argument("--num-seqs", type=int, default=64,
                   help="rows to measure, the first ones of the input (default 64)")
    p.add_argument("--seq-len", type=int, default=None,
                   help="tokens per row (default: the token file's seq_len; 128 for --text)")
    p.add_argument("--vocab-size", type=int, default=None,
                   help="real tokens among the head's rows (default: the tokenizer's length, "
                        "or every row without a tokenizer); padding rows are left out")
    p.add_argument("--device", default="auto",
                   help="torch device: auto (a CUDA GPU when torch sees one, default), cpu, cuda")
    p.add_argument("--dtype", default="float32",
                   help="torch weights: float32 (default), bfloat16 or float16; the JAX stage "
                        "is float32 either way")
    p.add_argument("--chunk-size", type=int, default=256,
                   help="tokens per chunk through the head; memory grows as chunk x V (default 256)")
    p.add_argument("--rank-tokens", type=int, default=1024,
                   help="tokens for the rank curve (holds a rank-tokens x V matrix; default 1024)")
    p.add_argument("--format", default="png", help="figure format: png (default) or pdf")
    p.add_argument("--no-figures", action="store_true", help="write diagnostics.json only")
    p.set_defaults(func=handler)
