"""`spamlang diagnose RUN_DIR`: how much of the logit gradient a trained run's head destroys."""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

from spamlang.errors import UserError
from spamlang.fields import in_range, is_number
from spamlang.rundir import (
    RUN_FOLDER,
    Folder,
    claim_folder,
    is_config,
    is_diagnostics,
    probe_writable,
)
from spamlang.rundir.reading import read_object
from spamlang.rundir.schema import CONFIG, DIAGNOSTICS, RESULT

# Folded into the seed so the diagnostic sequences are not the run's training or eval batches.
_DIAG_STREAM = 0xD1A6
# The most tokens a count flag takes: every token's terms are kept, so more is likely a slip.
MAX_TOKENS = 2**24
# Where diagnose and diagnose-lm write: their own folder, a run directory, or a new one.
DIAGNOSE_FOLDER = Folder(
    "a diagnose output or a run directory",
    marks=((DIAGNOSTICS, is_diagnostics), (CONFIG, is_config)),
    files=(DIAGNOSTICS, "rank_curve.*", "coefficient_profile.*", "efficiency.*"),
    locks=RUN_FOLDER.locks,
)


def _check_count(flag: str, value: int) -> None:
    if not 1 <= value <= MAX_TOKENS:
        raise UserError(f"{flag} must be >= 1 and <= {MAX_TOKENS} (2^24), got {value}")


def check_flags(args: argparse.Namespace, out_dir: str | os.PathLike, flag: str = "-o") -> None:
    """UserError for a bad `add_measure_flags` count, or unless `out_dir` is diagnose's to write
    and takes new files: checked before anything is loaded or measured (shared with `diagnose-lm`)."""
    _check_count("--chunk-size", args.chunk_size)
    _check_count("--rank-tokens", args.rank_tokens)
    out = claim_folder(out_dir, DIAGNOSE_FOLDER, flag)
    where = out
    while not where.exists() and where != where.parent:
        where = where.parent
    if not where.is_dir():
        raise UserError(f"cannot write {out / DIAGNOSTICS}: {where} is not a directory")
    try:
        probe_writable(where)
    except OSError as e:
        raise UserError(
            f"cannot write {out / DIAGNOSTICS}: {where} takes no new files "
            f"({e.strerror or e}); choose another {flag} DIR"
        ) from None


def add_measure_flags(p: argparse.ArgumentParser) -> None:
    """--chunk-size, --rank-tokens, --format, --no-figures (shared with `diagnose-lm`)."""
    p.add_argument(
        "--chunk-size",
        type=int,
        default=256,
        help="tokens per chunk through the head; memory grows as chunk x V (default 256)",
    )
    p.add_argument(
        "--rank-tokens",
        type=int,
        default=1024,
        help="tokens for the rank curve (holds a rank-tokens x V matrix; default 1024)",
    )
    p.add_argument("--format", choices=("png", "pdf"), default="png", help="figure format")
    p.add_argument("--no-figures", action="store_true", help="write diagnostics.json only")


def report(diag: dict, out: Path, args: argparse.Namespace, who: str, tail: str) -> int:
    """Write diagnostics.json, then the figures unless --no-figures; print the measurement in one
    line between `who` and `tail`, and the paths written (shared with `diagnose-lm`)."""
    from spamlang.plots.diagnostics import plot_diagnostics
    from spamlang.rundir.atomic import atomic_write_json

    claim_folder(out, DIAGNOSE_FOLDER, "-o" if hasattr(args, "output") else "--out")
    out.mkdir(parents=True, exist_ok=True)  # only once the measurement succeeded
    atomic_write_json(out / DIAGNOSTICS, diag)
    figures = [] if args.no_figures else plot_diagnostics(diag, out, suffix="." + args.format)
    print(
        f"{who} V={diag['vocab_size']} D={diag['d_model']} tokens={diag['tokens']}: kernel "
        f"fraction {diag['kernel_fraction']:.4f} (sqrt(1-D/V) = "
        f"{math.sqrt(max(0.0, 1 - diag['d_over_v'])):.4f}), projected cosine "
        f"{diag['projected_cosine']:.4f}{tail}"
    )
    print("\n".join(f"wrote {path}" for path in [out / DIAGNOSTICS, *figures]))
    return 0


def handler(args: argparse.Namespace) -> int:
    """Diagnose the run's checkpoint on fresh sequences of its language."""
    if not os.path.isdir(args.run_dir):
        raise UserError(f"no such run directory: {args.run_dir}")
    _check_count("--tokens", args.tokens)
    in_range("--seed", args.seed, ge=0, lt=2**32)
    out = Path(args.output or args.run_dir)
    check_flags(args, out)
    run_loss = (read_object(Path(args.run_dir) / RESULT) or {}).get("final_eval_loss")
    run_loss = run_loss if is_number(run_loss) else None
    import jax

    from spamlang.diagnostics import diagnose_model
    from spamlang.train import load_run

    start = time.perf_counter()
    config, model = load_run(args.run_dir)
    L = config.seq_len
    n_seq = math.ceil(args.tokens / (L - 1))
    key = jax.random.fold_in(jax.random.PRNGKey(args.seed), _DIAG_STREAM)
    tokens_BxL = config.make_language().sample(key, n_seq, L)
    diag = diagnose_model(
        model,
        tokens_BxL,
        chunk_size=args.chunk_size,
        rank_tokens=args.rank_tokens,
        max_tokens=args.tokens,
    )
    diag.update(
        run_dir=str(args.run_dir),
        language=config.language,
        seed=args.seed,
        seq_len=L,
        # Which sequences the loss was measured on, for a reader comparing it with the run's.
        loss_sequences=(
            f"{diag['loss_tokens']} predicted positions of " if diag.get("loss_tokens") else ""
        )
        + f"{n_seq} fresh sequences of {config.language} (L={L}, diagnose seed {args.seed}), "
        "not the run's eval set",
        run_final_eval_loss=run_loss,
        wall_seconds=round(time.perf_counter() - start, 3),
    )
    vs = "" if run_loss is None else f" (the run's final_eval_loss, on that set: {run_loss:.4f})"
    tail = f"\nloss {diag['loss']:.4f} on {diag['loss_sequences']}{vs}"
    return report(diag, out, args, diag["head"], tail)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "diagnose",
        help="measure the gradient bottleneck of a trained run (eq. 10, Figures 2, 7, 8)",
        description="Load a run's latest checkpoint, take the logit gradient of its own next-token "
        "loss on fresh sequences of its language, and measure the fraction of its norm "
        "the LM head destroys (kernel fraction), the cosine of what survives, the rank "
        "of the gradient against batch tokens, the coefficient profile and the loss "
        "decrease along the logit gradient versus along the hidden-state gradient. "
        "Writes diagnostics.json and rank_curve / coefficient_profile / efficiency figures.",
    )
    p.add_argument(
        "run_dir", metavar="RUN_DIR", help="a run directory (config.json + checkpoints/)"
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="output directory (default: RUN_DIR, where `spamlang plot bottleneck` looks)",
    )
    p.add_argument(
        "--tokens",
        type=int,
        default=8192,
        help="predicted positions to diagnose (default 8192; sequences of the run's seq_len)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the fresh sequences (default 0)")
    add_measure_flags(p)
    p.set_defaults(func=handler)
