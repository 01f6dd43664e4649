"""`spamlang diagnose-lm`: wall time and peak memory on random transformers checkpoints.

Each model is saved with `save_pretrained` into a temporary directory and measured by the
real command in its own process (so the peak resident memory is that run's alone), on a
spamlang token file of 64 x 128 SpamLang tokens (8,128 predicted positions) whose ids fit
every model. Two groups:
- the test families (the tiny random GPT-2, GPT-NeoX and Llama of tests/test_diagnose_lm.py,
  V = 96, D = 16): the fixed cost of the command (imports, compilation, figures);
- the SmolLM2-135M shape (LlamaForCausalLM, V = 49,152, D = 576, 30 layers, tied, random
  weights): a real model's cost, also given per 1,000 predicted tokens; measured again on
  4x the rows, so that the marginal cost per 1,000 tokens (the difference of the two runs
  over the difference of their tokens) separates from the fixed cost (the QR of W, the rank
  curve, the profile and efficiency subsets, imports and compilation); and once more with
  OpenMP's default wait policy instead of the PASSIVE one `spamlang.diagnose_lm` sets.
Needs the `hf` extra. The tables go to stdout, with the CPU and its matmul peak; the second
gives each row's seconds per stage (diagnostics.json's "seconds").

    python benchmarks/bench_diagnose_lm.py            # everything (a few minutes on 2 cores)
    python benchmarks/bench_diagnose_lm.py --quick    # the tiny families only
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TINY = dict(V=96, D=16)
SMOLLM2 = dict(
    vocab_size=49152,
    hidden_size=576,
    intermediate_size=1536,
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
    rms_norm_eps=1e-5,
    max_position_embeddings=8192,
    tie_word_embeddings=True,
    rope_parameters={"rope_type": "default", "rope_theta": 100000.0},
)


def _models():
    import transformers as t

    V, D = TINY["V"], TINY["D"]
    special = dict(bos_token_id=0, eos_token_id=0)
    yield (
        "gpt2 (tiny)",
        lambda: t.GPT2LMHeadModel(
            t.GPT2Config(vocab_size=V, n_embd=D, n_layer=2, n_head=2, n_positions=256, **special)
        ),
    )
    yield (
        "gpt_neox (tiny)",
        lambda: t.GPTNeoXForCausalLM(
            t.GPTNeoXConfig(
                vocab_size=V,
                hidden_size=D,
                num_hidden_layers=2,
                num_attention_heads=2,
                intermediate_size=32,
                **special,
            )
        ),
    )
    for tied in (False, True):
        yield (
            f"llama{' tied' if tied else ''} (tiny)",
            lambda tied=tied: t.LlamaForCausalLM(
                t.LlamaConfig(
                    vocab_size=V,
                    hidden_size=D,
                    num_hidden_layers=2,
                    num_attention_heads=2,
                    num_key_value_heads=1,
                    intermediate_size=32,
                    tie_word_embeddings=tied,
                    **special,
                )
            ),
        )
    smollm2 = lambda: t.LlamaForCausalLM(t.LlamaConfig(**SMOLLM2, **special))  # noqa: E731
    yield "SmolLM2-135M shape", smollm2
    yield "SmolLM2 4x rows", smollm2
    yield "SmolLM2 OMP default", smollm2


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the tiny test families only")
    parser.add_argument("--num-seqs", type=int, default=64)
    parser.add_argument("--seq-len", type=int, default=128)
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print('needs the hf extra: pip install -e ".[hf]"', file=sys.stderr)
        return 2
    from spamlang.data import export_tokens
    from spamlang.languages import make
    from spamlang.perf import cpu_model, peak_flops

    print(
        f"# {cpu_model()}, {os.cpu_count()} cores, matmul peak "
        f"{peak_flops('float32') / 1e9:.0f} GFLOP/s (float32); torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads"
    )
    tokens = (args.seq_len - 1) * args.num_seqs
    print(
        f"# {args.num_seqs} x {args.seq_len} SpamLang tokens = {tokens:,} predicted positions; "
        "wall time and peak RSS of one `spamlang diagnose-lm` process each"
    )
    print(
        f"{'model':>20} | {'V':>6} | {'D':>4} | {'wall s':>6} | {'torch s':>7} | "
        f"{'JAX s':>6} | {'ms / 1k tok':>11} | {'peak MiB':>8} | kernel fraction"
    )
    stages = []
    with tempfile.TemporaryDirectory(prefix="bench-diagnose-lm-") as tmp:
        tmp = Path(tmp)
        token_file = tmp / "spam.bin"
        export_tokens(
            make("spam", vocab_size=TINY["V"]), 0, args.seq_len, 4 * args.num_seqs, token_file
        )
        model_dir, built = tmp / "model", None
        for name, build in _models():
            if args.quick and "tiny" not in name:
                continue
            if build is not built:  # the SmolLM2 rows share one checkpoint
                torch.manual_seed(0)
                shutil.rmtree(model_dir, ignore_errors=True)
                build().save_pretrained(model_dir)
                built = build
            out = tmp / "out"
            env = dict(os.environ)
            if "OMP default" in name:
                env["OMP_WAIT_POLICY"] = ""  # set but empty: libgomp's own default applies
            rows = 4 * args.num_seqs if "4x" in name else args.num_seqs
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "spamlang",
                    "diagnose-lm",
                    str(model_dir),
                    "--tokens",
                    str(token_file),
                    "--num-seqs",
                    str(rows),
                    "--out",
                    str(out),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
                env=env,
            )
            d = json.loads((out / "diagnostics.json").read_text())
            sec = d["seconds"]
            torch_s = sec["load"] + sec["torch_forward"]
            print(
                f"{name:>20} | {d['vocab_size']:>6} | {d['d_model']:>4} | "
                f"{d['wall_seconds']:>6.1f} | {torch_s:>7.1f} | "
                f"{d['wall_seconds'] - torch_s:>6.1f} | "
                f"{1e3 * d['wall_seconds'] / (d['tokens'] / 1e3):>11.0f} | "
                f"{d['peak_rss_mib']:>8.0f} | {d['kernel_fraction']:.4f}",
                flush=True,
            )
            stages.append((name, d))
            shutil.rmtree(out)
    _stage_table(stages)
    return 0


def _stage_table(stages) -> None:
    names = ("load", "torch_forward", "head_basis", "bottleneck", "rank", "profile", "efficiency")
    print("\n# seconds per stage (diagnostics.json 'seconds'); tokens = predicted positions")
    print(f"{'model':>20} | {'tokens':>6} | " + " | ".join(f"{n:>13}" for n in names))
    for name, d in stages:
        print(
            f"{name:>20} | {d['tokens']:>6} | "
            + " | ".join(f"{d['seconds'].get(n, float('nan')):>13.1f}" for n in names)
        )
    by = dict(stages)
    if "SmolLM2-135M shape" in by and "SmolLM2 4x rows" in by:
        a, b = by["SmolLM2-135M shape"], by["SmolLM2 4x rows"]
        marginal = (b["wall_seconds"] - a["wall_seconds"]) / ((b["tokens"] - a["tokens"]) / 1e3)
        fixed = a["wall_seconds"] - marginal * a["tokens"] / 1e3
        print(f"# SmolLM2 shape: {marginal:.2f} s per 1,000 more tokens, {fixed:.1f} s fixed")


if __name__ == "__main__":
    sys.exit(main())
