"""`spamlang train`: one training run into a run directory, its flags derived from TrainConfig's
fields (`vocab_size` -> `--vocab-size`, with the field's help and default; `language_params` and
`model` as repeatable `--param K=V` and `--model K=V`). `--config FILE.json` gives the starting
values, which flags override; rerunning the same command resumes. Exit status: 0 done, 2 bad
input, 1 an unexpected error, 130 / 143 stopped by SIGINT / SIGTERM after a checkpoint."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

from spamlang.errors import UserError
from spamlang.fields import tagged
from spamlang.notation import VOCAB_FIELDS
from spamlang.tracking.common import KINDS as TRACKERS
from spamlang.train.config import FIELD_ALIASES, OPTIMIZER_FIELDS, TrainConfig

# Fields shown as one repeatable K=V flag each, instead of a flag named after the field.
_DICT_FLAGS = {"language_params": "--param", "model": "--model"}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train one model into a run directory (resumes; skips if finished)",
        formatter_class=_NamesHelpFormatter,
        description="Train one model on a language into --out DIR (config.json, metrics.jsonl, "
        "checkpoints/, result.json). Rerun the same command to resume an interrupted "
        "run. Example: spamlang train --preset tiny --language spam --vocab-size 4096 "
        "--lr 3e-3 --tie-embeddings --tokens 2M --seq-len 64 --batch-size 32 --out "
        "runs/x. Integer flags take K, M and B suffixes, decimal as in papers' token counts "
        "(--tokens 2M is 2,000,000), except a vocabulary, counted in binary as it is "
        "written (--vocab-size 32K is 32,768).",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="run directory (created)")
    parser.add_argument(
        "--config",
        metavar="FILE.json",
        help="start from this TrainConfig JSON; explicit flags override it",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar or log lines")
    parser.add_argument("--dry-run", action="store_true", help="print the config as JSON and exit")
    parser.add_argument("--json", action="store_true", help="print result.json, not a summary")
    parser.add_argument(
        "--tracker",
        choices=(*TRACKERS, "none"),
        help="mirror the run's metrics, config and result to TensorBoard (DIR/tensorboard/) or "
        "W&B (WANDB_MODE=offline: DIR/wandb/); needs the extra of that name; one that cannot "
        "start is an error before training",
    )
    parser.add_argument(
        "--distributed",
        action="store_true",
        help="call jax.distributed.initialize() first (multi-host, e.g. under SLURM: "
        "one process per host, the same command on each)",
    )
    group = parser.add_argument_group("TrainConfig fields")
    for f in dataclasses.fields(TrainConfig):
        help_text = f.metadata["help"].replace("%", "%%")  # argparse %-formats help
        if f.name in OPTIMIZER_FIELDS:  # the one table of who reads what
            help_text += (
                f"; read only by {', '.join(OPTIMIZER_FIELDS[f.name])} (another --optimizer "
                "refuses a value other than the default)"
            )
        _add_field_flag(group, f, help_text)
    parser.set_defaults(func=handler, unknown_hint=_unknown_hint)


def _add_field_flag(group, f: dataclasses.Field, help_text: str) -> None:
    default = f.default_factory() if f.default is dataclasses.MISSING else f.default
    flags = f.metadata.get("flags") or ("--" + f.name.replace("_", "-"),)
    shown = f" (default: {_default_text(f.name, default)})"
    if f.name in _DICT_FLAGS:
        flags, shown = (_DICT_FLAGS[f.name],), ""
        kind = dict(action="append", type="setting", metavar="K=V")
    elif f.name in ("tokens", "steps"):  # read by TrainConfig; the help says what none means
        kind, shown = dict(type=str, metavar="N"), ""
        help_text += "; e.g. 100K or 2M" if f.name == "tokens" else "; e.g. 2500 or 10K"
    elif isinstance(default, bool):
        kind = dict(action=argparse.BooleanOptionalAction)
    elif default is None:  # an optional string (init_from); its help says what none means
        kind, shown = dict(type=str, metavar=f.metadata["metavar"] or "STR"), ""
    elif f.name in VOCAB_FIELDS:  # K = 1,024 here (`spamlang.notation`)
        kind, help_text = dict(type="vocab", metavar="V"), f"{help_text}; 32K = 32,768"
    else:
        kind = dict(type=type(default), metavar=type(default).__name__.upper())
    # No default: absent unless given, so that --config may set it.
    group.add_argument(
        *flags, dest=f.name, default=argparse.SUPPRESS, help=help_text + shown, **kind
    )


# Fields whose flag is not --<name> (Adam's b1, b2, eps): their first flag.
RENAMED = {name: flags[0] for name, flags in tagged(TrainConfig, "flags").items()}


def _unknown_hint(extras: list[str]) -> str | None:
    """The line for an unknown flag that names a language parameter or a field by another name."""
    from spamlang import languages  # imports JAX: on this error path only

    owners: dict[str, list[str]] = {}
    for name in languages.names():
        for param in languages.param_defaults(name):
            owners.setdefault(param, []).append(name)
    for flag in (extra.split("=", 1)[0] for extra in extras if extra.startswith("--")):
        key, where = flag[2:].replace("-", "_"), []
        if key in owners:
            where.append(
                f"a language parameter ({', '.join(owners[key])}) is set with --param {key}=VALUE"
            )
        if key in RENAMED:
            where.append(f"the optimizer's {key} is {RENAMED[key]}")
        alias = FIELD_ALIASES.get(key) or FIELD_ALIASES.get(flag[2:])
        if alias == "preset":
            where.append("a width is a preset of the width family: --preset tiny-w32")
        elif alias and alias.startswith("model."):
            where.append(f"a model field is set with --model {alias[6:]}=VALUE")
        elif alias:
            where.append(f"did you mean --{alias.replace('_', '-')}?")
        if where:
            return f"{flag} is not a flag of spamlang train: {'; '.join(where)}"
    return None


def _default_text(name: str, default) -> str:
    """A default as the user would type it: counts and LRs in the figures' notation."""
    from spamlang.notation import format_count, format_lr

    if name == "lr":
        return format_lr(default)
    if isinstance(default, int) and not isinstance(default, bool) and name != "seed":
        return format_count(default)
    return f"{default:g}" if isinstance(default, float) else str(default)


def _approx(n: int) -> str:
    """A parameter count to 2-3 significant digits: 7.8K, 123K, 106M."""
    for unit, suffix in ((10**9, "B"), (10**6, "M"), (10**3, "K")):
        if n >= unit:
            return f"{n / unit:.3g}{suffix}"
    return str(n)


def _preset_sizes() -> str:
    """Each base preset's shape and size, the backbone's parameters (the same for every V)."""
    from spamlang.model.config import PRESETS, ModelConfig, count_params

    sizes = []
    for name in PRESETS:
        config = ModelConfig.preset(name, vocab_size=2)
        sizes.append(
            f"{name} (d_model {config.d_model}, {config.n_layers} layers, "
            f"{_approx(count_params(config)['non_embedding'])} non-embedding params)"
        )
    return "; ".join(sizes) + "; embedding and head add V x d_model each (untied)"


class _NamesHelpFormatter(argparse.HelpFormatter):
    """Adds the values of the name-valued fields, from their registries, to --help (JAX only
    then): the presets with their sizes, the languages, the heads."""

    def _get_help_string(self, action: argparse.Action) -> str:
        from spamlang import languages
        from spamlang.model.config import HEAD_FORMS, preset_names

        text = super()._get_help_string(action) or ""
        if action.dest == "preset":
            return f"{text}; one of: {preset_names()}. Sizes: {_preset_sizes()}"
        names = {"language": languages.names(), "head": HEAD_FORMS}.get(action.dest)
        return f"{text}; one of: {', '.join(names)}" if names else text


def config_from_args(args):
    """The TrainConfig of parsed `spamlang train` arguments (--config file, then flags)."""
    values = _read_config_file(args.config) if args.config else {}
    budget = ("tokens", "steps")
    if any(hasattr(args, name) for name in budget):  # a budget flag replaces the file's budget
        values = {k: v for k, v in values.items() if k not in budget}
    for f in dataclasses.fields(TrainConfig):
        if not hasattr(args, f.name):
            continue
        given = getattr(args, f.name)
        if f.name in _DICT_FLAGS:
            base = values.get(f.name, {})
            if not isinstance(base, dict):
                raise UserError(f"{args.config}: {f.name} must be a JSON object")
            values[f.name] = {**base, **dict(given)}
        else:
            values[f.name] = given
    if values.get("corpus") and "vocab_size" in values:  # typed, so never taken as "unset"
        from spamlang.corpus.files import open_corpus

        own = open_corpus(values["corpus"]).vocab_size
        if values["vocab_size"] != own:
            raise UserError(
                f"--vocab-size {values['vocab_size']} differs from corpus {values['corpus']}'s "
                f"{own} (meta.json); leave --vocab-size out"
            )
    return TrainConfig.from_json(values)


def _read_config_file(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as e:
        raise UserError(f"cannot read --config {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise UserError(f"--config {path} is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise UserError(f"--config {path} must hold a JSON object of TrainConfig fields")
    return data


def enable_compile_cache() -> None:
    """JAX's persistent compilation cache, in $XDG_CACHE_HOME/spamlang/xla unless
    JAX_COMPILATION_CACHE_DIR says where; SPAMLANG_COMPILE_CACHE=0 turns it off."""
    if os.environ.get("SPAMLANG_COMPILE_CACHE", "1") == "0" or os.environ.get(
        "JAX_COMPILATION_CACHE_DIR"
    ):
        return  # off, or JAX already reads the folder from its own variable
    import jax

    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    jax.config.update("jax_compilation_cache_dir", os.path.join(root, "spamlang", "xla"))


def handler(args) -> int:
    config = config_from_args(args)
    if args.dry_run:
        print(json.dumps(config.to_json(), indent=2, sort_keys=True))
        return 0
    if args.distributed:
        import jax

        jax.distributed.initialize()  # before any other JAX call touches a backend
    from spamlang.perf import check_peak_env
    from spamlang.rundir import RESULT, check_path

    check_path(args.out)  # all three before any directory exists
    check_peak_env()
    finished = os.path.exists(os.path.join(args.out, RESULT))
    if not finished:  # memory refused, a large output warned of (`spamlang.sweep.fit`)
        from spamlang.sweep.fit import check_run

        if warning := check_run(config):
            print(warning, file=sys.stderr)
    enable_compile_cache()
    from spamlang import tracking
    from spamlang.train.run import Interrupted, run_group

    kind = tracking.parse_kind(args.tracker)
    spec = tracking.TrackerSpec(kind, explicit=True, root=Path(args.out)) if kind else None
    try:
        with tracking.session(spec):  # an explicit tracker that cannot start: exit 2 here
            if not finished and not args.quiet and (note := budget_note(config)):
                print(note, file=sys.stderr)
            (result,) = run_group([config], [args.out], quiet=args.quiet)
    except Interrupted as e:
        print(f"spamlang train: {e}", file=sys.stderr)
        return e.exit_status
    if finished:  # said after run_group, which refuses a finished run of another config
        print(f"{args.out} is already finished ({RESULT}); nothing to train", file=sys.stderr)
        from spamlang.rundir.reading import symbols_damage

        damage = symbols_damage(args.out)
        if damage:  # not missing: its per-symbol results are gone, and a rerun cannot remake them
            print(
                f"warning: {damage}; its per-symbol results are lost (train the run again into "
                "a new directory to get them)",
                file=sys.stderr,
            )
    print(json.dumps(result, indent=2, sort_keys=True) if args.json else summary(args.out, result))
    return 0


def budget_note(config) -> str | None:
    """One line when --tokens is not a whole number of steps: the run trains fewer tokens."""
    trained = config.steps * config.tokens_per_step
    if trained == config.tokens:
        return None
    return (
        f"note: --tokens {config.tokens:,} is not a whole number of steps of "
        f"{config.tokens_per_step:,} tokens (batch {config.batch_size} x seq_len "
        f"{config.seq_len}): training {config.steps:,} steps = {trained:,} tokens"
    )


def summary(out: str, result: dict) -> str:
    """What a person reads after a run (--json: the whole result.json)."""

    def num(key: str, spec: str = ".4f") -> str:
        value = result.get(key)
        return "-" if value is None else format(value, spec)

    status = (
        f"DIVERGED at step {result.get('diverged_step')}"
        if result.get("diverged")
        else f"{result.get('steps', 0):,} steps, {result.get('tokens', 0):,} tokens"
    )
    floor = result.get("optimal_loss")
    corpus = result.get("corpus")
    if corpus:  # real text: the bar a model without context sets, not a repetition score
        tail = f"val unigram loss {corpus['val_unigram_loss']:.4f}"
    else:
        tail = f"repetition accuracy {num('repetition_accuracy', '.3f')}"
    return "\n".join(
        [
            f"{out}: {status}",
            f"  eval loss {num('final_eval_loss')}"
            + (f" (floor {num('optimal_loss')})" if floor else "")
            + f", train loss {num('final_train_loss')}, {tail}",
            f"  {num('tokens_per_s', ',.0f')} tokens/s, {num('wall_seconds', '.1f')} s; every "
            f"column: {os.path.join(out, 'result.json')} (or --json)",
        ]
    )
