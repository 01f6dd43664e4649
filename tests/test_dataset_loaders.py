"""SequenceDataset for other frameworks: pickling, a length, batched reads, few compilations,
and the PyTorch DataLoader and Grain recipes of the README."""

import logging
import multiprocessing
import pickle

import numpy as np
import pytest

from spamlang import data, languages
from spamlang.errors import UserError

L = 16


@pytest.fixture(scope="module")
def lang():
    return languages.make("spam", vocab_size=1000)  # the cheapest to compile


def test_pickles_without_compiled_code_or_arrays(lang):
    ds = data.SequenceDataset(lang, seed=3, seq_len=L, num_sequences=16)
    want = ds[0:16]  # compiled, key and language tables built: none of it may travel
    payload = pickle.dumps(ds)
    assert b"jaxlib" not in payload and b"jax._src" not in payload and len(payload) < 1000
    back = pickle.loads(payload)
    assert repr(back) == repr(ds) and back.lang == lang
    np.testing.assert_array_equal(back[0:16], want)


def test_finite_dataset_indexes_like_a_list(lang):
    ref = data.SequenceDataset(lang, seed=3, seq_len=L)[0:10]
    ds = data.SequenceDataset(lang, seed=3, seq_len=L, num_sequences=10)
    assert len(ds) == 10 and bool(ds)
    np.testing.assert_array_equal(ds[-1], ref[9])
    np.testing.assert_array_equal(ds[-10], ref[0])
    np.testing.assert_array_equal(ds[::-3], ref[::-3])
    np.testing.assert_array_equal(ds[4:], ref[4:])
    np.testing.assert_array_equal(ds[[9, -2, 0]], ref[[9, 8, 0]])
    np.testing.assert_array_equal(np.stack(ds.__getitems__([2, 7])), ref[[2, 7]])
    np.testing.assert_array_equal(np.stack(list(ds)), ref)
    assert [b.shape[0] for b in ds.batches(8, start=1)] == [8, 1]
    for bad in (10, -11, [3, 10], [[1]], [0.5]):
        with pytest.raises(IndexError):
            ds[bad]
    assert ds[[]].shape == (0, L) and ds[12:20].shape == (0, L)
    empty = data.SequenceDataset(lang, seed=3, seq_len=L, num_sequences=0)
    assert len(empty) == 0 and not empty and list(empty) == []
    with pytest.raises(UserError, match="num_sequences"):
        data.SequenceDataset(lang, seed=3, seq_len=L, num_sequences=-1)
    infinite = data.SequenceDataset(lang, seed=3, seq_len=L)
    assert bool(infinite)
    with pytest.raises(TypeError, match="infinite"):
        len(infinite)
    with pytest.raises(IndexError, match="< 2\\^32"):
        infinite[[0, 2**32]]


def test_any_batch_length_costs_a_few_compilations(monkeypatch, caplog):
    import jax

    lang = languages.make("spam", vocab_size=13)  # no other test compiles this language
    traces = []
    real = type(lang).sample
    monkeypatch.setattr(type(lang), "sample", lambda self, *a: traces.append(1) or real(self, *a))
    ds = data.SequenceDataset(lang, seed=1, seq_len=L)
    data.SequenceDataset(lang, seed=1, seq_len=1)[0]  # once per process: the key, the tables
    traces.clear()
    with jax.log_compiles(), caplog.at_level(logging.WARNING, logger="jax"):
        items = np.stack([ds[i] for i in range(80)])
        for n in range(1, 41):
            start = (7 * n) % 40
            np.testing.assert_array_equal(ds[start : start + n], items[start : start + n])
            idx = np.arange(start, start + n)[::-1]
            np.testing.assert_array_equal(ds[idx], items[idx])
            np.testing.assert_array_equal(np.stack(ds.__getitems__(list(idx))), items[idx])
    # 1..40 rows pad to 8, 16, 32 or 64: four generator programs, and nothing per length
    # (such as a device-side slice of the padded result).
    assert len(traces) <= 7
    compiled = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")]
    assert len(compiled) <= 7, compiled


def test_torch_dataloader_with_worker_processes(lang, monkeypatch):
    """The README recipe. Workers must not be forked from a process whose JAX runs (its threads
    do not survive a fork: the workers deadlock); a forkserver that has only imported torch and
    spamlang forks them ready (about 3x faster here than "spawn", which also works)."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")  # the workers inherit it: JAX stays off any GPU
    ds = data.SequenceDataset(lang, seed=3, seq_len=L, num_sequences=60)
    # The workers' one program (16 rows), compiled into the session's persistent cache.
    want = np.concatenate([ds[i : i + 16] for i in range(0, 60, 16)])
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "spamlang.data", "spamlang.languages"])
    # One loader in a shuffled order (one pair of workers started: most of this test's time),
    # checked row for row against that order.
    order = torch.randperm(60, generator=torch.Generator().manual_seed(0))
    loader = torch.utils.data.DataLoader(
        ds, batch_size=16, sampler=order.tolist(), num_workers=2, multiprocessing_context=ctx
    )
    batches = list(loader)
    assert [tuple(b.shape) for b in batches] == [(16, L)] * 3 + [(12, L)]
    assert batches[0].dtype == torch.int32
    np.testing.assert_array_equal(torch.cat(batches).numpy(), want[order.numpy()])


@pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")  # the fork is what is tested
def test_forked_worker_fails_at_once_naming_forkserver(lang):
    """A worker forked (the DataLoader's default) after the parent's JAX started would hang
    forever; it stops at its first read with one line naming the fix, and the parent's
    DataLoader raises it."""
    torch = pytest.importorskip("torch")
    ds = data.SequenceDataset(lang, seed=3, seq_len=L, num_sequences=32)
    ds[0:8]  # the parent's JAX runs
    loader = torch.utils.data.DataLoader(
        ds, batch_size=8, num_workers=1, timeout=60, multiprocessing_context="fork"
    )
    with pytest.raises(UserError) as caught:
        next(iter(loader))
    assert 'multiprocessing_context="forkserver"' in str(caught.value)
    assert data.FORK_MESSAGE.count("\n") == 0


def test_grain_map_dataset(lang):
    grain = pytest.importorskip("grain")
    ds = data.SequenceDataset(lang, seed=3, seq_len=L, num_sequences=40)
    want = ds[0:40]
    batched = grain.MapDataset.source(ds).batch(16)
    assert len(batched) == 3
    np.testing.assert_array_equal(np.concatenate(list(batched)), want)
    shuffled = np.concatenate(list(grain.MapDataset.source(ds).shuffle(seed=0).batch(8)))
    assert not np.array_equal(shuffled, want)
    np.testing.assert_array_equal(np.unique(shuffled, axis=0), np.unique(want, axis=0))
