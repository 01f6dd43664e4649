"""`spamlang tokenize` and `spamlang.corpus.tokenize`: exact round trips, byte-identical reruns in
separate processes, the split rule, jsonl and folder inputs, a reused tokenizer, idempotence, and
every refusal in one line with nothing written. Tiny corpora: the whole file takes seconds."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tokenizers")

from tokenizers import Tokenizer  # noqa: E402

from spamlang.cli import main  # noqa: E402
from spamlang.corpus import reference  # noqa: E402
from spamlang.corpus import tokenize as tk  # noqa: E402
from spamlang.rundir.atomic import Terminated  # noqa: E402

OUT_FILES = ["meta.json", "tokenizer.json", "train.bin", "val.bin"]
META_KEYS = {
    "format",
    "vocab_size",
    "dtype",
    "train_tokens",
    "val_tokens",
    "documents",
    "eot_id",
    "tokenizer",
    "inputs",
    "sources",
    "settings",
    "spamlang_version",
}
WORDS = "def class return import lambda yield async await self value index token".split()


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch):
    # tokenizers' thread pool, once used, makes every later fork of this pytest worker print a
    # warning into the child's stderr, which other tests read. The subprocesses below use it.
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")


def is_val(key: str) -> bool:
    """The split rule, written out again: val when sha256(path) % 100 < 10."""
    return int(hashlib.sha256(key.encode()).hexdigest(), 16) % 100 < 10


def doc_text(i: int) -> str:
    words = [WORDS[(i * 7 + j * j) % len(WORDS)] for j in range(20 + i % 13)]
    return f"# document {i}: héllo, 日本\n" + " ".join(words) + f"\nx_{i} = {i * 31}\n"


def make_folder(root: Path, n: int = 40) -> dict[str, str]:
    """n documents in two subfolders; {relative path: text}, both splits non-empty."""
    docs = {f"{'ab'[i % 2]}/doc{i:02d}.txt": doc_text(i) for i in range(n)}
    for name, text in docs.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    assert any(map(is_val, docs)) and not all(map(is_val, docs))
    return docs


def run(capsys, *argv):
    status = main([*map(str, argv), "--quiet"])
    out, err = capsys.readouterr()
    return status, out, err


def read_meta(out: Path) -> dict:
    return json.loads((out / "meta.json").read_text())


def tokens(out: Path, split: str) -> np.ndarray:
    return np.fromfile(out / f"{split}.bin", dtype=read_meta(out)["dtype"])


def segments(ids: np.ndarray, eot: int) -> list[list[int]]:
    """The documents of a flat token file: the ids between EOTs (the file ends with one)."""
    assert ids[-1] == eot
    cuts = np.flatnonzero(ids == eot)
    return [ids[a + 1 : b].tolist() for a, b in zip([-1, *cuts[:-1]], cuts)]


@pytest.fixture
def corpus(tmp_path):
    src = tmp_path / "text"
    docs = make_folder(src)
    # Text that looks like the EOT token is text: its id only ever ends a document.
    docs["a/eot.txt"] = "a literal <|endoftext|> inside\r\nand a CRLF line\n"
    (src / "a/eot.txt").write_bytes(docs["a/eot.txt"].encode())
    return src, docs


def test_round_trip_and_meta(capsys, tmp_path, corpus):
    src, docs = corpus
    out = tmp_path / "out"
    status, stdout, err = run(capsys, "tokenize", src, "--vocab-size", "300", "--out", out)
    assert status == 0 and "tokenized 41 documents" in stdout and str(out) in stdout
    assert sorted(os.listdir(out)) == OUT_FILES
    meta = read_meta(out)
    assert set(meta) == META_KEYS and meta["format"] == "spamlang-corpus-v1"
    assert (meta["vocab_size"], meta["dtype"], meta["eot_id"]) == (300, "uint16", 0)
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    assert tok.token_to_id("<|endoftext|>") == 0
    assert (
        meta["tokenizer"]["sha256"]
        == hashlib.sha256((out / "tokenizer.json").read_bytes()).hexdigest()
    )
    assert meta["tokenizer"]["trained"] and meta["tokenizer"]["kind"] == "byte-level BPE"
    assert meta["settings"] == {"vocab_size": 300, "val_percent": 10, "tokenizer": None}
    assert meta["inputs"] == [str(src)] and "python_version" not in meta
    order = sorted(docs, key=lambda name: name.split("/"))  # folder order: sorted paths
    for split in ("train", "val"):
        ids = tokens(out, split)
        assert len(ids) == meta[f"{split}_tokens"]
        expected = [docs[n] for n in order if is_val(n) == (split == "val")]
        assert [tok.decode(s) for s in segments(ids, 0)] == expected
        assert meta["documents"][split] == len(expected)


def test_two_processes_write_identical_bytes(tmp_path, corpus):
    src, _ = corpus
    outs = [tmp_path / "one", tmp_path / "two"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "spamlang", "tokenize", str(src), "--vocab-size", "400"]
            + ["--out", str(out), "--quiet"],
            # Encoding in threads or not, with other hash seeds: the same bytes.
            env={**os.environ, "PYTHONHASHSEED": str(seed), "TOKENIZERS_PARALLELISM": threads},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for seed, (out, threads) in enumerate(zip(outs, ["true", "false"]))
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    for name in OUT_FILES:
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name


def test_split_by_path_and_bpe_trained_on_train_only(tmp_path):
    src = tmp_path / "text"
    docs = make_folder(src, 60)
    for name in docs:  # a word only the val documents hold, many times over
        if is_val(name):
            (src / name).write_text(docs[name] + " zqxjvk" * 200)
    meta = tk.tokenize([src], tmp_path / "out", vocab_size=600, progress=False).meta
    for entry in meta["sources"]:
        assert entry["split"] == ("val" if is_val(entry["path"]) else "train")
        assert (entry["input"], entry["documents"]) == (0, 1)
    assert [e["path"] for e in meta["sources"]] == sorted(docs, key=lambda n: n.split("/"))
    vocab = Tokenizer.from_file(str(tmp_path / "out/tokenizer.json")).get_vocab()
    assert not [token for token in vocab if "zqxj" in token]
    assert meta == read_meta(tmp_path / "out")


def test_jsonl_and_folder_inputs(capsys, tmp_path):
    lines = [json.dumps({"text": doc_text(i), "id": i}) for i in range(40)]
    lines[3] = json.dumps({"text": ""})  # an empty document: skipped
    lines[5] = "   "  # a blank line: skipped
    (tmp_path / "web.jsonl").write_text("\n".join(lines) + "\n")
    folder = tmp_path / "more"
    (folder / ".git").mkdir(parents=True)
    (folder / ".git/index").write_bytes(b"\0binary")  # hidden: not read
    (folder / "notes.txt").write_text("some notes\n")
    (folder / "sub").mkdir()
    (folder / "sub/lines.jsonl").write_text(json.dumps({"text": "in a folder"}) + "\n")
    out = tmp_path / "out"
    status, _, err = run(
        capsys, "tokenize", tmp_path / "web.jsonl", folder, "--vocab-size", "300", "--out", out
    )
    assert status == 0, err
    meta = read_meta(out)
    keys = [f"web.jsonl:{n}" for n in range(1, 41) if n not in (4, 6)]
    expected = {"train": 0, "val": 0}
    for key in keys:
        expected["val" if is_val(key) else "train"] += 1
    web = {e["split"]: e["documents"] for e in meta["sources"] if e["path"] == "web.jsonl"}
    assert web == {split: n for split, n in expected.items() if n}
    others = [(e["input"], e["path"]) for e in meta["sources"] if e["input"] == 1]
    assert others == [(1, "notes.txt"), (1, "sub/lines.jsonl")]
    texts = {key: json.loads(lines[int(key[10:]) - 1])["text"] for key in keys}
    texts |= {"notes.txt": "some notes\n", "sub/lines.jsonl:1": "in a folder"}
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    for split in ("train", "val"):
        wanted = [t for k, t in texts.items() if t and is_val(k) == (split == "val")]
        assert [tok.decode(s) for s in segments(tokens(out, split), 0)] == wanted


def test_a_given_tokenizer_is_used_as_is(capsys, tmp_path, corpus):
    src, docs = corpus
    first = tmp_path / "first"
    assert run(capsys, "tokenize", src, "--vocab-size", "300", "--out", first)[0] == 0
    given = first / "tokenizer.json"
    other = tmp_path / "other"
    make_folder(other, 30)
    out = tmp_path / "out"
    status, stdout, _ = run(capsys, "tokenize", other, "--tokenizer", given, "--out", out)
    assert status == 0 and "given" in stdout
    meta = read_meta(out)
    assert (out / "tokenizer.json").read_bytes() == given.read_bytes()
    assert meta["tokenizer"]["trained"] is False and meta["vocab_size"] == 300
    assert meta["tokenizer"]["kind"] == "byte-level BPE"
    assert meta["settings"]["tokenizer"] == str(given)
    # The same vocabulary, said twice, is accepted: here a rerun with nothing new to do.
    argv = ("tokenize", other, "--tokenizer", given, "--vocab-size", "300", "--out", out)
    status, stdout, err = run(capsys, *argv)
    assert status == 0 and stdout == "" and "up to date" in err


def test_a_rerun_writes_nothing(capsys, tmp_path, corpus):
    src, _ = corpus
    out = tmp_path / "out"
    argv = ("tokenize", src, "--vocab-size", "300", "--out", out)
    assert run(capsys, *argv)[0] == 0
    stamps = {name: (out / name).stat().st_mtime_ns for name in OUT_FILES}
    status, stdout, err = run(capsys, *argv)
    assert status == 0 and stdout == "" and len(err.splitlines()) == 1 and "up to date" in err
    assert {name: (out / name).stat().st_mtime_ns for name in OUT_FILES} == stamps
    assert sorted(os.listdir(out)) == OUT_FILES
    # A changed input, or a changed setting, writes the folder again.
    (src / "a/doc00.txt").write_text("changed\n")
    status, stdout, _ = run(capsys, *argv)
    assert status == 0 and "tokenized" in stdout
    assert run(capsys, "tokenize", src, "--vocab-size", "320", "--out", out)[0] == 0
    assert read_meta(out)["vocab_size"] == 320 and sorted(os.listdir(out)) == OUT_FILES


def test_an_output_folder_inside_the_input_is_not_read(capsys, tmp_path):
    src = tmp_path / "text"
    make_folder(src)
    argv = ("tokenize", src, "--vocab-size", "300", "--out", src / "corpus")
    assert run(capsys, *argv)[0] == 0
    status, _, err = run(capsys, *argv)  # its own train.bin would be a binary input
    assert status == 0 and "up to date" in err
    assert "corpus/meta.json" not in {e["path"] for e in read_meta(src / "corpus")["sources"]}


def test_a_folder_cut_while_publishing_is_written_again(capsys, tmp_path, corpus):
    src, _ = corpus
    out = tmp_path / "out"
    out.mkdir()
    (out / "meta.json").write_text('{"format": "spamlang-corpus-v1", "publishing": true}')
    (out / "train.bin").write_bytes(b"half")
    (out / ".val.bin.tmp-somehost-1").write_bytes(b"another host's: kept")
    assert run(capsys, "tokenize", src, "--vocab-size", "300", "--out", out)[0] == 0
    assert sorted(os.listdir(out)) == [".val.bin.tmp-somehost-1", *OUT_FILES]
    assert read_meta(out)["train_tokens"] * 2 == (out / "train.bin").stat().st_size


def _bad_inputs(tmp: Path) -> None:
    """Inputs for the refusals."""
    make_folder(tmp / "good")
    (tmp / "empty").mkdir()
    (tmp / "empty/a.txt").write_text("")
    (tmp / "nul.txt").write_bytes(b"text\0more")
    (tmp / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp / "notjson.jsonl").write_text('{"text": "a"}\n{"text": \n')
    (tmp / "notext.jsonl").write_text('{"text": "a"}\n{"body": "b"}\n')
    (tmp / "theirs").mkdir()
    (tmp / "theirs/keep.txt").write_text("a user's file")
    (tmp / "afile").write_text("x")
    (tmp / "one.txt").write_text("a single document\n")
    (tmp / "vocab.json").write_text('{"not": "a tokenizer"}')


@pytest.mark.parametrize(
    "argv, message",
    [
        (["missing", "--vocab-size", "300"], "missing: no such file or folder"),
        (["empty", "--vocab-size", "300"], "no text to tokenize in"),
        (["nul.txt", "--vocab-size", "300"], "nul.txt: a binary file"),
        (["latin1.txt", "--vocab-size", "300"], "latin1.txt: not UTF-8 text"),
        (["notjson.jsonl", "--vocab-size", "300"], "notjson.jsonl:2: not JSON"),
        (["notext.jsonl", "--vocab-size", "300"], "notext.jsonl:2: expected a JSON object"),
        (["good", "--vocab-size", "256"], "vocab_size must be >= 257"),
        (["good"], "give a vocabulary size"),
        (["good", "--vocab-size", "300", "--reference"], "not both"),
        (["--vocab-size", "300"], "nothing to tokenize"),
        (["one.txt", "--vocab-size", "300"], "split of"),
        (["good", "--tokenizer", "vocab.json"], "vocab.json is not a tokenizer.json"),
        (["good", "--tokenizer", "nope.json"], "no such file"),
        (["good", "--vocab-size", "300", "--out", "theirs"], "is not empty"),
        (["good", "--vocab-size", "300", "--out", "afile"], "is a file, not a folder"),
    ],
)
def test_refusals(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    _bad_inputs(tmp_path)
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    if "--out" not in argv:
        argv = [*argv, "--out", "new/corpus"]
    status, stdout, err = run(capsys, "tokenize", *argv)
    assert status == 2 and stdout == ""
    assert len(err.splitlines()) == 1 and message in err, err
    assert err.startswith("spamlang tokenize: error: ")
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before
    assert (tmp_path / "theirs/keep.txt").read_text() == "a user's file"


def test_without_tokenizers_it_says_what_to_install(capsys, tmp_path, corpus, monkeypatch):
    src, _ = corpus
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # `import tokenizers` fails
    status, _, err = run(capsys, "tokenize", src, "--vocab-size", "300", "--out", tmp_path / "o")
    assert status == 2 and 'pip install -e ".[text]"' in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_a_disagreeing_vocab_size_is_refused(capsys, tmp_path, corpus):
    src, _ = corpus
    assert run(capsys, "tokenize", src, "--vocab-size", "300", "--out", tmp_path / "a")[0] == 0
    given = tmp_path / "a/tokenizer.json"
    argv = ("tokenize", src, "--tokenizer", given, "--vocab-size", "4K", "--out", tmp_path / "b")
    status, _, err = run(capsys, *argv)
    assert status == 2 and "vocab_size 4096 disagrees" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("stop, status", [(KeyboardInterrupt, 130), (Terminated, 143)])
def test_a_stopped_run_leaves_nothing(capsys, tmp_path, corpus, monkeypatch, stop, status):
    src, _ = corpus
    real = tk._batches

    def stopped(docs):
        yield next(iter(real(docs)))  # stops after the first batch is written
        raise stop()

    monkeypatch.setattr(tk, "_batches", stopped)
    out = tmp_path / "deep/out"
    got, _, err = run(capsys, "tokenize", src, "--vocab-size", "300", "--out", out)
    assert got == status and len(err.splitlines()) == 1 and "nothing written" in err
    assert not (tmp_path / "deep").exists()
    # Into an existing corpus folder of ours: the old files stay as they were, no temporaries.
    monkeypatch.undo()
    assert run(capsys, "tokenize", src, "--vocab-size", "300", "--out", out)[0] == 0
    before = {name: (out / name).read_bytes() for name in OUT_FILES}
    monkeypatch.setattr(tk, "_batches", stopped)
    assert run(capsys, "tokenize", src, "--vocab-size", "320", "--out", out)[0] == status
    assert sorted(os.listdir(out)) == OUT_FILES
    assert {name: (out / name).read_bytes() for name in OUT_FILES} == before


def test_the_reference_listing():
    root, files = reference.reference_files()
    assert root.is_dir() and len(files) > 100 and files == sorted(files, key=lambda p: p.parts)
    for rel in files:
        assert rel.suffix == ".py" and not rel.is_absolute()
        assert not rel.name.startswith("test_")
        assert not set(rel.parts[:-1]) & reference.EXCLUDED_FOLDERS
    names = {rel.as_posix() for rel in files}
    assert {"os.py", "json/decoder.py"} <= names
    assert not any(name.startswith(("encodings/", "pydoc_data/")) for name in names)


def test_the_reference_corpus_subset(capsys, tmp_path, small_reference):
    root, subset = small_reference
    assert any(is_val(f.as_posix()) for f in subset)
    out = tmp_path / "stdlib"
    status, stdout, _ = run(capsys, "tokenize", "--reference", "--vocab-size", "300", "--out", out)
    assert status == 0 and "tokenized" in stdout
    meta = read_meta(out)
    assert set(meta) == META_KEYS | {"python_version"}
    assert (
        meta["inputs"] == ["reference:stdlib"]
        and meta["python_version"] == reference.python_version()
    )
    assert [e["path"] for e in meta["sources"]] == [f.as_posix() for f in subset]
    for entry in meta["sources"]:
        assert entry["sha256"] == hashlib.sha256((root / entry["path"]).read_bytes()).hexdigest()


def test_interrupt_in_a_real_process(tmp_path, corpus):
    """SIGINT in a real process, while it writes: 130, one line, no folder left behind."""
    src, _ = corpus
    code = (
        "import os, signal, sys\n"
        # As in a terminal, whatever the test runner's parent ignores.
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from spamlang.corpus import tokenize as tk\n"
        "real = tk._batches\n"
        "def batches(docs):\n"
        "    yield from real(docs)\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "tk._batches = batches\n"
        "from spamlang.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-c", code, "tokenize", str(src), "--vocab-size", "300"]
        + ["--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.strip().splitlines() == ["spamlang tokenize: interrupted; nothing written"]
    assert not out.exists()
