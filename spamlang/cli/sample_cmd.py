"""`spamlang sample RUN_DIR`: generate from a run's latest checkpoint and colour what is correct."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from spamlang.errors import UserError
from spamlang.fileio import atomic_write_text, check_output_file


def _check_outputs(args: argparse.Namespace) -> None:
    # Bad paths fail before the model is loaded, not after a minute of compilation.
    if args.html and Path(args.html).suffix.lower() not in (".html", ".htm"):
        raise UserError(f"--html needs a .html file, got {args.html!r}")
    if args.png and Path(args.png).suffix.lower() not in (".png", ".pdf"):
        raise UserError(f"--png needs a .png or .pdf file, got {args.png!r}")
    for path in (args.html, args.png):
        if path:
            check_output_file(path)


def handler(args: argparse.Namespace) -> int:
    if not os.path.isdir(args.run_dir):
        raise UserError(f"no such run directory: {args.run_dir}")
    temperature = 0.0 if args.greedy else args.temperature
    if not temperature >= 0:
        raise UserError(f"--temperature must be >= 0, got {args.temperature}")
    if args.n < 1 or (args.length is not None and args.length < 2):
        raise UserError("-n must be >= 1 and --length >= 2")
    _check_outputs(args)
    if args.prompt is not None:
        from spamlang.sample import parse_prompt

        parse_prompt(args.prompt)  # a bad glyph is reported before the model is loaded
        if temperature == 0 and args.n > 1:
            raise UserError(f"--greedy with --prompt gives {args.n} identical samples; use -n 1, "
                            "or leave out --prompt to seed each sample with its own symbol drawn "
                            "from the language")

    from spamlang.sample import render_html, render_text, sample_run, use_colour

    result = sample_run(args.run_dir, n=args.n, length=args.length, temperature=temperature,
                        prompt=args.prompt, seed=args.seed)
    colour = {"always": True, "never": False}.get(args.color, None)
    sys.stdout.write(render_text(result, colour=use_colour(sys.stdout) if colour is None else colour,
                                 ids=args.ids))
    if args.html:
        atomic_write_text(args.html, render_html(result, ids=args.ids))
        print(f"wrote {args.html}")
    if args.png:
        from spamlang.plots.samples import plot_samples

        print(f"wrote {plot_samples(result, args.png, ids=args.ids)}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "sample", help="generate from a trained run and mark correct/incorrect tokens (Table 1)",
        description="Sample from a run's latest checkpoint, seeded with token 0 (shown as A) or "
                    "--prompt, and colour each generated token: correct when it is one of the "
                    "language's most likely next tokens given the tokens before it (in SpamLang: "
                    "the seed symbol again). Prints per-sample fraction correct, first error (0 = "
                    "first generated token), longest run of correct tokens and longest repeat of "
                    "any one symbol (a model that repeats the wrong symbol: run 0, repeat > 0), "
                    "with their means. Tokens show as one glyph each (A-Z, a-z, then letters of "
                    "other scripts, look-alikes left out) or, with --ids, as token ids.")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory (config.json + checkpoints/)")
    p.add_argument("-n", type=int, default=8, help="number of samples (default 8)")
    p.add_argument("--length", type=int, default=None,
                   help="tokens per sample, prompt included (default: 32, or the run's seq_len if "
                        "shorter); beyond the run's seq_len a warning (untrained positions), "
                        "beyond the model's max_seq_len an error")
    p.add_argument("--temperature", type=float, default=0.9, help="sampling temperature (default 0.9, as in the paper)")
    p.add_argument("--greedy", action="store_true",
                   help="argmax decoding (temperature 0); with -n > 1 and no --prompt each "
                        "sample is seeded with its own symbol drawn from the language, since "
                        "one seed would give n identical samples")
    p.add_argument("--prompt", metavar="GLYPHS_OR_IDS",
                   help="seed tokens: glyphs ('AAb') or ids ('0,5,7'); default: token 0 (A), or the "
                        "language's own first tokens when it needs a longer seed (cycle)")
    p.add_argument("--seed", type=int, default=0, help="PRNG seed for sampling (default 0)")
    p.add_argument("--html", metavar="FILE",
                   help="also write the table as a self-contained .html page (folder must exist)")
    p.add_argument("--png", metavar="FILE",
                   help="also draw the table as a .png (or .pdf) figure (folder must exist)")
    p.add_argument("--ids", action="store_true",
                   help="show token ids instead of glyphs (in the terminal, --html and --png)")
    p.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                   help="ANSI colours: auto = only on a terminal and when NO_COLOR is unset")
    p.set_defaults(func=handler)
