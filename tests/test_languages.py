"""Properties of the six languages: laws, tables, optimal losses, registry and parameter checks."""

import doctest
import functools
import json
import math
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spamlang import languages
from spamlang.errors import UserError
from spamlang.languages import base, repeat, structured

# Chi-square 0.999 quantile, 15 degrees of freedom (tables; Wilson-Hilferty gives 37.8): a
# correct sampler fails with probability 1e-3, and the seeds are fixed, so a pass is reproducible.
CHI2_999 = {15: 37.70}

# Non-default parameters so that every formula is exercised away from its trivial case.
CASES = {
    "spam": {},
    "zipf-spam": {"s": 1.2},
    "noisy-spam": {"eps": 0.3},
    "cycle": {"k": 3},
    "permutation": {"seed": 1},
    "branching": {"b": 3, "seed": 1},
}
DETERMINISTIC_AFTER_PROMPT = ["spam", "zipf-spam", "cycle", "permutation"]


def make(name, vocab_size):
    return languages.make(name, vocab_size=vocab_size, **CASES[name])


def key(i=0):
    return jax.random.PRNGKey(i)


def chi2(counts, probs):
    expected = probs * counts.sum()
    return float(((counts - expected) ** 2 / expected).sum())


def test_registry():
    assert languages.names() == [
        "spam",
        "zipf-spam",
        "noisy-spam",
        "cycle",
        "permutation",
        "branching",
    ]
    for name in languages.names():
        lang = make(name, vocab_size=8)
        assert lang.name == name and isinstance(lang, languages.Language)
    with pytest.raises(UserError, match="unknown language 'nope'; known: spam, zipf-spam"):
        languages.make("nope", vocab_size=8)


@pytest.mark.parametrize(
    "name, params, message",
    [
        ("spam", {"vocab_size": 1}, "vocab_size must be in"),
        ("spam", {}, "vocab_size is required"),
        ("spam", {"vocab_size": 8, "k": 2}, "unknown parameter 'k'"),
        ("spam", {"vocab_size": 8.0}, "vocab_size must be an int"),
        ("spam", {"vocab_size": True}, "vocab_size must be an int"),
        ("noisy-spam", {"vocab_size": 8, "eps": 1.0}, r"eps must be in \[0, 1\)"),
        ("noisy-spam", {"vocab_size": 8, "eps": -0.1}, r"eps must be in \[0, 1\)"),
        ("noisy-spam", {"vocab_size": 8, "eps": "high"}, "eps must be a number"),
        ("zipf-spam", {"vocab_size": 8, "s": 0.0}, "s must be > 0"),
        ("zipf-spam", {"vocab_size": 8, "s": math.inf}, "s must be finite"),
        ("cycle", {"vocab_size": 8, "k": 0}, "k must be >= 1"),
        ("cycle", {"vocab_size": 8, "k": 2.5}, "k must be an int"),
        ("branching", {"vocab_size": 8, "b": 0}, r"b must be in \[1, vocab_size=8\]"),
        ("branching", {"vocab_size": 8, "b": 9}, r"b must be in \[1, vocab_size=8\]"),
    ],
)
def test_bad_params_name_the_constraint(name, params, message):
    with pytest.raises(UserError, match=message):
        languages.make(name, **params)


def test_parse_params_types_and_errors():
    assert languages.parse_params("branching", ["b=3", "seed = 7"]) == {"b": 3, "seed": 7}
    assert languages.parse_params("noisy-spam", ["eps=0.25"]) == {"eps": 0.25}
    for bad, message in [("b", "malformed"), ("b=x", "b must be an integer"), ("z=1", "unknown")]:
        with pytest.raises(UserError, match=message):
            languages.parse_params("branching", [bad])


def test_params_and_fingerprint():
    lang = languages.make("zipf-spam", vocab_size=100, s=1)
    assert lang.params() == {"vocab_size": 100, "s": 1.0} and isinstance(lang.s, float)
    canon = json.dumps(
        {"name": "zipf-spam", "params": {"s": 1.0, "vocab_size": 100}},
        sort_keys=True,
        separators=(",", ":"),
    )
    assert lang.fingerprint() == zlib.crc32(canon.encode())
    assert lang.fingerprint() == languages.make("zipf-spam", vocab_size=100, s=1.0).fingerprint()
    others = {
        languages.make("zipf-spam", vocab_size=101).fingerprint(),
        languages.make("spam", vocab_size=100).fingerprint(),
        lang.fingerprint(),
    }
    assert len(others) == 3
    assert languages.make("cycle", vocab_size=8, k=5).prompt_len == 5
    assert languages.make("branching", vocab_size=8).prompt_len == 1


@functools.cache
def jit_sample(lang):
    """One compiled sampler per language instance (instances are hashable frozen dataclasses)."""
    return jax.jit(lang.sample, static_argnums=(1, 2))


# Most properties are checked on one shared batch per language: compilations dominate the
# cost of these tests on a busy two-core machine, so each language compiles once.
V, N, L = 16, 4096, 10


@functools.cache
def batch(name):
    lang = make(name, vocab_size=V)
    return lang, np.asarray(jit_sample(lang)(key(7), N, L))


@pytest.mark.parametrize("name", list(CASES))
def test_sample_determinism_jit_and_range(name):
    lang, x = batch(name)
    assert x.shape == (N, L) and x.dtype == np.int32
    assert x.min() >= 0 and x.max() < V
    assert not np.array_equal(x, jit_sample(lang)(key(8), N, L))
    # Not jitted, on a fresh instance that rebuilds its tables: the same sequences.
    again = make(name, vocab_size=V)
    np.testing.assert_array_equal(again.sample(key(7), N, L), x)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("vocab_size", [2, 2**20])
def test_extreme_vocab_sizes(name, vocab_size):
    params = dict(CASES[name])
    if name == "branching":
        params["b"] = 2
    lang = languages.make(name, vocab_size=vocab_size, **params)
    x = jit_sample(lang)(key(3), 4, 6)
    assert x.shape == (4, 6) and int(x.min()) >= 0 and int(x.max()) < vocab_size
    assert bool(jnp.isfinite(lang.bayes_logprob(x)).all())


def test_spam_rows_constant_and_symbols_uniform():
    _, x = batch("spam")
    assert (x == x[:, :1]).all()
    counts = np.bincount(x[:, 0], minlength=V)
    assert chi2(counts, np.full(V, 1 / V)) < CHI2_999[V - 1]
    assert chi2(counts, np.arange(1, V + 1) / (V * (V + 1) / 2)) > CHI2_999[V - 1]  # has power


def test_zipf_frequencies_follow_the_law():
    lang, x = batch("zipf-spam")
    law = np.arange(1, V + 1) ** -lang.s
    law /= law.sum()
    np.testing.assert_allclose(lang.probabilities(), law, rtol=1e-9)
    assert (x == x[:, :1]).all()
    counts = np.bincount(x[:, 0], minlength=V)
    assert chi2(counts, law) < CHI2_999[V - 1]
    assert chi2(counts, np.full(V, 1 / V)) > CHI2_999[V - 1]


def test_zipf_huge_vocab_keeps_every_symbol_possible():
    probs = languages.make("zipf-spam", vocab_size=2**20, s=2.0).probabilities()
    assert probs.sum() == pytest.approx(1.0, abs=1e-12) and (probs > 0).all()
    truncated_zeta = np.pi**2 / 6 - np.sum(1.0 / np.arange(2**20 + 1, 2**24) ** 2)
    assert probs[0] == pytest.approx(1 / truncated_zeta, rel=1e-6)


def test_noisy_spam_noise_rate():
    lang, x = batch("noisy-spam")
    changed = (x[:, 1:] != x[:, :1]).mean()
    expected = lang.eps * (1 - 1 / V)  # a noise symbol equals the base one with prob 1/V
    assert abs(changed - expected) < 4 * math.sqrt(expected * (1 - expected) / x[:, 1:].size)
    clean = languages.make("noisy-spam", vocab_size=V, eps=0.0)
    x0 = np.asarray(jit_sample(clean)(key(0), 50, L))
    assert (x0 == x0[:, :1]).all()
    np.testing.assert_array_equal(lang.is_most_likely(x), x[:, 1:] == x[:, :1])


def test_noiseless_noisy_spam_has_a_floor_of_plus_zero():
    floor = languages.make("noisy-spam", vocab_size=8, eps=0.0).optimal_loss(16)
    assert floor == 0.0 and math.copysign(1.0, floor) == 1.0 and f"{floor:.4f}" == "0.0000"


def test_cycle_period():
    lang, x = batch("cycle")
    k = lang.k
    assert (x[:, k:] == x[:, :-k]).all()
    assert (x[:, 1:] != x[:, :-1]).any()  # not SpamLang: the pattern varies within a period
    long = languages.make("cycle", vocab_size=64, k=50)
    assert jit_sample(long)(key(0), 2, L).shape == (2, L)
    assert long.optimal_loss(L) == pytest.approx(math.log(64))
    assert lang.optimal_loss(7) == pytest.approx(2 * math.log(V) / 6)


def test_permutation_is_a_consistent_bijection():
    lang, x = batch("permutation")
    pi = np.asarray(lang.table())
    np.testing.assert_array_equal(np.sort(pi), np.arange(V))
    np.testing.assert_array_equal(pi, make("permutation", vocab_size=V).table())
    np.testing.assert_array_equal(pi, lang.table())
    assert not np.array_equal(pi, languages.make("permutation", vocab_size=V, seed=2).table())
    np.testing.assert_array_equal(pi[x[:, :-1]], x[:, 1:])


def test_branching_has_exactly_b_distinct_successors():
    lang, x = batch("branching")
    b = lang.b
    table = np.asarray(lang.successor_table())
    assert table.shape == (V, b)
    assert all(len(set(row)) == b for row in table)
    assert (np.bincount(table.ravel(), minlength=V) == b).all()  # in-degree b too
    pairs = {(int(a), int(c)) for a, c in zip(x[:, :-1].ravel(), x[:, 1:].ravel())}
    allowed = {(t, int(s)) for t in range(V) for s in table[t]}
    assert pairs == allowed  # transitions stay in the table and use every branch
    bad = x.copy()
    bad[:, 1] = [next(t for t in range(V) if t not in table[r]) for r in x[:, 0]]
    assert not bool(lang.is_most_likely(bad)[:, 0].any())
    assert bool(jnp.isneginf(lang.bayes_logprob(bad)[:, 0]).all())


@pytest.mark.parametrize("name", list(CASES))
def test_optimal_loss_matches_monte_carlo(name):
    lang, x = batch(name)
    nll = -np.asarray(lang.bayes_logprob(x), np.float64)
    assert nll.shape == (N, L - 1) and np.isfinite(nll).all()
    tol = 5 * nll.std() / math.sqrt(nll.size) + 1e-5
    assert abs(nll.mean() - lang.optimal_loss(L)) < tol


@pytest.mark.parametrize("name", DETERMINISTIC_AFTER_PROMPT + ["branching"])
def test_samples_are_most_likely_and_corruptions_impossible(name):
    lang, x = batch(name)
    assert bool(lang.is_most_likely(x).all())
    np.testing.assert_array_equal(jax.jit(lang.is_most_likely)(x), lang.is_most_likely(x))
    if name == "branching":
        return  # a neighbouring id may be another successor; covered by the branching test
    bad = x.copy()
    bad[:, -1] = (x[:, -1] + 1) % V
    assert not bool(lang.is_most_likely(bad)[:, -1].any())
    assert bool(jnp.isneginf(lang.bayes_logprob(bad)[:, -1]).all())


def test_docstring_examples():
    for module in (languages, base, repeat, structured):
        result = doctest.testmod(module)
        assert result.failed == 0, module.__name__
        assert module is base or result.attempted > 0, module.__name__
