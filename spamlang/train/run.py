"""Train one run (or a vmapped group of K runs) into run directories, resumably: the one loop.

A finished run directory is returned as it is, an unfinished one resumes to the numbers of an
uninterrupted run, and a diverged run is a result. The loop, in nanodo's shape, only dispatches
steps between log steps; at one it reads the interval's metrics in one transfer, then evaluates,
checkpoints and acts on a signal (docs/design.md, "How training is built").
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import signal
import statistics
import threading
import time
from pathlib import Path

import jax
import numpy as np

from spamlang import rundir, tracking
from spamlang.coverage import history
from spamlang.coverage.symbols import RESULT_KEYS
from spamlang.errors import Interrupted, UserError
from spamlang.perf import peak_flops, timing_machine
from spamlang.progress import Progress, wait_for
from spamlang.rundir.checkpoint import RunCheckpoints
from spamlang.rundir.lock import hold_run_dirs
from spamlang.rundir.reading import last_row, read_result
from spamlang.rundir.schema import RESULT_COLUMNS, RESULT_EXTRAS
from spamlang.train.config import MEMBER_FIELDS, TrainConfig
from spamlang.train.step import HEAD_STEP
from spamlang.train.step import program as get_program


def run_training(config, out_dir, *, quiet=False, stop_after_step: int | None = None) -> dict:
    """Train `config` into `out_dir`, resuming, or read its result if finished; result.json's dict.
    `stop_after_step`: checkpoint and raise `Interrupted` at the first log step from it on."""
    return run_group([config], [out_dir], quiet=quiet, stop_after_step=stop_after_step)[0]


def run_group(configs, out_dirs, *, quiet=False, stop_after_step: int | None = None) -> list[dict]:
    """Train configs that differ only in MEMBER_FIELDS together (vmapped), one run dir each."""
    configs, out_dirs = list(configs), [Path(d) for d in out_dirs]
    if len(configs) != len(out_dirs):
        raise UserError(f"run_group: {len(configs)} configs but {len(out_dirs)} out dirs")
    if len({d.resolve() for d in out_dirs}) != len(out_dirs):
        raise UserError("run_group: out dirs must be distinct")
    check_groupable(configs)
    from spamlang.model.hf_checkpoint import check_unstarted_weights

    writer = jax.process_index() == 0
    check_unstarted_weights(configs, out_dirs)
    # Only unfinished members are locked, before anything is written.
    pending = [rundir.make_dir(d) for d in out_dirs if not (d / rundir.RESULT).exists()]
    with hold_run_dirs(pending, writer):
        dirs = [rundir.prepare(d, c, write=writer) for c, d in zip(configs, out_dirs)]
        results = [read_result(d) for d in dirs]
        if todo := [i for i, r in enumerate(results) if r is None]:
            # One process's progress is enough: under srun every process prints to one log.
            kw = dict(quiet=quiet or not writer, writer=writer, stop_after_step=stop_after_step)
            done = train_members([configs[i] for i in todo], [dirs[i] for i in todo], **kw)
            for i, result in zip(todo, done):
                results[i] = result
    return results


def load_run(run_dir):
    """(TrainConfig, model) from a run's newest checkpoint, on "xla" kernels: readers sample and
    take forward-mode Jacobians, which the cpu kernels' custom VJPs do not support."""
    run_dir = Path(run_dir)
    path = run_dir / rundir.CONFIG
    if not run_dir.is_dir():
        raise UserError(f"run directory {run_dir} does not exist")
    if not path.is_file():
        raise UserError(f"{run_dir} is not a run directory (no {rundir.CONFIG})")
    try:
        config = TrainConfig.from_json(rundir.read_json(path))
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read {path}: {str(e).splitlines()[0] if str(e) else e}") from None
    if not (run_dir / rundir.CHECKPOINTS).is_dir():
        raise UserError(f"{run_dir} has no checkpoints yet")
    prog = get_program(config if config.kernels == "xla" else config.replace(kernels="xla"))
    ckpt = RunCheckpoints(run_dir / rundir.CHECKPOINTS, config.keep_checkpoints, read_only=True)
    with contextlib.closing(ckpt):
        restored = ckpt.restore_latest(prog.abstract_state())
    if restored is None:
        raise UserError(f"{run_dir} has no checkpoints yet")
    return config, prog.model(prog.stack([restored[1]]))


def check_groupable(configs) -> None:
    """UserError unless `configs` is non-empty and differs only in MEMBER_FIELDS."""
    if not configs:
        raise UserError("a run group needs at least one config")
    for i, other in enumerate(configs[1:], start=1):
        for f in dataclasses.fields(other):
            mine, theirs = getattr(configs[0], f.name), getattr(other, f.name)
            if f.name not in MEMBER_FIELDS and mine != theirs:
                raise UserError(
                    f"configs in a run group may differ only in {', '.join(MEMBER_FIELDS)}; "
                    f"config {i} differs in {f.name} ({mine!r} vs {theirs!r})"
                )


@contextlib.contextmanager
def stop_requests():
    """Yields the list the first SIGINT / SIGTERM goes to; a second Ctrl-C interrupts at once."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received  # signals are only delivered to the main thread
        return

    def restore(*_):
        for s, h in previous.items():
            signal.signal(s, h)

    def handler(signum, frame):
        received.append(signum)
        restore()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        restore()


def stop_signal(received: list, step: int, stop_after_step: int | None) -> int | None:
    """The signal to stop on at this log step (0: `stop_after_step`), agreed by all processes
    (one allgather a log step): if one process saved and another did not, the saves deadlock."""
    if stop_after_step is not None and step >= stop_after_step:
        return 0
    signum = received[0] if received else 0
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        signum = int(np.max(multihost_utils.process_allgather(np.int32(signum))))
    return signum or None


_TRAIN_KEYS = ("loss", "accuracy", "grad_norm")  # averaged over the steps of a log interval
# Evaluation outputs too big for a row: the curve goes to result.json, the losses to symbols.npz.
_NOT_LOGGED = ("symbol_curve", "symbol_loss", "target_buckets", "corpus")
# The state arrays of a symbol's history, by their names in symbol_evals.jsonl and symbols.npz.
_HISTORY = dict(
    appearances="exposure", first_step="first_seen", last_step="last_seen", max_gap="max_gap"
)


@dataclasses.dataclass(eq=False)  # members are told apart by identity
class _Member:  # one member's run directory and where it stands
    config: object
    dir: Path
    ckpt: RunCheckpoints
    log: rundir.MetricsLog | None = None
    track: rundir.MetricsLog | None = None  # track.jsonl, when the run tracks symbols
    symbols: rundir.MetricsLog | None = None  # symbol_evals.jsonl, under an exact evaluation
    step: int = 0  # steps done
    state: object = None  # restored or initial state, until its group stacks it
    wall_before: float = 0.0  # wall seconds of earlier processes
    final: bool = False  # restored from the checkpoint `_finish` saves: only result.json is due
    result: dict | None = None


def train_members(configs, dirs, *, quiet: bool, writer: bool, stop_after_step) -> list[dict]:
    # Every member to the end (or an interruption); their results.
    cfg, t0 = configs[0], time.perf_counter()  # members share all but MEMBER_FIELDS
    peak = functools.partial(peak_flops, cfg.dtype)
    members = [
        _Member(c, d, RunCheckpoints(d / rundir.CHECKPOINTS, c.keep_checkpoints))
        for c, d in zip(configs, dirs)
    ]
    progress, raised = None, True
    with stop_requests() as received:
        try:
            program = get_program(cfg)
            _restore(program, members, writer)
            label = dirs[0].name if len(dirs) == 1 else f"group of {len(dirs)}"
            progress = Progress(cfg.steps, min(m.step for m in members), label=label, quiet=quiet)
            peak()  # measured once per process, before any interval is timed
            for final, step in sorted({(m.final, m.step) for m in members}):
                group = [m for m in members if (m.final, m.step) == (final, step)]
                if step and not final:
                    progress.message(
                        f"resumed {len(group)} run(s) from the checkpoint at step {step}"
                    )
                _Group(program, group, progress, writer, peak, t0).run(received, stop_after_step)
            if received:  # finished anyway, but a sweep calling us must still stop
                raise Interrupted(cfg.steps, received[0])
            raised = False
            return [m.result for m in members]
        finally:
            # Every log and manager is closed, whatever fails; the first error wins.
            owned = [x for m in members for x in (m.ckpt, m.log, m.track, m.symbols)]
            failed = []
            for x in [progress, *owned]:
                try:
                    x is None or x.close()
                except Exception as e:  # noqa: BLE001 (kept, and raised below if it is the first)
                    failed.append(e)
            if failed and not raised:
                raise failed[0]


def _common_steps(members: list[_Member]) -> dict[int, int | None]:
    """{id(member): the newest step it may resume from} (None: any): a kill between two members'
    saves sends all back to the newest step they share, so the group stays bitwise an unkilled
    one."""
    by_name = {m.dir.name: m for m in members}
    steps = {id(m): set(m.ckpt.steps()) for m in members}
    cap: dict[int, int | None] = {id(m): None for m in members}
    changed = True
    while changed:
        changed = False
        for m in members:
            mine = sorted(s for s in steps[id(m)] if cap[id(m)] is None or s <= cap[id(m)])
            if not mine:
                continue
            names = m.ckpt.meta(mine[-1]).get("group") or ()
            partners = [by_name[n] for n in names if n in by_name and by_name[n] is not m]
            if all(mine[-1] in steps[id(p)] for p in partners):
                continue
            shared = set(mine).intersection(*(steps[id(p)] for p in partners))
            common = max(shared, default=-1)  # -1: no step in common, a fresh start
            for x in (m, *partners):
                if cap[id(x)] is None or common < cap[id(x)]:
                    cap[id(x)], changed = common, True
    return cap


def _restore(program, members: list[_Member], writer: bool) -> None:
    """Each member from its newest readable checkpoint no newer than `_common_steps`, or fresh."""
    abstract = program.abstract_state()
    caps = _common_steps(members) if len(members) > 1 else {}
    for m in members:
        cap, logged = caps.get(id(m)), _last_logged(m.dir)
        if logged is not None and (cap is None or logged < cap):
            # A checkpoint newer than the newest whole train row cannot rebuild that row.
            cap = logged
        if (restored := m.ckpt.restore_latest(abstract, at_most=cap)) is not None:
            m.step, m.state, meta = restored
            m.wall_before, m.final = float(meta.get("wall_seconds", 0.0)), bool(meta.get("final"))
        m.log = rundir.MetricsLog(m.dir, m.step, write=writer)
        if writer:  # the rows also go to the command's tracker, when it has one
            m.log = tracking.attach(m.log, m.dir, m.config, m.step)
        if m.config.track_symbols:
            m.track = rundir.MetricsLog(m.dir, m.step, write=writer, name=rundir.TRACK)
        if program.evaluation.exact:
            m.symbols = rundir.MetricsLog(m.dir, m.step, write=writer, name=rundir.SYMBOL_EVALS)
    fresh = [m for m in members if m.state is None]
    # init_from's weights are read once for the group, and never for a restored run.
    pretrained = program.pretrained_params() if fresh else None
    for m in fresh:
        m.state = program.init_member(m.config.seed, m.config.lr, pretrained, m.config)


_TAIL = 1 << 20  # how much of metrics.jsonl's end `_last_logged` reads


def _last_logged(run_dir: Path) -> int | None:
    """The step of the newest whole train row (0: none); None without one in the last MiB."""
    path = run_dir / rundir.METRICS
    if not path.is_file():
        return None
    if (row := last_row(path, lambda r: r.get("kind") == "train", tail_bytes=_TAIL)) is not None:
        return int(row.get("step", 0))
    return 0 if path.stat().st_size <= _TAIL else None


class _Group:
    """Members at one step, trained together (vmapped) from there to the end."""

    def __init__(self, program, members: list[_Member], progress, writer, peak, t_start):
        # The members share every field but MEMBER_FIELDS: the first one's cadence is theirs.
        self.program, self.cfg, self.ms = program, members[0].config, members
        self.progress, self.writer, self.peak, self.t_start = progress, writer, peak, t_start
        self.state = program.stack([m.state for m in members])
        for m in members:
            m.state = None  # the stacked state owns the buffers now
        # A memory-mapped corpus's batches are made on the host from each member's data key.
        host = program.host_windows is not None
        self.data_keys = jax.device_get(self.state["data_key"]) if host else None
        self.pending: list = []  # (step, device metrics) not yet read
        self.clock: tuple[float, int] | None = None  # (time, step) the open interval began

    def run(self, received: list, stop_after_step: int | None) -> None:
        cfg, step = self.cfg, self.ms[0].step
        if self.ms[0].final:  # a crash between the final checkpoint and result.json
            flags = jax.device_get((self.state["diverged"], self.state["diverged_step"]))
            diverged = {j: int(s) + 1 for j, (d, s) in enumerate(zip(*flags)) if d}
            return self._finish(self.ms, diverged, step, write_rows=False)
        if step == 0 and cfg.diag_every:
            # The bottleneck at init, so that the log shows how it moves; once.
            self._diag(0, [m for m in self.ms if m.log.last_diag() is None])
        if 0 < step < cfg.steps:
            self._due_rows(step, self.ms)
        deferred = None
        while step < cfg.steps and any(m.result is None for m in self.ms):
            keys = self.data_keys
            batch = None if keys is None else self.program.host_batch(keys, step)
            self.state, metrics = self.program.step(self.state, batch)
            step += 1
            self.pending.append((step, metrics))
            if deferred is not None:  # the last log step's row, now that this step is queued
                self._log(deferred)
                deferred = None
            if self.clock is None:  # time from the end of the first (compiling) step
                jax.block_until_ready(self.state)
                self.clock = (time.perf_counter(), step)
            self.progress.advance(step)
            every = (cfg.eval_every, cfg.diag_every, cfg.checkpoint_every)
            due = [n and step % n == 0 for n in every]
            if step % cfg.log_every and not any(due) and step < cfg.steps:
                continue
            signum = stop_signal(received, step, stop_after_step)
            if not any(due) and signum is None and step < cfg.steps:
                deferred = step
                continue
            self._log(step)
            live = [m for m in self.ms if m.result is None]
            if step == cfg.steps:
                self._finish(live, {}, step)
            elif signum is not None and live:
                self._save(step, live)
                raise Interrupted(step, signum or None)
            elif live:
                self._due_rows(step, live)
                if due[2]:
                    self._save(step, live)
            self.clock = (time.perf_counter(), step)  # evals and saves are not train time
        if deferred is not None:
            self._log(deferred)

    def _due_rows(self, step: int, members: list[_Member]) -> None:
        """The eval and diag rows due at `step` that `members` lack (a stop saves before them)."""
        cfg, evals = self.cfg, {}
        if cfg.eval_every and step % cfg.eval_every == 0:
            if late := [m for m in members if not _has_row(m.log, "eval", step)]:
                evals = self._evaluate(late, step)
        if cfg.diag_every and step % cfg.diag_every == 0:
            late = [m for m in members if not _has_row(m.log, "diag", step)]
            self._diag(step, late, evals if all(id(m) in evals for m in late) else None)

    def _log(self, step: int) -> None:
        """Read the metrics of steps <= `step` (one transfer) and write each member's row."""
        take = [(s, m) for s, m in self.pending if s <= step]
        self.pending = self.pending[len(take) :]
        host = jax.device_get([m for _, m in take])
        now, (began, first) = time.perf_counter(), self.clock
        timed = step - first
        tokens_per_s = timed * self.cfg.tokens_per_step / (now - began) if timed > 0 else None
        peak = self.peak() if tokens_per_s else None
        mfu = timed * self.program.flops_per_step / (now - began) / peak if peak else None
        self.clock = (now, step)
        losses, diverged = [], {}
        for j, m in enumerate(self.ms):
            entries = [
                (s, {k: float(v[j]) if v.ndim == 1 else v[j].tolist() for k, v in values.items()})
                for (s, _), values in zip(take, host)
            ]
            if m.result is not None or not entries:
                continue
            if entries[-1][1]["diverged"]:  # the row ends at the diverging batch
                diverged[j] = int(entries[-1][1]["diverged_step"]) + 1
                entries = [e for e in entries if e[0] <= diverged[j]] or entries
            for s, values in entries if m.track is not None else ():
                seen = [int(x) for x in values["track_seen"]]
                row = {"step": s, "ids": self.cfg.tracked_ids, "seen": seen}
                row.update({k[6:]: values[k] for k in ("track_embed", "track_head") if k in values})
                m.track.append(row)
            row = {"kind": "train", "step": step, "tokens": step * self.cfg.tokens_per_step}
            row.update({k: sum(e[1][k] for e in entries) / len(entries) for k in _TRAIN_KEYS})
            for k in HEAD_STEP:  # averaged over the steps that have them (NaN: no absent row)
                finite = [e[1][k] for e in entries if np.isfinite(e[1][k])]
                row[k] = sum(finite) / len(finite) if finite else None
            row.update(lr=entries[-1][1]["lr"], tokens_per_s=tokens_per_s, mfu=mfu)
            m.log.append(row)
            losses.append(row["loss"])
        self.progress.logged(step, losses, tokens_per_s)
        if diverged:
            self._finish([self.ms[j] for j in diverged], diverged, step)

    def _rows(self, kind: str, step: int, members: list[_Member], values: dict) -> None:
        head = {"kind": kind, "step": step, "tokens": step * self.cfg.tokens_per_step}
        for m in members:
            m.log.append(head | {k: v for k, v in values[id(m)].items() if k not in _NOT_LOGGED})

    def _history(self) -> dict[str, np.ndarray]:
        """Every member's symbol history ({symbols.npz name: int32[K, V]}), in one transfer."""
        host = jax.device_get({k: self.state[v] for k, v in _HISTORY.items()})
        return {k: np.asarray(v) for k, v in host.items()}

    def _evaluate(self, members: list[_Member], step=None, past=None, final=False) -> dict:
        """{id(member): its evaluation} (the whole group is evaluated: one program); with a `step`,
        written as eval rows and symbol rows (from the history `past`, read when None)."""
        cfg = self.cfg
        what = (
            f"evaluating {cfg.eval_sequences:,} sequences (loss, and greedy decoding to "
            f"{cfg.seq_len:,} tokens) in batches of {cfg.eval_batch:,}"
            if cfg.corpus is None
            else f"evaluating {'all of' if final else 'the start of'} val.bin"
        )
        wait = functools.partial(wait_for, progress=self.progress, what=what)
        out = self.program.evaluate(self.state, [m.config for m in self.ms], wait=wait, final=final)
        evals = {id(m): out[self.ms.index(m)] for m in members}
        if step is None:
            return evals
        self._rows("eval", step, members, evals)
        if logged := [m for m in members if m.symbols is not None]:
            past = self._history() if past is None else past
            for m in logged:
                own = {k: v[self.ms.index(m)] for k, v in past.items()}
                m.symbols.append(history.eval_row(step, evals[id(m)]["symbol_loss"], own))
        return evals

    def _diag(self, step: int, members: list[_Member], evals=None) -> dict[int, dict]:
        """Diag rows of `members`, with each one's per-symbol learning, from `evals` when exact."""
        if not members:
            return {}
        from spamlang.diagnostics.training import logged_diagnostics

        cfg, evaluation = self.cfg, self.program.evaluation
        fn, tokens = logged_diagnostics(
            self.program.lang, cfg.batch_size, cfg.seq_len, cfg.loss_chunk or None
        )
        exact = evals is not None and evaluation.exact
        learning = None if exact else evaluation.symbol_stats(self.state)
        values = {}
        for m in members:
            j = self.ms.index(m)
            got = jax.device_get(fn(self.program.model(self.state, j), tokens))
            values[id(m)] = {k: float(v) for k, v in got.items()}
            if exact:
                values[id(m)].update({k: evals[id(m)][k] for k in RESULT_KEYS})
            elif learning:
                values[id(m)].update(learning[j])
        self._rows("diag", step, members, values)
        return values

    def _save(self, step: int, members: list[_Member], final: bool = False) -> None:
        # After their rows are durable.
        wall = time.perf_counter() - self.t_start
        # The members saved together, for `_common_steps`; pruned once all have this step.
        together = {"group": sorted(m.dir.name for m in members)} if len(members) > 1 else {}
        for m in members:
            for log in filter(None, (m.log, m.track, m.symbols)):
                log.sync()
            meta = {"wall_seconds": m.wall_before + wall, "final": final, **together}
            m.ckpt.save(step, self.program.member(self.state, self.ms.index(m)), meta)
        for m in members:
            m.ckpt.prune()

    def _finish(self, members: list[_Member], diverged: dict, step: int, write_rows=True) -> None:
        """Final eval (+ diag), checkpoint, result.json (`write_rows=False`: restored)."""
        # The history read once, for symbol_evals.jsonl's last row and for symbols.npz.
        past = self._history() if any(m.symbols is not None for m in members) else {}
        if write_rows:
            evals = self._evaluate(members, step, past, final=True)
            healthy = [m for m in members if self.ms.index(m) not in diverged]
            diags = self._diag(step, healthy, evals) if self.cfg.diag_every else {}
            self._save(step, members, final=True)
        else:
            evals = self._evaluate(members, final=True)
            diags = {id(m): m.log.last_diag() for m in members}
        wall = time.perf_counter() - self.t_start
        for m in members:
            j, ev = self.ms.index(m), evals[id(m)]
            # A diverged member's steps after its diverging batch were frozen: not counted.
            at, diag = diverged.get(j, step), diags.get(id(m)) or {}
            rates = [x for x in m.log.train("tokens_per_s") if x]
            values = {
                **ev,  # coverage, held-out and per-symbol fields under their column names
                "final_train_loss": rundir.final_train_loss(m.log.train("loss")),
                "final_eval_loss": ev["eval_loss"],
                "optimal_loss": self.program.optimal_loss,
                "diverged": j in diverged,
                "diverged_step": diverged.get(j),
                "steps": at,
                "tokens": at * self.cfg.tokens_per_step,
                # The median interval: robust to one slowed by the machine's other work.
                "tokens_per_s": statistics.median(rates) if rates else None,
                "wall_seconds": m.wall_before + wall,
                **timing_machine(),  # a timing read on another machine says so
                **{k: diag.get(k) for k in ("kernel_fraction", "projected_cosine")},
                # The head's rank, for a (width, rank) grid over heads of different kinds.
                "head_rank": self.program.model_config.head_rank,
                "symbol_history": m.symbols and history.summary(m.symbols.records),
            }
            m.result = rundir.json_safe(
                {k: values.get(k) for k in (*RESULT_COLUMNS, *RESULT_EXTRAS)}
            )
            if self.writer:
                if "symbol_loss" in ev:  # symbols.npz before result.json, which marks the run
                    # finished: each symbol's final loss, probability and history
                    own = {k: v[j] for k, v in past.items()}
                    gap = history.mean_gap(own["first_step"], own["last_step"], own["appearances"])
                    p_V = self.program.evaluation.probability_V
                    own.update(loss=ev["symbol_loss"], probability=p_V, mean_gap=gap)
                    rundir.write_symbols(m.dir, steps=at, **own)
                rundir.write_result(m.dir, m.result)
                tracking.finished(m.log, m.result)
            status = f"diverged at step {at}" if j in diverged else f"finished after {at} steps"
            said = {"final train loss": "final_train_loss", "eval loss": "final_eval_loss"}
            if self.cfg.corpus is None:
                said["repetition accuracy"] = "repetition_accuracy"
            shown = ", ".join(f"{words} {_fmt(m.result[k])}" for words, k in said.items())
            self.progress.message(f"{m.dir}: {status}; {shown}")


def _has_row(log: rundir.MetricsLog, kind: str, step: int) -> bool:
    return any(r.get("kind") == kind and r.get("step") == step for r in log.records)


def _fmt(value) -> str:
    return "null" if value is None else f"{value:.4f}"
