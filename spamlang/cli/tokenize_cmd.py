"""`spamlang tokenize`: real text into a corpus folder that `spamlang train --corpus` reads."""

from __future__ import annotations

import sys

from spamlang.errors import UserError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "tokenize",
        help="tokenize text (or the reference corpus) into train.bin / val.bin for --corpus",
        description="Tokenize text into DIR: train.bin and val.bin (flat uint16 token ids if "
        "V <= 65536, else uint32; nanoGPT's layout), meta.json and tokenizer.json. Each "
        "document ends with <|endoftext|>; a document is val when sha256(its path) % 100 < 10. "
        "A byte-level BPE of --vocab-size is trained on the train documents, or --tokenizer "
        "is used as is. A rerun with the same inputs and settings writes nothing. Example: "
        "spamlang tokenize --reference --vocab-size 16K --out corpora/stdlib16k",
    )
    p.add_argument(
        "text",
        nargs="*",
        metavar="TEXT",
        help="a text file (one document), a folder (each file a document, recursively, in "
        'sorted order), or a .jsonl file (one {"text": ...} document per line)',
    )
    p.add_argument(
        "--reference",
        action="store_true",
        help="instead of TEXT, the reference corpus: this Python's standard-library .py files "
        "(code, not prose; they differ between Python versions, recorded in meta.json)",
    )
    p.add_argument(
        "--vocab-size",
        type="vocab",
        metavar="V",
        help="vocabulary of the BPE trained here (>= 257; 16K = 16,384)",
    )
    p.add_argument(
        "--tokenizer",
        metavar="FILE",
        help="a Hugging Face tokenizer.json with an <|endoftext|> token, used as is instead of "
        "training one (its vocabulary is then V)",
    )
    p.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="output folder (created; a corpus folder of an earlier tokenize is replaced, "
        "any other non-empty folder refused)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=tokenize_handler)


def tokenize_handler(args) -> int:
    """Tokenize; Ctrl-C exits 130 and SIGTERM 143, each with one line and nothing written."""
    from spamlang.corpus.tokenize import tokenize
    from spamlang.rundir.atomic import Terminated

    if args.reference and args.text:
        raise UserError("give TEXT or --reference, not both")
    try:
        kw = dict(tokenizer=args.tokenizer, use_reference=args.reference, progress=not args.quiet)
        outcome = tokenize(args.text, args.out, vocab_size=args.vocab_size, **kw)
    except KeyboardInterrupt:
        print("spamlang tokenize: interrupted; nothing written", file=sys.stderr)
        return 130
    except Terminated as e:
        print("spamlang tokenize: terminated; nothing written", file=sys.stderr)
        return int(e.code)
    if outcome.written:
        print(_summary(outcome.meta, args.out))
    return 0


def _summary(meta: dict, out: str) -> str:
    docs, tok = meta["documents"], meta["tokenizer"]
    how = "trained here" if tok["trained"] else "given"
    return (
        f"tokenized {docs['train'] + docs['val']:,} documents ({docs['train']:,} train, "
        f"{docs['val']:,} val) into {meta['train_tokens']:,} train and {meta['val_tokens']:,} val "
        f"{meta['dtype']} tokens, vocab_size {meta['vocab_size']} ({tok['kind']}, {how}), in {out}"
    )
