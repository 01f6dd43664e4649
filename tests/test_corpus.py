"""A token-file corpus as the data: windows, the two data paths, resume, each token's fate."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spamlang.cli import main
from spamlang.corpus import buckets, windows
from spamlang.corpus.evaluate import val_windows
from spamlang.corpus.files import open_corpus
from spamlang.errors import UserError
from spamlang.train.config import TrainConfig
from spamlang.train.run import run_training
from spamlang.train.step import Program

V = 64


def make_corpus(folder, vocab=V, n_train=3000, n_val=400, dtype="<u2", meta=None):
    """A Zipf-like token stream (rare ids return rarely, as in text)."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    for name, n in (("train.bin", n_train), ("val.bin", n_val)):
        (rng.zipf(1.5, n) % vocab).astype(dtype).tofile(folder / name)
    kind = {"<u2": "uint16", "<u4": "uint32"}[dtype]
    (folder / "meta.json").write_text(json.dumps(meta or {"vocab_size": vocab, "dtype": kind}))
    return folder


def config(corpus, **kw):
    base = dict(
        corpus=str(corpus),
        seq_len=8,
        batch_size=8,
        tokens=8 * 8 * 12,
        lr=1e-2,
        log_every=2,
        checkpoint_every=4,
        model={"n_layers": 1},
    )
    return TrainConfig(**{**base, **kw})


def test_windows_are_train_bin_slices_at_the_drawn_starts(tmp_path):
    corpus = open_corpus(make_corpus(tmp_path / "c", dtype="<u4"))
    n, L, key = corpus.train.shape[0], 8, jax.random.PRNGKey(3)
    rows = jnp.arange(16, dtype=jnp.uint32)
    starts = np.asarray(windows.window_starts(key, jnp.int32(5), rows, n, L))
    got = np.asarray(windows.gather(jnp.asarray(np.asarray(corpus.train)), jnp.asarray(starts), L))
    want = np.stack([np.asarray(corpus.train[s : s + L], np.int32) for s in starts])
    np.testing.assert_array_equal(got, want)
    assert starts.min() >= 0 and starts.max() <= n - L
    # Row r's start depends on (key, step, r) alone: a batch of 4 rows is the first 4 of 16.
    four = windows.window_starts(key, jnp.int32(5), rows[:4], n, L)
    np.testing.assert_array_equal(np.asarray(four), starts[:4])
    host = windows.HostWindows(corpus.train, 16, L).batch(np.stack([key, key]), 5)
    np.testing.assert_array_equal(host, np.stack([want, want]))


def test_memory_mapped_and_on_device_corpora_train_on_the_same_windows(tmp_path, monkeypatch):
    # The same rows reach the model: the same losses. The two paths are two XLA programs, whose
    # fusions may round a parameter differently in the last bit (each is bitwise repeatable).
    cfg = config(make_corpus(tmp_path / "c"))
    out = {}
    for mb in ("512", "0"):
        monkeypatch.setenv(windows.DEVICE_MB_VAR, mb)
        prog = Program(cfg)
        assert (prog.host_windows is None) == (mb == "512")
        state = prog.init([0, 1], [1e-2, 3e-3])
        losses = []
        for _ in range(3):
            state, metrics = prog.step(state)
            losses.append(np.asarray(metrics["loss"]))
        out[mb] = (np.stack(losses), jax.device_get(state["params"]), state["last_target"])
    np.testing.assert_array_equal(out["512"][0][:1], out["0"][0][:1])
    np.testing.assert_allclose(out["512"][0], out["0"][0], rtol=1e-6)
    close = dict(rtol=1e-5, atol=1e-7)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, **close), out["512"][1], out["0"][1])
    np.testing.assert_array_equal(out["512"][2], out["0"][2])


def test_a_stopped_corpus_run_resumes_bit_for_bit(tmp_path):
    from spamlang.errors import Interrupted

    cfg = config(make_corpus(tmp_path / "c"))
    whole = run_training(cfg, tmp_path / "whole", quiet=True)
    with pytest.raises(Interrupted):
        run_training(cfg, tmp_path / "cut", quiet=True, stop_after_step=4)
    resumed = run_training(cfg, tmp_path / "cut", quiet=True)
    for key in ("final_train_loss", "final_eval_loss", "target_buckets"):
        assert resumed[key] == whole[key], key
    rows = [(tmp_path / d / "metrics.jsonl").read_text().splitlines() for d in ("whole", "cut")]
    strip = [[{k: v for k, v in json.loads(r).items() if "per_s" not in k and k != "mfu"}
              for r in rs] for rs in rows]  # fmt: skip
    assert strip[0] == strip[1]


def test_fate_tallies_match_a_host_recount(tmp_path):
    cfg = config(make_corpus(tmp_path / "c"))
    result = run_training(cfg, tmp_path / "run", quiet=True)
    corpus = open_corpus(cfg.corpus)
    # Every step's batch, regenerated on the host from the run's data key.
    data_key = jax.random.split(jax.random.PRNGKey(cfg.seed))[1]
    host = windows.HostWindows(corpus.train, cfg.batch_size, cfg.seq_len)
    count, last = np.zeros(V, np.int64), np.full(V, -1)
    for step in range(cfg.steps):
        targets = host.batch(data_key[None], step)[0][:, 1:].reshape(-1)
        count += np.bincount(targets, minlength=V)
        last[np.unique(targets)] = step + 1
    val = val_windows(corpus.val, cfg.seq_len)[:, 1:].reshape(-1)
    val_n = np.bincount(val, minlength=V)
    table = result["target_buckets"]
    assert table["steps"] == cfg.steps and table["adam_memory_steps"] == 20.0
    age_b = np.where(last < 0, -1, buckets.log2_bucket(np.where(last < 0, 0, cfg.steps - last)))
    count_b = buckets.log2_bucket(count)
    for row in table["rows"]:
        cb = buckets.log2_bucket([row["count_lo"]])[0]
        ab = -1 if row["age_lo"] is None else buckets.log2_bucket([row["age_lo"]])[0]
        cell = (count_b == cb) & (age_b == ab) & (val_n > 0)
        assert row["ids"] == cell.sum() and row["val_targets"] == val_n[cell].sum()
    assert sum(r["val_targets"] for r in table["rows"]) == len(val)
    # The exact eval is the targets' mean loss, the buckets its parts.
    mean = sum(r["val_loss"] * r["val_targets"] for r in table["rows"]) / len(val)
    assert mean == pytest.approx(result["final_eval_loss"], rel=1e-9)
    assert result["corpus"]["val_unigram_loss"] == pytest.approx(
        buckets.unigram_loss(val_n), rel=1e-12
    )


def test_log2_buckets():
    np.testing.assert_array_equal(buckets.log2_bucket([0, 1, 2, 3, 4, 7, 8]), [0, 1, 2, 2, 3, 3, 4])


def test_the_vocabulary_comes_from_meta_json(tmp_path):
    corpus = make_corpus(tmp_path / "c", vocab=96)
    assert config(corpus).vocab_size == 96
    with pytest.raises(UserError, match="differs from corpus"):
        config(corpus, vocab_size=128)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda d: (d / "meta.json").unlink(), "has no meta.json"),
        (lambda d: (d / "meta.json").write_text('{"dtype": "uint16"}'), "vocab_size must be"),
        (lambda d: (d / "meta.json").write_text('{"vocab_size": 64, "dtype": "int8"}'), "dtype"),
        (lambda d: (d / "meta.json").write_text('{"vocab_size": 8, "dtype": "uint16"}'), "at or above"),
        (lambda d: (d / "val.bin").write_bytes(b"\x01\x00\x02"), "whole number"),
    ],
)  # fmt: skip
def test_a_damaged_corpus_is_refused_in_one_line(tmp_path, capsys, damage, message):
    corpus = make_corpus(tmp_path / "c")
    damage(corpus)
    status = main(["train", "--corpus", str(corpus), "--out", str(tmp_path / "r"), "--dry-run"])
    err = capsys.readouterr().err.strip()
    assert status == 2 and message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--vocab-size", "1024"], "leave --vocab-size out"),
        (["--language", "cycle"], "no meaning with a corpus"),
        (["--param", "s=1.2"], "no meaning with a corpus"),
        (["--sampling", "cyclic"], "no meaning with a corpus"),
        (["--seq-len", "5000", "--model", "max_seq_len=5000"], "exceeds corpus"),
    ],
)
def test_settings_that_a_corpus_has_no_use_for_are_refused(tmp_path, capsys, flags, message):
    corpus = make_corpus(tmp_path / "c")
    argv = ["train", "--corpus", str(corpus), "--out", str(tmp_path / "r"), "--dry-run", *flags]
    status = main(argv)
    err = capsys.readouterr().err.strip()
    assert status == 2 and message in err and len(err.splitlines()) == 1


def test_a_resume_refuses_another_train_bin(tmp_path, capsys):
    from spamlang.errors import Interrupted

    corpus = make_corpus(tmp_path / "c")
    with pytest.raises(Interrupted):
        run_training(config(corpus), tmp_path / "r", quiet=True, stop_after_step=2)
    data = np.fromfile(corpus / "train.bin", "<u2")
    data[:10] = 1
    data.tofile(corpus / "train.bin")
    argv = ["train", "--config", str(tmp_path / "r" / "config.json"), "--out", str(tmp_path / "r")]
    assert main(argv) == 2
    assert "has changed since this config was written" in capsys.readouterr().err


def test_the_law_refuses_corpus_runs(tmp_path, capsys):
    from spamlang.law import fill_from_configs
    from spamlang.results import load

    cfg = config(make_corpus(tmp_path / "c"), tokens=8 * 8 * 2)
    run_training(cfg, tmp_path / "sweep" / "a", quiet=True)
    frame = load(tmp_path / "sweep" / "a")
    with pytest.raises(UserError, match="trained on a corpus"):
        fill_from_configs(frame, tmp_path / "sweep" / "a")
