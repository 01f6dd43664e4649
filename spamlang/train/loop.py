"""The one training loop: K >= 1 run directories, one `Program`, one vmapped step.

Every member restores from its own newest checkpoint. Members at different steps (a group
interrupted between checkpoints, an LR added to a sweep afterwards) never throw work away:
the members furthest behind train on their own until they reach the next member's step,
then train together with it, until all share a step and train as one group to the end.
Metrics reach the host only at log steps, in one transfer per interval, and a log step's
metrics are read only once the next step is dispatched behind it (unless the step also
evaluates, checkpoints or ends the run, which read the state anyway), so the device is never
idle while the host writes rows.
"""

from __future__ import annotations

import dataclasses
import signal
import time
from pathlib import Path

import jax
import numpy as np

from spamlang.schema import RESULT_COLUMNS, RESULT_EXTRAS
from spamlang.train import rundir
from spamlang.train.checkpoint import RunCheckpoints
from spamlang.train.progress import Progress
from spamlang.train.step import program as get_program

_TRAIN_KEYS = ("loss", "accuracy", "grad_norm")  # averaged over the steps of a log interval


class Interrupted(KeyboardInterrupt):
    """The run stopped early on request (SIGINT / SIGTERM / `stop_after_step`), checkpointed.

    A KeyboardInterrupt, so that a broad `except Exception` in a sweep does not swallow it.
    `exit_status` is what a CLI should return (130 for SIGINT, 143 for SIGTERM).
    """

    def __init__(self, step: int, signum: int | None = None):
        self.step, self.signum = step, signum
        what = signal.Signals(signum).name if signum else "stop requested"
        super().__init__(f"{what}: stopped at step {step} with a checkpoint saved; "
                         f"rerun the same command to resume")

    @property
    def exit_status(self) -> int:
        return 128 + int(self.signum or signal.SIGINT)


@dataclasses.dataclass
class _Member:
    """The host-side bookkeeping of one member's run directory."""

    config: object
    dir: Path
    ckpt: RunCheckpoints
    step: int = 0  # steps done (where `state` is)
    state: object = None  # this member's state while it is not training in a phase
    log: rundir.MetricsLog | None = None
    track: rundir.MetricsLog | None = None  # track.jsonl, when the run tracks symbols
    active: bool = True  # False once its result is written
    pending: list = dataclasses.field(default_factory=list)  # [(step, {metric: float})] unlogged
    train_seconds: float = 0.0  # time in train steps over all segments (no compile, eval, saves)
    timed_tokens: int = 0  # tokens trained during train_seconds
    wall_before: float = 0.0  # wall seconds of earlier segments
    restored_final: bool = False  # resumed from the checkpoint `_finish` saves (result pending)

    def meta(self, wall_now: float, final: bool) -> dict:
        return {"pending": [[s, m] for s, m in self.pending], "train_seconds": self.train_seconds,
                "timed_tokens": self.timed_tokens, "wall_seconds": self.wall_before + wall_now,
                "final": final}

    def load_meta(self, meta: dict) -> None:
        self.pending = [(int(s), dict(v)) for s, v in meta.get("pending", [])]
        self.train_seconds = float(meta.get("train_seconds", 0.0))
        self.timed_tokens = int(meta.get("timed_tokens", 0))
        self.wall_before = float(meta.get("wall_seconds", 0.0))
        self.restored_final = bool(meta.get("final", False))


class Loop:
    """One segment of K members: restore or init, train, log, evaluate, checkpoint, finish."""

    def __init__(self, configs, dirs, *, quiet: bool, writer: bool, stop_after_step, peak):
        self.cfg = configs[0]  # members share everything but MEMBER_FIELDS
        self.total, self.tokens_per_step = self.cfg.steps, self.cfg.tokens_per_step
        self.quiet, self.writer, self.stop_after_step = quiet, writer, stop_after_step
        self.peak = peak  # () -> FLOP/s that MFU divides by, or None
        self.ms = [_Member(c, d, RunCheckpoints(d / rundir.CHECKPOINTS, c.keep_checkpoints))
                   for c, d in zip(configs, dirs)]

    def run(self, received: list) -> list[dict]:
        """Train every member to the end (or an interruption); returns their results."""
        self.t_start = time.perf_counter()
        self.results: list = [None] * len(self.ms)
        try:
            self.program = get_program(self.cfg)
            self._restore_or_init()
            label = self.ms[0].dir.name if len(self.ms) == 1 else f"group of {len(self.ms)}"
            self.progress = Progress(self.total, min(m.step for m in self.ms), label=label,
                                     quiet=self.quiet, line_every=10 * self.cfg.log_every)
            for step in sorted({m.step for m in self.ms if m.step}):
                self.progress.message(f"resumed {sum(m.step == step for m in self.ms)} run(s) "
                                      f"from the checkpoint at step {step}")
            done = [i for i, m in enumerate(self.ms) if m.restored_final]
            if done:  # a crash between the final checkpoint and result.json: finish them now
                self._finish(done, self._diverged_at(done), None, write_rows=False)
            self.peak()  # measured once per process, before any interval is timed
            while any(m.active for m in self.ms):
                live = [i for i, m in enumerate(self.ms) if m.active]
                steps = sorted({self.ms[i].step for i in live})
                idx = [i for i in live if self.ms[i].step == steps[0]]
                stop = steps[1] if len(steps) > 1 else self.total
                if len(steps) > 1:
                    self.progress.message(f"{len(idx)} run(s) at step {steps[0]} catch up to "
                                          f"step {stop} before training with the others")
                self._phase(idx, stop, received)
            if received:  # finished anyway, but a sweep calling us must still stop
                raise Interrupted(self.total, received[0])
            return self.results
        finally:
            if hasattr(self, "progress"):
                self.progress.close()
            for m in self.ms:
                m.ckpt.close()
                for log in (m.log, m.track):
                    if log is not None:
                        log.close()

    # ----- restore ---------------------------------------------------------------------------
    def _restore_or_init(self) -> None:
        abstract = self.program.abstract_state()
        legacy = self.program.legacy_abstract_state()
        for m in self.ms:
            restored = m.ckpt.restore_latest(
                abstract, (legacy, lambda state, c=m.config: self.program.from_legacy(state, c)))
            if restored is not None:
                m.step, m.state, meta = restored
                m.load_meta(meta)
            m.log = rundir.MetricsLog(m.dir, m.step, write=self.writer)
            if self.cfg.track_symbols:
                m.track = rundir.MetricsLog(m.dir, m.step, write=self.writer, name=rundir.TRACK)
        fresh = [m for m in self.ms if m.state is None]
        # init_from's weights are read once for the group, and never for a restored run.
        pretrained = self.program.pretrained_params() if fresh else None
        for m in fresh:
            m.state = self.program.init_member(m.config.seed, m.config.lr, pretrained, m.config)

    def _diverged_at(self, idx: list[int]) -> dict[int, int]:
        flags = jax.device_get([(self.ms[i].state["diverged"], self.ms[i].state["diverged_step"])
                                for i in idx])
        return {i: int(s) + 1 for i, (d, s) in zip(idx, flags) if bool(d)}

    # ----- one phase: members idx from their common step to `stop` ------------------------------
    def _phase(self, idx: list[int], stop: int, received: list) -> None:
        self.idx = idx
        self.state = self.program.stack([self.ms[i].state for i in idx])
        for i in idx:
            self.ms[i].state = None  # the stacked state owns the buffers now
        step = self.ms[idx[0]].step
        self.pending_dev, self.interval_seconds, self.timed_steps = [], 0.0, 0
        self.t_interval, self.paused, self.deferred = None, False, None
        if step == 0 and self.cfg.diag_every:
            # The bottleneck at init, so that the log shows how it moves, not only where it
            # ends; once, even when a run restarts from scratch.
            fresh = [i for i in idx if not any(r.get("kind") == "diag" for r in self.ms[i].log.records)]
            if fresh:
                self._diag(0, fresh)
        while step < stop and any(self.ms[i].active for i in idx):
            if self.paused:  # evals and saves are not train time
                self.t_interval, self.paused = time.perf_counter(), False
            self.state, metrics = self.program.step(self.state)
            step += 1
            self.pending_dev.append((step, metrics))
            if self.t_interval is None:  # time from the end of the first (compiling) step
                jax.block_until_ready(self.state)
                self.t_interval = time.perf_counter()
            else:
                self.timed_steps += 1
            self._flush_log(in_flight=1)  # the last log step's row, now that this step is queued
            self.progress.advance(step)
            self._boundary(step)
            signum = self._stop_signal(received, step)
            if signum is not None and step < self.total and any(self.ms[i].active for i in idx):
                self._flush_log()
                self._fetch()
                self._bank_time()
                self._save(step)
                raise Interrupted(step, signum or None)
        self._flush_log()
        self._fetch()
        self._bank_time()
        for j, i in enumerate(idx):
            self.ms[i].step, self.ms[i].state = step, self.program.member(self.state, j)

    def _boundary(self, step: int) -> None:
        """Everything after a step: log, then eval, diag, checkpoint, or the finish."""
        cfg, final = self.cfg, step == self.total
        if step % cfg.log_every == 0 or final:
            busy = final or any(every and step % every == 0 for every in
                                (cfg.eval_every, cfg.diag_every, cfg.checkpoint_every))
            if busy:  # the work below reads the state anyway: log now
                self._log(step)
            else:  # read this step's metrics only once the next step is queued behind it
                self.deferred = step
                return
        active = self._active()
        if final and active:
            self._finish(active, {}, step)
        elif active:
            if cfg.eval_every and step % cfg.eval_every == 0:
                self._rows("eval", step, active, self._evaluate())
            if cfg.diag_every and step % cfg.diag_every == 0:
                self._diag(step, active)
            if cfg.checkpoint_every and step % cfg.checkpoint_every == 0:
                self._fetch()
                self._save(step)

    def _active(self) -> list[int]:
        return [i for i in self.idx if self.ms[i].active]

    def _stop_signal(self, received: list, step: int) -> int | None:
        """The signal to stop on here (0: `stop_after_step`), or None to go on. With several
        processes all must agree, or their saves would deadlock: they decide together at log
        steps only, so the collective is rare, and all exit with the same status."""
        if step == self.stop_after_step:
            return 0
        if jax.process_count() == 1:
            return received[0] if received else None
        if step % self.cfg.log_every:
            return None
        from jax.experimental import multihost_utils

        signum = int(np.max(multihost_utils.process_allgather(np.int32(received[0] if received
                                                                         else 0))))
        return signum or None

    # ----- timing ------------------------------------------------------------------------------
    def _pause(self) -> None:
        """Close the current timing interval before non-training work (eval, saves)."""
        if self.t_interval is not None and not self.paused:
            jax.block_until_ready(self.state)
            self.interval_seconds += time.perf_counter() - self.t_interval
        self.paused = True

    def _take_interval(self, in_flight: int = 0) -> tuple[float, int]:
        """(seconds, steps) timed since the last call. Called once the logged step's metrics
        are on the host; `in_flight` steps dispatched after it count in the next interval."""
        if self.t_interval is not None and not self.paused:
            now = time.perf_counter()
            self.interval_seconds += now - self.t_interval
            self.t_interval = now
        in_flight = min(in_flight, self.timed_steps)
        taken = (self.interval_seconds, self.timed_steps - in_flight)
        self.interval_seconds, self.timed_steps = 0.0, in_flight
        return taken

    def _bank_time(self) -> None:
        """Credit the unlogged part of the interval to the phase's members."""
        self._pause()
        seconds, steps = self._take_interval()
        for i in self.idx:
            self.ms[i].train_seconds += seconds
            self.ms[i].timed_tokens += steps * self.tokens_per_step

    # ----- metrics -----------------------------------------------------------------------------
    def _fetch(self, upto: int | None = None) -> None:
        """Move the pending device metrics of steps <= `upto` (all by default) to the members'
        host-side lists, in one transfer; later steps' stay on the device, unwaited for."""
        take = [(s, m) for s, m in self.pending_dev if upto is None or s <= upto]
        self.pending_dev = self.pending_dev[len(take):]
        host = jax.device_get([m for _, m in take])
        for (step, _), values in zip(take, host):
            for j, i in enumerate(self.idx):
                self.ms[i].pending.append((step, {
                    k: float(v[j]) if v.ndim == 1 else v[j].tolist() for k, v in values.items()}))

    def _flush_log(self, in_flight: int = 0) -> None:
        """Write the deferred log step's rows, if any (`in_flight` steps dispatched since)."""
        if self.deferred is not None:
            step, self.deferred = self.deferred, None
            self._log(step, in_flight)

    def _log(self, step: int, in_flight: int = 0) -> None:
        self._fetch(upto=step)
        seconds, timed = self._take_interval(in_flight)
        tokens_per_s = timed * self.tokens_per_step / seconds if timed and seconds > 0 else None
        peak = self.peak() if tokens_per_s else None
        mfu = tokens_per_s * self.program.flops_per_step / self.tokens_per_step / peak \
            if peak else None
        losses, diverged = [], {}
        for j, i in enumerate(self.idx):
            m = self.ms[i]
            entries, m.pending = m.pending, []
            if not m.active or not entries:
                continue
            m.train_seconds += seconds
            m.timed_tokens += timed * self.tokens_per_step
            last = entries[-1][1]  # the member's divergence flags as of `step`
            if last.get("diverged"):  # the row ends at the diverging batch, not the frozen steps
                diverged[i] = int(last["diverged_step"]) + 1
                entries = [e for e in entries if e[0] <= diverged[i]] or entries
            if m.track is not None:
                self._track(m, entries)
            row = {"kind": "train", "step": step, "tokens": step * self.tokens_per_step}
            for key in _TRAIN_KEYS:
                row[key] = sum(e[1][key] for e in entries) / len(entries)
            row.update(lr=entries[-1][1]["lr"], tokens_per_s=tokens_per_s, mfu=mfu)
            m.log.append(row)
            losses.append(row["loss"])
        self.progress.logged(step, losses, tokens_per_s)
        if diverged:
            self._finish(list(diverged), diverged, step)

    def _track(self, m: _Member, entries: list) -> None:
        """One track.jsonl row per step: the tracked rows' updates along themselves and the
        sequences that showed each tracked id (`spamlang.train.tracking`)."""
        ids = self.cfg.tracked_ids
        for step, values in entries:
            row = {"step": step, "ids": ids, "seen": [int(x) for x in values["track_seen"]]}
            row.update({k[len("track_"):]: values[k] for k in ("track_embed", "track_head")
                        if k in values})
            m.track.append(row)

    def _rows(self, kind: str, step: int, idx: list[int], values: dict) -> None:
        for i in idx:
            row = {"kind": kind, "step": step, "tokens": step * self.tokens_per_step}
            scalars = {k: v for k, v in values[i].items() if k != "symbol_curve"}
            self.ms[i].log.append({**row, **scalars})

    def _evaluate(self) -> dict[int, dict]:
        self._pause()
        return dict(zip(self.idx, self.program.evaluate(
            self.state, [self.ms[i].config for i in self.idx])))

    def _diag(self, step: int, idx: list[int]) -> dict[int, dict]:
        self._pause()
        if not hasattr(self, "_diag_jit"):
            from spamlang.diagnostics import diag_metrics

            # A fixed batch keyed by the language, like the eval set: every diag row of every
            # run of a sweep is measured on the same tokens.
            lang, chunk = self.program.lang, self.cfg.loss_chunk or None
            key = jax.random.fold_in(jax.random.PRNGKey(lang.fingerprint()), 0x0D1A6)
            self._diag_tokens = lang.sample(key, min(self.cfg.batch_size, 32), self.cfg.seq_len)
            self._diag_jit = jax.jit(lambda model, t: diag_metrics(model, t, chunk_size=chunk))
        out = {i: jax.device_get(self._diag_jit(self.program.model(self.state, self.idx.index(i)),
                                                self._diag_tokens)) for i in idx}
        values = {i: {k: float(v) for k, v in o.items()} for i, o in out.items()}
        # How many updates a symbol needs, as training goes (a few thousand 2-token sequences).
        learning = self.program.symbol_stats(self.state)
        for i in idx if learning else ():
            values[i].update(learning[self.idx.index(i)])
        self._rows("diag", step, idx, values)
        return values

    # ----- checkpoints and results -------------------------------------------------------------
    def _save(self, step: int, idx: list[int] | None = None, final: bool = False) -> None:
        """Checkpoint members `idx` (default: the phase's active ones), after their metrics."""
        self._pause()
        wall = time.perf_counter() - self.t_start
        for i in self._active() if idx is None else idx:
            m = self.ms[i]
            m.log.sync()
            if m.track is not None:
                m.track.sync()
            member_state = m.state if m.state is not None else \
                self.program.member(self.state, self.idx.index(i))
            m.ckpt.save(step, member_state, m.meta(wall, final))

    def _finish(self, idx: list[int], diverged: dict[int, int], step: int | None,
                write_rows: bool = True) -> None:
        """Final eval (+ diag), checkpoint and result.json of members `idx`; they stop here.

        write_rows=False: members restored from their final checkpoints, outside any phase,
        whose rows are already written (step None: each member's own step).
        """
        diags: dict[int, dict] = {}
        if write_rows:
            evals = self._evaluate()
            self._rows("eval", step, idx, evals)
            healthy = [i for i in idx if i not in diverged]
            if self.cfg.diag_every and healthy:
                diags = self._diag(step, healthy)
            self._save(step, idx, final=True)
        else:
            states = self.program.stack([self.ms[i].state for i in idx])
            evals = dict(zip(idx, self.program.evaluate(states, [self.ms[i].config for i in idx])))
            diags = {i: self.ms[i].log.last_diag() for i in idx}
        wall = time.perf_counter() - self.t_start
        for i in idx:
            m, ev = self.ms[i], evals[i]
            # A diverged member trained up to its diverging batch; the steps after it, up to
            # the log step that noticed, were frozen and are not counted.
            at = diverged.get(i, m.step if step is None else step)
            values = {
                **ev,  # coverage, held-out and per-symbol fields under their column names
                "final_train_loss": rundir.final_train_loss(m.log.train_losses()),
                "final_eval_loss": ev["eval_loss"],
                "optimal_loss": self.program.optimal_loss,
                "diverged": i in diverged,
                "diverged_step": diverged.get(i),
                "steps": at,
                "tokens": at * self.tokens_per_step,
                "tokens_per_s": m.timed_tokens / m.train_seconds if m.train_seconds > 0 else None,
                "wall_seconds": m.wall_before + wall,
                # The bottleneck measured on the final model, when the run logs diagnostics.
                **{k: (diags.get(i) or {}).get(k) for k in ("kernel_fraction", "projected_cosine")},
                # The head's rank, for a (width, rank) grid over heads of different kinds.
                "head_rank": self.program.model_config.head_rank,
            }
            result = rundir.json_safe({k: values.get(k) for k in (*RESULT_COLUMNS, *RESULT_EXTRAS)})
            if self.writer:
                rundir.write_result(m.dir, result)
            self.results[i] = result
            m.active = False
            status = f"diverged at step {at}" if i in diverged else f"finished after {at} steps"
            self.progress.message(
                f"{m.dir}: {status}; final train loss "
                f"{_fmt(result['final_train_loss'])}, eval loss {_fmt(result['final_eval_loss'])}, "
                f"repetition accuracy {_fmt(result['repetition_accuracy'])}")


def _fmt(value) -> str:
    return "null" if value is None else f"{value:.4f}"
