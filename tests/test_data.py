"""The dataset adapters: random access, batched iteration, token-file export and loading."""

import itertools
import json
import os
import stat

import jax
import numpy as np
import pytest

from spamlang import data, languages
from spamlang.errors import UserError

L = 8


@pytest.fixture(scope="module")
def ds():
    return data.SequenceDataset(languages.make("branching", vocab_size=64, b=3), seed=5, seq_len=L)


def test_item_is_the_contract_sample(ds):
    base = jax.random.PRNGKey(5)
    for i in (0, 1, 17):
        want = ds.lang.sample(jax.random.fold_in(base, i), 1, L)[0]
        np.testing.assert_array_equal(ds[i], want)
        assert ds[i].dtype == np.int32 and ds[i].shape == (L,)


def test_random_access_equals_batched_iteration(ds):
    ref = ds[0:24]
    assert ref.shape == (24, L)
    assert len({tuple(r) for r in ref}) > 20  # distinct sequences, not one repeated
    for batch_size, start in [(1, 5), (8, 0), (8, 3)]:  # 8 shares a compilation with ds[3:20:4]
        got = np.concatenate(
            list(
                itertools.islice(
                    ds.batches(batch_size, start=start), -(-(24 - start) // batch_size)
                )
            )
        )
        np.testing.assert_array_equal(got[: 24 - start], ref[start:])
    np.testing.assert_array_equal(ds[3:20:4], ref[3:20:4])
    np.testing.assert_array_equal(ds[7], ref[7])
    assert ds[5:5].shape == (0, L)
    np.testing.assert_array_equal(next(iter(ds)), ref[0])


def test_chunked_generation_matches(ds, monkeypatch):
    monkeypatch.setattr(data, "_CHUNK_TOKENS", 4 * L)  # 4 rows per device call
    np.testing.assert_array_equal(ds[0:23], data.SequenceDataset(ds.lang, 5, L)[0:23])
    monkeypatch.undo()
    np.testing.assert_array_equal(data.SequenceDataset(ds.lang, 5, L)[0:23], ds[0:23])


def test_seeds_and_bad_indices(ds):
    other = data.SequenceDataset(ds.lang, seed=6, seq_len=L)
    assert not np.array_equal(other[0:8], ds[0:8])
    for bad in (lambda: ds[-1], lambda: ds[3:], lambda: ds[5:1:-1]):
        with pytest.raises(IndexError):
            bad()
    with pytest.raises(UserError, match="seed"):
        data.SequenceDataset(ds.lang, seed=-1, seq_len=L)
    with pytest.raises(UserError, match="seq_len"):
        data.SequenceDataset(ds.lang, seed=0, seq_len=0)
    with pytest.raises(UserError, match="batch_size"):
        next(ds.batches(0))
    with pytest.raises(TypeError):
        len(ds)


@pytest.mark.parametrize("vocab_size, dtype", [(65536, np.uint16), (65537, np.uint32)])
def test_export_load_round_trip(tmp_path, vocab_size, dtype):
    lang = languages.make("cycle", vocab_size=vocab_size, k=3)
    path = tmp_path / "tokens.bin"
    meta = data.export_tokens(lang, 2, L, 37, path)
    assert sorted(os.listdir(tmp_path)) == ["tokens.bin", "tokens.bin.json"]  # no temp left
    assert os.path.getsize(path) == 37 * L * np.dtype(dtype).itemsize
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~umask  # not mkstemp's private 0600
    side = json.loads((tmp_path / "tokens.bin.json").read_text())
    assert side == meta
    assert side["language"] == "cycle" and side["params"] == {"vocab_size": vocab_size, "k": 3}
    assert side["seed"] == 2 and side["shape"] == [37, L] and side["dtype"] == np.dtype(dtype).name
    tokens = data.load_tokens(path)
    assert isinstance(tokens, np.memmap) and tokens.dtype == dtype and tokens.shape == (37, L)
    np.testing.assert_array_equal(tokens, data.SequenceDataset(lang, 2, L)[0:37])


def test_export_in_chunks_with_large_ids(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "_CHUNK_TOKENS", 8 * L)
    lang = languages.make("permutation", vocab_size=2**20)
    data.export_tokens(lang, 0, L, 50, tmp_path / "t.bin", progress=True)
    tokens = data.load_tokens(tmp_path / "t.bin")
    assert tokens.dtype == np.uint32 and tokens.max() >= 2**16  # ids beyond uint16 survive
    np.testing.assert_array_equal(tokens, data.SequenceDataset(lang, 0, L)[0:50])


def test_export_refuses_to_overwrite_and_checks_directory(tmp_path):
    lang = languages.make("spam", vocab_size=8)
    path = tmp_path / "t.bin"
    data.export_tokens(lang, 0, L, 4, path)
    with pytest.raises(UserError, match="already exists"):
        data.export_tokens(lang, 1, L, 6, path)
    assert data.load_tokens(path).shape == (4, L)  # untouched
    data.export_tokens(lang, 1, L, 6, path, force=True)
    np.testing.assert_array_equal(data.load_tokens(path), data.SequenceDataset(lang, 1, L)[0:6])
    with pytest.raises(UserError, match="does not exist"):
        data.export_tokens(lang, 0, L, 4, tmp_path / "missing" / "t.bin")
    with pytest.raises(UserError, match="num_seqs"):
        data.export_tokens(lang, 0, L, 0, tmp_path / "u.bin")


def test_interrupted_export_leaves_nothing(tmp_path, monkeypatch):
    lang = languages.make("spam", vocab_size=8)

    def broken_chunks(self, rows):
        yield np.zeros((2, self.seq_len), np.int32)
        raise KeyboardInterrupt

    monkeypatch.setattr(data.SequenceDataset, "_generate", broken_chunks)
    with pytest.raises(KeyboardInterrupt):
        data.export_tokens(lang, 0, L, 10, tmp_path / "t.bin")
    assert os.listdir(tmp_path) == []


def test_load_rejects_incomplete_files(tmp_path):
    lang = languages.make("spam", vocab_size=8)
    path = tmp_path / "t.bin"
    data.export_tokens(lang, 0, L, 4, path)
    with open(path, "ab") as f:
        f.write(b"\0\0")
    with pytest.raises(UserError, match="sidecar says"):
        data.load_tokens(path)
    os.unlink(f"{path}.json")
    with pytest.raises(UserError, match="no sidecar"):
        data.load_tokens(path)


def test_docstring_example():
    import doctest

    result = doctest.testmod(data)
    assert result.failed == 0 and result.attempted > 0
