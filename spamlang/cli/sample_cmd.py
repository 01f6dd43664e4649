"""`spamlang sample RUN_DIR`: generate from a run's latest checkpoint and colour what is correct."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spamlang.errors import UserError
from spamlang.rundir.atomic import atomic_write_text, check_output_file


def _check_outputs(args: argparse.Namespace) -> None:
    if args.html and Path(args.html).suffix.lower() not in (".html", ".htm"):
        raise UserError(f"--html needs a .html file, got {args.html!r}")
    if args.png and Path(args.png).suffix.lower() not in (".png", ".pdf"):
        raise UserError(f"--png needs a .png or .pdf file, got {args.png!r}")
    for path in (args.html, args.png):
        if path:
            check_output_file(path)


def best_runs(sweep_dir: str, where: dict) -> list[tuple[str, Path]]:
    """(cell, run directory) of each cell of `sweep_dir` that `where` selects: the run at the
    cell's best LR (`spamlang.sweep.best_lr`), lowest seed."""
    from spamlang.results import read_runs, records, select, shown
    from spamlang.sweep.best_lr import best_lrs

    runs = read_runs(sweep_dir)
    runs = runs[runs["finished"].astype(bool) & runs["path"].notna()]
    if runs.empty:
        raise UserError(f"no finished runs in {sweep_dir}")
    # A cell is results.csv's settings but lr and seed (`best_lrs` reads them in this order).
    columns = ["run_id", *runs.attrs["axes"], "final_eval_loss", "diverged", "path"]
    rows = records(select(runs, where)[columns])
    picks = []
    for best in best_lrs(rows):
        if cell := [
            r for r in rows if r.get("lr") == best.lr and all(r.get(k) == v for k, v in best.group)
        ]:
            run = min(cell, key=lambda r: r.get("seed") or 0)
            varying = [(k, v) for k, v in best.group if len({r.get(k) for r in rows}) > 1]
            label = ", ".join(f"{k}={shown(k, v)}" for k, v in varying) or "the sweep"
            picks.append((f"{label}: best lr {shown('lr', best.lr)}", run["path"]))
    if not picks:
        what = "no finished run with a final eval loss"
        raise UserError(f"--where {where} selects {what} in {sweep_dir}")
    return picks


def _targets(args: argparse.Namespace) -> list[tuple[str | None, Path]]:
    """RUN_DIR, or with --where the best-LR run of each cell of the sweep it selects."""
    path = Path(args.run_dir)
    if not path.is_dir():
        raise UserError(f"no such run directory: {args.run_dir}")
    is_run = (path / "config.json").is_file()
    if args.where:
        if is_run:
            raise UserError(f"--where picks runs of a sweep directory; {path} is a run directory")
        from spamlang.results import parse_where

        picks = best_runs(str(path), parse_where(args.where))
        if len(picks) > 1 and (args.html or args.png):
            cells = f"--where selects {len(picks)} cells: add --where settings until one is left"
            raise UserError(f"--html and --png draw one run; {cells}")
        return picks
    if not is_run and ((path / "results.csv").exists() or (path / "sweep.json").exists()):
        raise UserError(
            f"{path} is a sweep directory: pass --where KEY=VALUE (e.g. --where "
            "vocab_size=4096 --where tie_embeddings=True) to sample each cell's "
            "best-LR run, or a run directory"
        )
    return [(None, path)]


def handler(args: argparse.Namespace) -> int:
    # Everything the flags can get wrong fails here, before a minute of loading and compiling;
    # sample_run checks --temperature itself, before it loads the model.
    targets = _targets(args)
    temperature = 0.0 if args.greedy else args.temperature
    if args.n < 1 or (args.length is not None and args.length < 2):
        raise UserError("-n must be >= 1 and --length >= 2")
    _check_outputs(args)
    from spamlang import sample

    corpus_runs = [d for _, d in targets if sample.corpus_of(d)]
    if corpus_runs and (args.html or args.png):  # SpamLang-only: real text has no correct token
        table = "SpamLang's table of correct and incorrect tokens, which real text has not"
        why = f"--html and --png draw {table}; leave them out"
        raise UserError(f"{corpus_runs[0]} is a corpus run: {why}")
    if args.prompt is not None:
        if len(corpus_runs) < len(targets):  # a corpus run encodes its prompt as text
            sample.parse_prompt(args.prompt)
        if temperature == 0 and args.n > 1:
            raise UserError(
                f"--greedy with --prompt gives {args.n} identical samples; use -n 1, "
                "or leave out --prompt to seed each sample with its own prompt (a symbol "
                "drawn from the language; a corpus run: the start of a val.bin window)"
            )
    colour = {"always": True, "never": False}.get(args.color, sample.use_colour(sys.stdout))
    kw = dict(n=args.n, length=args.length, temperature=temperature, prompt=args.prompt)
    kw.update(seed=args.seed)
    for cell, run_dir in targets:
        if cell is not None:
            print(f"== {cell} ({run_dir.name})")
        result = sample.sample_run(run_dir, **kw)
        render = sample.render_corpus_text if run_dir in corpus_runs else sample.render_text
        sys.stdout.write(render(result, colour=colour, ids=args.ids))
    if args.html:
        atomic_write_text(args.html, sample.render_html(result, ids=args.ids))
        print(f"wrote {args.html}")
    if args.png:
        print(f"wrote {sample_figure(result, args.png, ids=args.ids)}")
    return 0


def sample_figure(result, out_file, ids: bool = False) -> Path:
    """The sample table of a `spamlang.sample.SampleResult` as a figure, as the terminal shows it."""
    from spamlang import sample
    from spamlang.plots.samples import plot_samples

    if not isinstance(result, sample.SampleResult):  # a corpus run's: no correct token in text
        raise UserError(f"{result.info['run_dir']} is a corpus run: its samples make no table")
    ids = sample.shows_ids(result, ids)
    title, cells = sample.describe(result, ids), sample.token_texts(result, ids)
    kw = dict(notes=sample.definitions(result), colours=sample.COLOURS, wrong=sample.INCORRECT)
    return plot_samples(result, out_file, title=title, cells=cells, **kw, ids=ids)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "sample",
        help="generate from a trained run and mark correct/incorrect tokens (Table 1)",
        description="Sample from a run's latest checkpoint and mark each generated token "
        "correct when it is one of the language's most likely next tokens given the tokens "
        "before it (in SpamLang: the seed symbol again). Prints per sample the fraction "
        "correct, the first error (0 = first generated token), the longest run of correct "
        "tokens and the longest repeat of any one symbol (a model that repeats the wrong "
        "symbol: run 0, repeat > 0), and their means. Tokens show as one glyph each (A-Z, "
        "a-z, then letters of other scripts, look-alikes left out) or as ids (--ids).",
    )
    p.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        help="a run directory (config.json + checkpoints/), or a sweep directory with --where",
    )
    p.add_argument(
        "--where",
        action="append",
        metavar="KEY=VALUE",
        help="with a sweep directory: sample the best-LR run (seed-mean final eval loss, "
        "lowest seed) of every cell whose settings match; repeatable, key!=value excludes, "
        "as in spamlang plot",
    )
    p.add_argument("-n", type=int, default=8, help="number of samples (default 8)")
    p.add_argument(
        "--length",
        type=int,
        default=None,
        help="tokens per sample, prompt included (default: 32, or the run's seq_len if "
        "shorter; a corpus run's prompts from val.bin are its first half); beyond the run's "
        "seq_len a warning, beyond the model's max_seq_len an error",
    )
    p.add_argument(
        "--temperature", type=float, default=0.9, help="sampling temperature (default 0.9)"
    )
    p.add_argument(
        "--greedy",
        action="store_true",
        help="argmax decoding (temperature 0); with -n > 1 and no --prompt each sample is "
        "seeded with its own symbol drawn from the language",
    )
    p.add_argument(
        "--prompt",
        metavar="GLYPHS_OR_IDS",
        help="seed tokens: glyphs ('AAb') or ids ('0,5,7'); default: token 0 (A), or the "
        "language's own first tokens when it needs a longer seed (cycle); a corpus run: text, "
        "encoded by its tokenizer.json (ids without one), default the start of a val.bin window",
    )
    p.add_argument("--seed", type=int, default=0, help="PRNG seed for sampling (default 0)")
    p.add_argument("--html", metavar="FILE", help="also write the table as a .html page")
    p.add_argument("--png", metavar="FILE", help="also draw the table as a .png or .pdf figure")
    p.add_argument("--ids", action="store_true", help="show token ids instead of glyphs")
    p.add_argument(
        "--color",
        choices=["auto", "always", "never"],
        default="auto",
        help="ANSI colours: auto = only on a terminal and when NO_COLOR is unset",
    )
    p.set_defaults(func=handler)
