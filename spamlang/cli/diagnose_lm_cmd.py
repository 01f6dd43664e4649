"""`spamlang diagnose-lm MODEL_DIR --tokens FILE --out DIR`: the bottleneck of a Hugging Face LM;
the command line around `spamlang.diagnose_lm.diagnose_lm`. What it costs in time and memory, by
model size: benchmarks/README.md (`python benchmarks/bench_diagnose_lm.py`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from spamlang.cli.diagnose_cmd import add_measure_flags, check_flags, report

_MEMORY_HELP = """\
memory: about 0.5 GiB for torch and JAX themselves, plus the larger of two stages (never
their sum). (1) torch: the weights in --dtype (4 bytes per parameter in float32, 2 in
bfloat16) and the activations of ~4,096 tokens at a time. (2) JAX, float32: about
V x (12 D bytes + 28 KiB) at the default --chunk-size and --rank-tokens: W, the basis of
its thin QR and the QR's workspace, and per vocabulary entry the token chunks, the rank
curve's 1,024 gradient rows and the coefficient profile's sort. N x V never exists at once.
Measured: SmolLM2-135M's shape (V 49,152, D 576) peaked at 2.1 GiB. From the same rule:
GPT-2 small or Pythia-160m (V ~50k, D 768) ~2.3 GiB; Llama-3-8B (V 128,256, D 4,096) in
bfloat16 ~17 GiB, set by its 16 GB of weights (JAX stage ~9.5 GiB); Qwen3-8B (V 151,936)
about the same. A model needs its weights in --dtype plus ~1 GiB, and V (12 D + 28 KiB)
plus 0.5 GiB, whichever is more.
"""


_DESCRIPTION = """\
Run a local transformers checkpoint (anything AutoModelForCausalLM loads: GPT-2, Pythia,
Llama, Qwen, ...) in torch on the given tokens, take the hidden states H that feed its LM
head and the head matrix W (its real-token rows), and measure with spamlang's diagnostics:
the share of the logit-gradient norm that W^T destroys (kernel fraction, equation 10, with
G = softmax - onehot of the next token), the projected cosine, the rank curve, the
coefficient profile and the update efficiency. Writes DIR/diagnostics.json and the figures
that `spamlang diagnose` draws; `spamlang plot bottleneck DIR ...` puts several models on
the paper's Figure 6. Needs the 'hf' extra (pip install "spamlang[hf]"); nothing is
downloaded.
"""


def handler(args: argparse.Namespace) -> int:
    check_flags(args, args.out, "--out")  # before minutes of measuring, not after
    from spamlang.diagnose_lm import require

    require()
    from spamlang.diagnose_lm.diagnose import diagnose_lm

    names = "text num_seqs seq_len vocab_size device dtype chunk_size rank_tokens".split()
    diag = diagnose_lm(args.model_dir, args.tokens, **{k: getattr(args, k) for k in names})
    who = f"{diag['model_name']} ({diag['model_type']})"
    cost = f"[{diag['wall_seconds']:.1f} s, peak {diag['peak_rss_mib']:.0f} MiB]"
    return report(diag, Path(args.out), args, who, f", loss {diag['loss']:.4f} {cost}")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "diagnose-lm",
        help="measure the gradient bottleneck of a Hugging Face causal LM (eq. 10, Figs 2, 6-8)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=_DESCRIPTION,
        epilog=_MEMORY_HELP,
    )
    p.add_argument(
        "model_dir",
        metavar="MODEL_DIR",
        help="checkpoint directory (config.json + weights, as save_pretrained writes)",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--tokens",
        metavar="FILE",
        help="a spamlang token file (`spamlang export`); rows of its seq_len",
    )
    src.add_argument(
        "--text",
        metavar="FILE.txt",
        help="plain UTF-8 text, tokenized with the checkpoint's own tokenizer and "
        "cut into rows of --seq-len tokens",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (created)")
    p.add_argument("--num-seqs", type=int, default=64, help="rows to measure (default: 64)")
    p.add_argument(
        "--seq-len",
        type=int,
        help="tokens per row (default: the token file's seq_len; 128 for --text)",
    )
    p.add_argument(
        "--vocab-size",
        type="vocab",
        help="real tokens among the head's rows (default: the tokenizer's length, "
        "or every row without a tokenizer); padding rows are left out",
    )
    p.add_argument("--device", default="auto", help="torch device: auto (default), cpu, cuda")
    p.add_argument(
        "--dtype",
        default="float32",
        help="torch weights: float32 (default), bfloat16 or float16; the JAX stage "
        "is float32 either way",
    )
    add_measure_flags(p)
    p.set_defaults(func=handler)
