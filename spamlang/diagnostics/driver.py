"""`diagnose_model`: every bottleneck measurement on a Transformer and a batch of sequences.

Hidden states are computed a few sequences at a time and kept (T x D); each later pass streams
`chunk_size` tokens through the head, so nothing is V x V or T x V x D. Only the rank curve
holds a full logit gradient, on its own `rank_tokens` subset.
"""

from __future__ import annotations

import functools
import math
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from spamlang.diagnostics.head_chunks import JacobianHead, LinearHead, head_inputs, head_of
from spamlang.diagnostics.linalg import gradient_r_factor, ranks_from_r, total
from spamlang.diagnostics.logits import default_ranks, efficiency_sums, finish_profile, profile_sums
from spamlang.errors import UserError
from spamlang.loss import chunk_mask, chunk_rows, token_nll, unchunk_rows

DEFAULT_FRACTIONS = tuple(float(x) for x in np.geomspace(1e-4, 1.0, 17))


class _Clock:  # wall seconds per stage, for the benchmark
    def __init__(self):
        self.laps, self.last = {}, time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round(now - self.last, 3)
        self.last = now


class _Heads:
    """Jitted chunk functions bound to a head: a linear head's QR passed in, a mos head rebuilt."""

    def __init__(self, aux, vocab_size: int, graphdef=None):
        self.aux, self.vocab_size, self.graphdef = aux, vocab_size, graphdef
        self.linear = graphdef is None

    def jit(self, fn, **static):  # fn(head, h, y, m, *rest) -> callable(h, y, m, *rest)
        def traced(aux, *args):
            head = aux if self.linear else JacobianHead(nnx.merge(self.graphdef, aux).log_probs)
            return fn(head, *args, **static)

        compiled = jax.jit(traced)
        return lambda *args: compiled(self.aux, *args)


def _hidden_states(model, tokens_BxL, rows_per_call):
    """The head's inputs h_NxR and targets_N (host) at the predicted positions."""
    graphdef, state = nnx.split(model)

    def inputs(state, tokens_bxL):
        m = nnx.merge(graphdef, state)
        return head_inputs(m, m.hidden(tokens_bxL)[:, :-1])

    fwd = jax.jit(inputs)
    tokens_BxL = np.asarray(tokens_BxL)
    B, L = tokens_BxL.shape
    # One compiled shape: the last call's rows are padded, and the padding dropped after.
    parts = [np.asarray(fwd(state, rows)) for rows in chunk_rows(tokens_BxL, rows_per_call)]
    h_NxD = unchunk_rows(np.stack(parts), B).reshape(B * (L - 1), -1)
    return h_NxD, tokens_BxL[:, 1:].reshape(-1)


def _chunks(h_NxD, y_N, n_tokens, size):
    """(h, y, mask) chunks of `size` of the first n_tokens rows, the last padded."""
    size = min(size, n_tokens)
    mask_KxC = chunk_mask(n_tokens, size)
    for k, start in enumerate(range(0, n_tokens, size)):
        rows = slice(start, min(start + size, n_tokens))
        yield chunk_rows(h_NxD[rows], size)[0], chunk_rows(y_N[rows], size)[0], mask_KxC[k]


def _stats_fn(head, h, y, m, **kw):  # a chunk's per-token terms, logit norm^2, loss; and G
    terms, logits, G = head.terms(h, y, m, **kw)
    return {"stats": terms, "z_sq": jnp.sum(logits**2, axis=-1), "ce": token_nll(logits, y)}, G


def _efficiency_fn(head, h, y, m, s_grad_S, s_ind_S):
    c = head.chunk(h, y, m, projected=False)
    ce_grad_S, ce_ind_S = efficiency_sums(c.logits, y, c.G, c.U, s_grad_S, s_ind_S)
    # Padded rows have G = U = 0, so their loss never moves: take it back out.
    pad_ce = jnp.sum(token_nll(c.logits, y) * (1 - m))
    return ce_grad_S - pad_ce, ce_ind_S - pad_ce


def _profile_fn(head, h, y, m):
    c = head.chunk(h, y, m, induced=False)
    return {**profile_sums(c.G, c.P), "rows": jnp.sum(m)}


def _sum(fn, chunks, *extra):
    outs = (fn(*chunk, *extra) for chunk in chunks)
    return functools.reduce(lambda a, b: jax.tree.map(jnp.add, a, b), outs)


def _per_token_pass(fn, chunks, keep_rows: int):
    """Per-token terms (float64, padding dropped) and the first keep_rows rows of G."""
    terms, grads, kept = [], None, 0
    for h, y, m in chunks:
        t, G = fn(h, y, m)
        n = int(m.sum())
        terms.append(jax.tree.map(lambda x, n=n: np.asarray(x, np.float64)[:n], t))
        if kept < keep_rows:
            if grads is None:
                grads = np.empty((keep_rows, G.shape[1]), np.float32)
            take = min(n, keep_rows - kept)
            grads[kept : kept + take] = np.asarray(G)[:take]
            kept += take
    return jax.tree.map(lambda *xs: np.concatenate(xs), *terms), grads


def diagnose_model(
    model, tokens_BxL, *, chunk_size: int = 256, max_tokens: int | None = None, **settings
) -> dict:
    """Every bottleneck measurement of `model` on its own next-token loss (`diagnose_states`), plus
    "head", "tie_embeddings", "d_model" and "feature_dim" (d_model, or r for mlp:r)."""
    cfg = model.config
    tokens_BxL = jnp.asarray(tokens_BxL, jnp.int32)
    B, L = tokens_BxL.shape
    if L < 2 or B < 1:
        raise UserError(
            f"diagnose_model needs tokens of shape [B, L] with L >= 2, got {tokens_BxL.shape}"
        )
    clock = _Clock()
    rows = max(1, min(B, math.ceil(4 * chunk_size / L)))
    h_NxD, y_N = _hidden_states(model, tokens_BxL, rows)
    clock("hidden")
    if max_tokens is not None:
        h_NxD, y_N = h_NxD[:max_tokens], y_N[:max_tokens]
    if cfg.head_kind == "mos":
        graphdef, state = nnx.split(model)
        heads = _Heads(state, cfg.vocab_size, graphdef)
    else:
        heads = _Heads(head_of(model), cfg.vocab_size)
    out = diagnose_states(h_NxD, y_N, heads, clock, chunk_size=chunk_size, **settings)
    return {
        "head": cfg.head,
        "tie_embeddings": cfg.tie_embeddings,
        **out,
        "d_model": cfg.d_model,
        "feature_dim": out["d_model"],
    }


def diagnose_head(h_NxD, y_N, W_VxD, bias_V=None, **settings) -> dict:
    """`diagnose_states` of a linear head given as a matrix (+ bias)."""
    h_NxD, y_N = np.asarray(h_NxD, np.float32), np.asarray(y_N, np.int32)
    V = np.shape(W_VxD)[0]
    if h_NxD.ndim != 2 or y_N.shape != h_NxD.shape[:1] or h_NxD.shape[0] < 1:
        raise UserError(
            f"diagnose_head needs h [N, D] and y [N] with N >= 1, got {h_NxD.shape} and {y_N.shape}"
        )
    if np.shape(W_VxD)[1:] != h_NxD.shape[1:]:
        raise UserError(
            f"head matrix {np.shape(W_VxD)} does not match hidden width {h_NxD.shape[1]}"
        )
    if y_N.min() < 0 or y_N.max() >= V:
        raise UserError(f"target ids must lie in [0, {V}), got {y_N.min()}..{y_N.max()}")
    heads = _Heads(LinearHead.of(jnp.asarray(W_VxD), bias_V), V)
    return {"head": "softmax", **diagnose_states(h_NxD, y_N, heads, _Clock(), **settings)}


def _bottleneck(heads: _Heads, chunks, n_kf: int, n_rank: int, n_terms: int):
    """(per-token terms, logit gradients, bottleneck numbers): one pass, or two for mos."""
    terms, grads = _per_token_pass(heads.jit(_stats_fn), chunks(n_kf), n_rank)
    stats = total(jax.tree.map(lambda x: x[:n_kf], terms["stats"]))
    if n_kf < n_terms:
        terms, grads = _per_token_pass(
            heads.jit(_stats_fn, projected=False), chunks(n_terms), n_rank
        )
    summary = {"loss": float(terms["ce"].mean()), "loss_tokens": len(terms["ce"])}
    return terms, grads, {**summary, **stats.summary()}


def _rank(grads, V: int, n_rank: int, rank_points: int, rank_tol) -> tuple[dict, list]:
    """(rank_curve, singular_values) of the per-token logit gradients `grads` (Figure 2)."""
    R = gradient_r_factor(grads)
    counts = sorted({int(round(x)) for x in np.geomspace(1, n_rank, rank_points)})
    curve = {
        "tokens": counts,
        "rank": ranks_from_r(R, V, counts, rank_tol),
        "max_rank": [min(n, V - 1) for n in counts],
        "tol": rank_tol,
    }
    s = np.linalg.svd(R, compute_uv=False)
    return curve, ((s / s[0]).tolist() if s.size and s[0] > 0 else [])


def _efficiency(heads: _Heads, chunks, eff: dict, n_eff: int, step_fractions) -> dict:
    """Figure 8: the exact mean-loss change along -grad_L and along the move a step on H induces."""
    norms = {
        "g": eff["stats"].grad_sq.sum(),
        "u": eff["stats"].induced_sq.sum(),
        "z": eff["z_sq"].sum(),
        "ce": eff["ce"].sum(),
    }
    fractions = np.asarray(step_fractions, np.float64)
    step_norms = fractions * math.sqrt(norms["z"])
    s_grad = jnp.asarray(step_norms / math.sqrt(norms["g"]), jnp.float32)
    s_ind = jnp.asarray(step_norms / max(math.sqrt(norms["u"]), 1e-30), jnp.float32)
    ce_g, ce_u = _sum(heads.jit(_efficiency_fn), chunks, s_grad, s_ind)
    base = norms["ce"] / n_eff
    return {
        "fractions": fractions.tolist(),
        "step_norms": step_norms.tolist(),
        "loss": base,
        "tokens": n_eff,
        "delta_logit": (np.asarray(ce_g, np.float64) / n_eff - base).tolist(),
        "delta_induced": (np.asarray(ce_u, np.float64) / n_eff - base).tolist(),
    }


def diagnose_states(
    h_NxD,
    y_N,
    heads: _Heads,
    clock: _Clock,
    *,
    chunk_size: int = 256,
    rank_tokens: int = 1024,
    rank_points: int = 12,
    rank_tol: float | None = None,
    profile_tokens: int = 512,
    efficiency_tokens: int = 1024,
    step_fractions=DEFAULT_FRACTIONS,
    jacobian_tokens: int = 64,
) -> dict:
    """Every measurement from host hidden states h_NxD, next tokens y_N and a bound head, JSON-able:
    kernel_fraction (eq. 10), projected, frobenius and induced cosines, the mean loss, head_rank,
    d_over_v, rank_curve (Figure 2) and singular_values, coefficient_profile (Figure 7),
    efficiency (Figure 8), each over its own `*_tokens` (mos: `jacobian_tokens`), and seconds per
    stage."""
    jax.block_until_ready(heads.aux)
    clock("head_basis")
    T, D = h_NxD.shape
    V = heads.vocab_size

    def chunks(n):
        return _chunks(h_NxD, y_N, n, chunk_size)

    n_kf = T if heads.linear else min(T, jacobian_tokens)
    n_rank, n_eff = min(T, rank_tokens), min(T, efficiency_tokens)
    terms, grads, stats = _bottleneck(heads, chunks, n_kf, n_rank, max(n_rank, n_eff))
    out = {"vocab_size": V, "d_model": D, "tokens": T, "bottleneck_tokens": n_kf, **stats}
    clock("bottleneck")
    out["head_rank"] = int(heads.aux.rank) if heads.linear else min(D, V)
    out["d_over_v"] = out["head_rank"] / V

    grads = jnp.asarray(grads)  # drop the host copy before the QR's own working copies
    out["rank_curve"], out["singular_values"] = _rank(grads, V, n_rank, rank_points, rank_tol)
    del grads
    clock("rank")

    n_prof = min(T, profile_tokens, n_kf)
    out["coefficient_profile"] = {
        **finish_profile(_sum(heads.jit(_profile_fn), chunks(n_prof)), default_ranks(V)),
        "tokens": n_prof,
    }
    clock("profile")

    eff = jax.tree.map(lambda x: x[:n_eff], terms)
    out["efficiency"] = _efficiency(heads, chunks(n_eff), eff, n_eff, step_fractions)
    clock("efficiency")
    out["seconds"] = clock.laps
    out["settings"] = {
        "chunk_size": chunk_size,
        "rank_tokens": n_rank,
        "profile_tokens": n_prof,
        "efficiency_tokens": n_eff,
        "jacobian_tokens": jacobian_tokens,
    }
    return out
