"""`spamlang languages`, `spamlang preview`, `spamlang export`: look at and dump the languages."""

from __future__ import annotations

import argparse
import sys

from spamlang.errors import UserError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "languages",
        help="list the languages, their parameters and optimal losses",
        description="List every language: parameters with defaults, what it tests, and its "
        "Bayes-optimal loss over the L-1 predicted positions.",
    )
    p.set_defaults(func=languages_handler)

    p = subparsers.add_parser(
        "preview",
        help="print a few sequences of a language as token ids",
        description="Print sequences 0..n-1 of a language's dataset, one per line (token ids); "
        "a '#' header line gives the language and its optimal loss.",
    )
    _language_args(p)
    p.add_argument("-n", "--num-seqs", type=int, default=4, help="sequences to print (default 4)")
    p.add_argument("--seq-len", type=int, default=24, help="tokens per sequence (default 24)")
    p.set_defaults(func=preview_handler)

    p = subparsers.add_parser(
        "export",
        help="write sequences to a flat binary token file with a JSON sidecar",
        description="Write sequences 0..N-1 to FILE (uint16 if V <= 65536, else uint32, "
        "little-endian, row-major [N, L]) and FILE.json; load with "
        "spamlang.data.load_tokens(FILE) or numpy.memmap.",
    )
    _language_args(p)
    p.add_argument("--seq-len", type=int, required=True, help="tokens per sequence")
    p.add_argument("--num-seqs", type=int, required=True, help="number of sequences")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="token file to write")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing export (kept until the new one is complete) or a FILE (or "
        "FILE.json) that is not one; an export cut short is replaced without --force",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=export_handler)


def _language_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="language name (see `spamlang languages`)")
    p.add_argument(
        "--vocab-size", type="vocab", required=True, help="vocabulary size V (>= 2; 4K = 4,096)"
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="dataset seed (default 0); a language's own table seed is --param seed=S",
    )
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a language parameter, e.g. --param k=3 (repeatable)",
    )


def _make_language(args):
    from spamlang import languages

    params = languages.parse_params(args.name, args.param)
    if "vocab_size" in params:
        raise UserError("give the vocabulary size with --vocab-size, not --param")
    return languages.make(args.name, vocab_size=args.vocab_size, **params)


def _describe(lang) -> str:
    return f"{lang.name}({', '.join(f'{k}={v}' for k, v in lang.params().items())})"


def languages_handler(args) -> int:
    from spamlang import languages

    header = ("name", "parameters (defaults)", "what it tests", "optimal loss (nats)")
    rows = [header]
    for name in languages.names():
        cls = languages.language_class(name)
        defaults = " ".join(f"{k}={v}" for k, v in languages.param_defaults(name).items())
        rows.append((name, f"vocab_size {defaults}".rstrip(), cls.summary, cls.loss_formula))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    rows.insert(1, ["-" * w for w in widths])  # under the header
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return 0


def preview_handler(args) -> int:
    from spamlang.data import MAX_INDEX, SequenceDataset, chunk_tokens

    # The dataset's limits, named here in the flags' words before anything is generated.
    if not 1 <= args.num_seqs <= MAX_INDEX:
        raise UserError(
            f"-n must be >= 1 and <= {MAX_INDEX} (2^32, the number of sequences "
            f"a dataset indexes), got {args.num_seqs}"
        )
    if not 1 <= args.seq_len <= chunk_tokens():
        raise UserError(
            f"--seq-len must be >= 1 and <= {chunk_tokens()} (one sequence is "
            f"generated in one chunk), got {args.seq_len}"
        )
    lang = _make_language(args)
    # Finite, so that iterating generates chunk by chunk: a large -n streams, never held whole.
    rows = SequenceDataset(lang, args.seed, args.seq_len, num_sequences=args.num_seqs)
    floor = f"{lang.optimal_loss(args.seq_len):.4f}" if args.seq_len >= 2 else "n/a"
    print(
        f"# {_describe(lang)}, dataset seed {args.seed}, seq_len {args.seq_len}, "
        f"optimal loss {floor} nats"
    )
    for row in rows:
        print(" ".join(str(int(t)) for t in row))
    return 0


def export_handler(args) -> int:
    """Export; Ctrl-C exits 130, SIGTERM 143, with one line and no partial file (neither cuts a JAX
    call short, which could segfault the shutdown)."""
    from spamlang.data import export_tokens
    from spamlang.rundir.atomic import Terminated, signals_held
    from spamlang.token_files import NeedsForce

    try:
        with signals_held():  # a language may build its tables with JAX
            lang = _make_language(args)
        meta = export_tokens(
            lang,
            args.seed,
            args.seq_len,
            args.num_seqs,
            args.output,
            force=args.force,
            progress=False if args.quiet else None,
        )
    except NeedsForce as e:
        raise UserError(e.message("--force")) from None
    except KeyboardInterrupt:
        print("spamlang export: interrupted; no partial file left behind", file=sys.stderr)
        return 130
    except Terminated as e:
        print("spamlang export: terminated; no partial file left behind", file=sys.stderr)
        return int(e.code)
    n, length = meta["shape"]
    print(
        f"wrote {n} x {length} {meta['dtype']} tokens of {_describe(lang)}, dataset seed "
        f"{args.seed}, to {args.output} (+ {args.output}.json)"
    )
    return 0
