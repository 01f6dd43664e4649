"""`spamlang plot heatmap|curves|bottleneck SWEEP_DIR -o FILE`: figures from a sweep directory."""

from __future__ import annotations

import argparse

from spamlang.errors import UserError


def _where(items: list[str] | None) -> dict[str, str]:
    where = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--where takes key=value, got {item!r}")
        where[key.strip()] = value.strip()
    return where


def _lr(text: str | None) -> float | str | None:
    if text is None or text == "best":
        return text
    try:
        return float(text)
    except ValueError:
        raise UserError(f"--lr must be a number or 'best', got {text!r}") from None


def _heatmap(args: argparse.Namespace) -> int:
    from spamlang.plots.sweep import plot_heatmap

    path = plot_heatmap(args.sweep_dir, args.output, metric=args.metric, where=_where(args.where))
    print(f"wrote {path}")
    return 0


def _curves(args: argparse.Namespace) -> int:
    from spamlang.plots.sweep import plot_curves

    path = plot_curves(args.sweep_dir, args.output, lr=_lr(args.lr), metric=args.metric,
                       where=_where(args.where))
    print(f"wrote {path}")
    return 0


def _bottleneck(args: argparse.Namespace) -> int:
    try:
        from spamlang.plots.diagnostics import plot_bottleneck
    except ImportError as e:
        raise UserError(f"the bottleneck plot is not available ({e})") from None
    path = plot_bottleneck(args.sweep_dir, args.output)
    print(f"wrote {path or args.output}")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "plot", help="figures from a sweep directory (PNG or PDF, by extension)",
        description="Draw figures from a sweep directory; they are read from disk, so a sweep "
                    "still running elsewhere can be plotted.")
    kinds = parser.add_subparsers(dest="kind", metavar="KIND")
    kinds.required = True

    def common(p):
        p.add_argument("sweep_dir", metavar="SWEEP_DIR", help="a sweep output directory")
        p.add_argument("-o", "--output", required=True, metavar="FILE", help="output .png or .pdf")

    def where(p):
        p.add_argument("--where", action="append", metavar="KEY=VALUE",
                       help="keep only runs with this setting (repeatable), e.g. head=softmax; "
                            "settings that still vary get one figure row each")

    heat = kinds.add_parser("heatmap", help="final loss on a V x LR grid, tied and untied (Figure 5)")
    common(heat)
    heat.add_argument("--metric", default="final_eval_loss",
                      choices=["final_eval_loss", "loss_above_floor", "final_train_loss"])
    where(heat)
    heat.set_defaults(func=_heatmap)

    curves = kinds.add_parser("curves", help="loss against tokens, one line per V (Figure 4)")
    common(curves)
    curves.add_argument("--lr", default=None, metavar="LR|best",
                        help="learning rate to draw (default: the middle of the sweep's LR grid); "
                             "'best' draws each V at its own best LR")
    curves.add_argument("--metric", default="loss", choices=["loss", "eval_loss"],
                        help="train loss (every log step) or eval loss (every eval)")
    where(curves)
    curves.set_defaults(func=_curves)

    bottleneck = kinds.add_parser("bottleneck", help="gradient-bottleneck diagnostics of a sweep")
    common(bottleneck)
    bottleneck.set_defaults(func=_bottleneck)
