"""The loop behind `run_training` and `run_group`: K members, one jitted step, K run dirs.

See `spamlang.train.run` for the contract. A single run is the group loop with K = 1 over a
`Trainer`; K > 1 uses `GroupTrainer`. The loop never touches the model: it calls the
trainer's step / evaluate / model and moves metrics from device to host at log time only.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import jax
import numpy as np

from spamlang.train import rundir
from spamlang.train.checkpoint import RunCheckpoints, restore_latest
from spamlang.train.progress import Progress

_TRAIN_KEYS = ("loss", "accuracy", "grad_norm")  # averaged over the steps of a log interval


class Members:
    """A Trainer (K = 1) or a GroupTrainer behind one member-indexed interface."""

    def __init__(self, configs):
        self.k = len(configs)
        if self.k == 1:
            from spamlang.train.step import Trainer

            self.trainer = self.base = Trainer(configs[0])
        else:
            from spamlang.train.group import GroupTrainer

            self.trainer = GroupTrainer(configs)
            self.base = self.trainer.base
        self.member_flops_per_step = float(self.base.flops_per_step)

    def init_state(self):
        return self.trainer.init_state()

    def step(self, state):
        return self.trainer.step(state)

    def member_abstract(self) -> list:
        return [self.base.abstract_state() for _ in range(self.k)]

    def member(self, state, i: int):
        return state if self.k == 1 else self.trainer.member(state, i)

    def stack(self, states: list):
        return states[0] if self.k == 1 else self.trainer.stack(states)

    def pick(self, host_tree: dict, i: int) -> dict:
        """Member i's values of a fetched metrics dict, as Python floats."""
        return {k: float(v if self.k == 1 else v[i]) for k, v in host_tree.items()}

    def evaluate(self, state) -> list[dict]:
        out = self.trainer.evaluate(state)
        return [out] if self.k == 1 else list(out)

    def model(self, state, i: int):
        return self.base.model(self.member(state, i))


@dataclasses.dataclass
class _Member:
    """The host-side bookkeeping of one member's run directory."""

    config: object
    dir: Path
    ckpt: RunCheckpoints
    log: rundir.MetricsLog | None = None
    active: bool = True
    pending: list = dataclasses.field(default_factory=list)  # [(step, {metric: float})] unlogged
    train_seconds: float = 0.0  # time in train steps over all segments (excludes compile/eval)
    timed_tokens: int = 0  # tokens trained during train_seconds
    wall_before: float = 0.0  # wall seconds of earlier segments
    restored_final: bool = False  # resumed from the checkpoint _finish saves (result pending)

    def meta(self, wall_now: float, final: bool) -> dict:
        return {"pending": [[s, m] for s, m in self.pending], "train_seconds": self.train_seconds,
                "timed_tokens": self.timed_tokens, "wall_seconds": self.wall_before + wall_now,
                "final": final}


class Loop:
    """One training segment of K members: restore or init, train, log, checkpoint, finish."""

    def __init__(self, configs, dirs, *, quiet: bool, writer: bool, stop_after_step):
        self.configs, self.dirs = configs, dirs
        self.quiet, self.writer, self.stop_after_step = quiet, writer, stop_after_step
        self.cfg = configs[0]  # members share everything but lr and seed
        self.total = self.cfg.steps
        self.tokens_per_step = self.cfg.tokens_per_step

    # ----- driver ------------------------------------------------------------------------------
    def run(self, received: list) -> list[dict]:
        """Train to the end (or an interruption); returns each member's result."""
        from spamlang.train.run import Interrupted

        self.t_start = time.perf_counter()
        self.members = Members(self.configs)
        self.ms = [_Member(c, d, RunCheckpoints(d / rundir.CHECKPOINTS, c.keep_checkpoints))
                   for c, d in zip(self.configs, self.dirs)]
        self.results: list = [None] * len(self.ms)
        try:
            step, state = self._restore_or_init()
            label = self.dirs[0].name if len(self.ms) == 1 else f"group of {len(self.ms)}"
            self.progress = Progress(self.total, step, label=label, quiet=self.quiet,
                                     line_every=10 * self.cfg.log_every)
            if step:
                self.progress.message(f"resumed from the checkpoint at step {step}")
            self.pending_dev: list = []  # [(step, device metrics)] not yet fetched
            self.interval_seconds, self.timed_steps = 0.0, 0
            self.t_interval, self._paused = None, False
            self._finish_restored(state, step)
            _peak()  # measured once per process, before any interval is timed
            while step < self.total and any(m.active for m in self.ms):
                if self._paused:  # the time spent on evals and saves is not train time
                    self.t_interval, self._paused = time.perf_counter(), False
                state, metrics = self.members.step(state)
                step += 1
                self.pending_dev.append((step, metrics))
                if self.t_interval is None:
                    # Start timing after the first (compiling) step of this segment.
                    jax.block_until_ready(state)
                    self.t_interval = time.perf_counter()
                else:
                    self.timed_steps += 1
                self.progress.advance(step)
                state = self._boundary(state, step)
                if self._should_stop(received, step):
                    if step < self.total and any(m.active for m in self.ms):
                        self._fetch()
                        self._bank_time(state)
                        self._save(state, step)
                        raise Interrupted(step, received[0] if received else None)
            if received:  # finished anyway, but a sweep calling us must still stop
                raise Interrupted(step, received[0])
            return self.results
        finally:
            if hasattr(self, "progress"):
                self.progress.close()
            for m in self.ms:
                m.ckpt.close()
                if m.log is not None:
                    m.log.close()

    def _should_stop(self, received: list, step: int) -> bool:
        """Stop here? With several processes, all must agree (or their saves would deadlock):
        they decide together at log steps only, so the collective is rare."""
        if step == self.stop_after_step:
            return True
        if jax.process_count() == 1:
            return bool(received)
        if step % self.cfg.log_every:
            return False
        from jax.experimental import multihost_utils

        return bool(np.any(multihost_utils.process_allgather(np.int32(bool(received)))))

    def _restore_or_init(self):
        restored = restore_latest([m.ckpt for m in self.ms], self.members.member_abstract())
        if restored is None:
            step, state, metas = 0, self.members.init_state(), [{} for _ in self.ms]
        else:
            step, states, metas = restored
            state = self.members.stack(states)
        for m, meta in zip(self.ms, metas):
            m.pending = [(int(s), dict(v)) for s, v in meta.get("pending", [])]
            m.train_seconds = float(meta.get("train_seconds", 0.0))
            m.timed_tokens = int(meta.get("timed_tokens", 0))
            m.wall_before = float(meta.get("wall_seconds", 0.0))
            m.restored_final = bool(meta.get("final", False))
            m.log = rundir.MetricsLog(m.dir, step, write=self.writer)
        return step, state

    def _finish_restored(self, state, step: int) -> None:
        """Members resumed from their final checkpoint (end of budget or diverged) but without
        result.json (a crash between the two): finish them without writing rows again."""
        done = [i for i, m in enumerate(self.ms) if m.restored_final]
        if not done:
            return
        diverged, dsteps = jax.device_get((state["diverged"], state["diverged_step"]))
        div = {}
        for i in done:
            if bool(diverged if self.members.k == 1 else diverged[i]):
                div[i] = int(dsteps if self.members.k == 1 else dsteps[i]) + 1
        self._finish(state, step, done, div, write_rows=False)

    def _boundary(self, state, step: int):
        """Everything after a step: log, eval, diag, checkpoint, finish (in that order)."""
        cfg, final = self.cfg, step == self.total
        if step % cfg.log_every == 0 or final:
            self._log(state, step)
        if final:
            self._finish(state, step, [i for i, m in enumerate(self.ms) if m.active])
            return state
        active = [i for i, m in enumerate(self.ms) if m.active]
        if cfg.eval_every and step % cfg.eval_every == 0 and active:
            self._pause(state)
            self._eval(state, step, active)
        if cfg.diag_every and step % cfg.diag_every == 0 and active:
            self._pause(state)
            self._diag(state, step, active)
        if cfg.checkpoint_every and step % cfg.checkpoint_every == 0 and active:
            self._pause(state)
            self._fetch()
            self._save(state, step)
        return state

    # ----- timing --------------------------------------------------------------------------------
    def _pause(self, state) -> None:
        """Close the current timing interval before non-training work (eval, saves)."""
        if self.t_interval is not None and not self._paused:
            jax.block_until_ready(state)
            self.interval_seconds += time.perf_counter() - self.t_interval
        self._paused = True

    def _bank_time(self, state) -> None:
        """Credit the unlogged part of the interval to the members (before a final save)."""
        self._pause(state)
        for m in self.ms:
            m.train_seconds += self.interval_seconds
            m.timed_tokens += self.timed_steps * self.tokens_per_step
        self.interval_seconds, self.timed_steps = 0.0, 0

    def _wall(self) -> float:
        return time.perf_counter() - self.t_start

    # ----- metrics ---------------------------------------------------------------------------------
    def _fetch(self, extra=None):
        """Move the pending device metrics (and `extra` device values) to the host, once."""
        if not self.pending_dev and extra is None:
            return None
        host, extra_host = jax.device_get(([m for _, m in self.pending_dev], extra))
        for (s, _), h in zip(self.pending_dev, host):
            for i, m in enumerate(self.ms):
                m.pending.append((s, self.members.pick(h, i)))
        self.pending_dev = []
        return extra_host

    def _log(self, state, step: int) -> None:
        flags = self._fetch((state["diverged"], state["diverged_step"]))
        if self.t_interval is not None and not self._paused:
            now = time.perf_counter()
            self.interval_seconds += now - self.t_interval
            self.t_interval = now
        seconds, timed = self.interval_seconds, self.timed_steps
        self.interval_seconds, self.timed_steps = 0.0, 0
        tokens_per_s = timed * self.tokens_per_step / seconds if timed and seconds > 0 else None
        peak = _peak() if tokens_per_s else None
        flops_per_token = self.members.member_flops_per_step / self.tokens_per_step
        mfu = tokens_per_s * flops_per_token / peak if peak else None
        losses, newly_diverged = [], []
        for i, m in enumerate(self.ms):
            diverged = bool(flags[0] if self.members.k == 1 else flags[0][i])
            dstep = int(flags[1] if self.members.k == 1 else flags[1][i]) + 1
            if not m.active:
                m.pending = []
                continue
            m.train_seconds += seconds
            m.timed_tokens += timed * self.tokens_per_step
            entries = m.pending
            if diverged:  # the row ends at the diverging batch, not at the frozen steps after it
                entries = [e for e in entries if e[0] <= dstep] or entries
                newly_diverged.append((i, dstep))
            row = {"kind": "train", "step": step, "tokens": step * self.tokens_per_step}
            for key in _TRAIN_KEYS:
                values = [e[1][key] for e in entries]
                row[key] = sum(values) / len(values)
            row.update(lr=entries[-1][1]["lr"], tokens_per_s=tokens_per_s, mfu=mfu)
            m.log.append(row)
            m.pending = []
            losses.append(row["loss"])
        self.progress.logged(step, losses, tokens_per_s)
        if newly_diverged:
            self._finish(state, step, [i for i, _ in newly_diverged], dict(newly_diverged))

    def _eval(self, state, step: int, idx: list[int], write_rows: bool = True) -> list[dict]:
        evals = self.members.evaluate(state)
        for i in idx if write_rows else ():
            row = {"kind": "eval", "step": step, "tokens": step * self.tokens_per_step}
            self.ms[i].log.append({**row, **evals[i]})
        return evals

    def _diag(self, state, step: int, idx: list[int]) -> None:
        from spamlang.train.run import diag_function

        fn = diag_function()
        if fn is None:
            return
        if not hasattr(self, "_diag_jit"):
            # A fixed batch (keyed by the language, like the eval set) so every diag row of every
            # run of a sweep is measured on the same tokens; one jit per segment.
            lang, base = self.members.base.lang, self.members.base
            key = jax.random.fold_in(jax.random.PRNGKey(lang.fingerprint()), 0x0D1A6)
            self._diag_tokens = lang.sample(key, min(self.cfg.batch_size, 32), self.cfg.seq_len)
            chunk = self.cfg.loss_chunk or None
            self._diag_jit = jax.jit(lambda st, t: fn(base.model(st), t, chunk_size=chunk))
        for i in idx:
            out = jax.device_get(self._diag_jit(self.members.member(state, i), self._diag_tokens))
            row = {"kind": "diag", "step": step, "tokens": step * self.tokens_per_step}
            self.ms[i].log.append({**row, **{k: float(v) for k, v in out.items()}})

    # ----- checkpoints and results -----------------------------------------------------------------
    def _save(self, state, step: int, idx: list[int] | None = None, final: bool = False) -> None:
        """Checkpoint members `idx` (default: the active ones) at `step`, after their metrics."""
        idx = [i for i, m in enumerate(self.ms) if m.active] if idx is None else idx
        for i in idx:
            m = self.ms[i]
            m.log.sync()
            m.ckpt.save(step, self.members.member(state, i), m.meta(self._wall(), final))

    def _finish(self, state, step: int, idx: list[int], diverged: dict | None = None,
                write_rows: bool = True) -> None:
        """Final eval (+ diag), checkpoint and result.json of members `idx`; they stop here."""
        diverged = diverged or {}
        self._pause(state)
        evals = self._eval(state, step, idx, write_rows)
        healthy = [i for i in idx if i not in diverged]
        if self.cfg.diag_every and healthy and write_rows:
            self._diag(state, step, healthy)
        self._save(state, step, idx, final=True)
        for i in idx:
            m, ev = self.ms[i], evals[i]
            result = {
                "final_train_loss": rundir.final_train_loss(m.log.train_losses()),
                "final_eval_loss": ev["eval_loss"],
                "loss_above_floor": ev["loss_above_floor"],
                "optimal_loss": float(self.members.base.optimal_loss),
                "repetition_accuracy": ev["repetition_accuracy"],
                "eval_accuracy": ev["eval_accuracy"],
                "diverged": i in diverged,
                "diverged_step": diverged.get(i),
                "steps": step,
                "tokens": step * self.tokens_per_step,
                "tokens_per_s": m.timed_tokens / m.train_seconds if m.train_seconds > 0 else None,
                "wall_seconds": m.wall_before + self._wall(),
            }
            result = rundir.json_safe(result)
            if self.writer:
                rundir.write_result(m.dir, result)
            self.results[i] = result
            m.active = False
            status = f"diverged at step {diverged[i]}" if i in diverged else "finished"
            self.progress.message(f"{m.dir}: {status} after {step} steps; final train loss "
                                  f"{_fmt(result['final_train_loss'])}, eval loss "
                                  f"{_fmt(result['final_eval_loss'])}, repetition accuracy "
                                  f"{_fmt(result['repetition_accuracy'])}")


def _fmt(value) -> str:
    return "null" if value is None else f"{value:.4f}"


def _peak():
    from spamlang.train.run import matmul_peak

    return matmul_peak()
