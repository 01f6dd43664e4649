"""`tokenize`: text files, folders, .jsonl files or the reference corpus into a corpus
folder (train.bin, val.bin, meta.json, tokenizer.json; read by `spamlang.corpus.files`), with a
byte-level BPE trained on the train documents or a given tokenizer.json. The same inputs give
the same bytes; a rerun with nothing changed writes nothing; files appear only when complete."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from spamlang.corpus import reference
from spamlang.corpus.files import FORMAT, META, TOKENIZER, TRAIN, VAL
from spamlang.errors import UserError, first_line, no_space
from spamlang.rundir.atomic import clean_stale_temps, open_temp, publish, signals_raise, staged
from spamlang.rundir.lock import Taken, locked
from spamlang.rundir.reading import read_object
from spamlang.token_files import token_dtype, write_blocks

EOT = "<|endoftext|>"  # ends every document; id 0 of a trained tokenizer
VAL_PERCENT = 10  # a document is val when sha256(its path) % 100 < VAL_PERCENT
KIND = "byte-level BPE"
MIN_VOCAB = 256 + 1  # every byte, then EOT: a BPE with no merge at all
SPLITS = ("train", "val")
_PUBLISHING = META + ".publishing"  # names only the temporary of the "publishing" meta.json
_LOCK = ".lock"  # held while writing: two tokenizers into one folder would mix their files
_BATCH_CHARS = 1 << 22  # characters per encode_batch call: few calls, bounded memory
# tokenizers' thread pool, off while a BPE trains (a source of run-to-run differences).
_PARALLELISM = "TOKENIZERS_PARALLELISM"


@dataclasses.dataclass(frozen=True)
class Source:  # one input file: a document, or a .jsonl file of one document per line
    input: int  # its TEXT argument's index in meta.json's "inputs"
    path: Path  # where it is read
    name: str  # its path inside its TEXT argument (POSIX): what decides the split

    @property
    def jsonl(self) -> bool:
        return self.name.lower().endswith(".jsonl")


@dataclasses.dataclass(frozen=True)
class Outcome:  # the corpus's meta.json, and whether `tokenize` wrote the folder
    meta: dict
    written: bool


def split_of(key: str) -> str:
    """A document's split by the sha256 of its key (path, `name:line`): never by the order."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    return "val" if int(digest, 16) % 100 < VAL_PERCENT else "train"


def tokenize(
    inputs: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    *,
    vocab_size: int | None = None,
    tokenizer: str | os.PathLike | None = None,
    use_reference: bool = False,
    progress: bool = True,
) -> Outcome:
    """Tokenize `inputs` (files, folders, .jsonl), or the reference corpus, into the folder `out`,
    with a BPE of `vocab_size` trained on the train documents or a given `tokenizer`."""
    out = Path(out)
    names, sources = _sources(inputs, use_reference, out)
    given = _GivenTokenizer.load(tokenizer, vocab_size) if tokenizer is not None else None
    if given is None:
        _check_vocab(vocab_size)
        _import_tokenizers()  # missing: said before the inputs are read
    vocab = given.vocab_size if given else vocab_size
    old = _existing_meta(out)
    entries, hashes = _scan(sources, names, progress)
    head = {
        "inputs": names,
        "sources": entries,
        **({"python_version": reference.python_version()} if use_reference else {}),
        "settings": {
            "vocab_size": vocab,
            "val_percent": VAL_PERCENT,
            "tokenizer": None if tokenizer is None else os.fspath(tokenizer),
        },
    }
    if _up_to_date(out, old, head, given):
        print(
            f"{out}: up to date (same inputs, settings and tokenizers version); nothing written",
            file=sys.stderr,
        )
        return Outcome(old, written=False)
    documents = sum(entry["documents"] for entry in entries)
    job = _Job(out, sources, hashes, vocab, given, progress, documents)
    meta = _write_safely(out, lambda: job.run(head))
    return Outcome(meta, written=True)


def _sources(inputs: Sequence, use_reference: bool, out: Path) -> tuple[list[str], list[Source]]:
    if use_reference:
        if inputs:
            raise UserError("give TEXT or the reference corpus, not both")
        root, files = reference.reference_files()
        return [reference.NAME], [Source(0, root / f, f.as_posix()) for f in files]
    if not inputs:
        raise UserError("nothing to tokenize: give TEXT (files, folders, .jsonl) or --reference")
    sources = []
    for i, text in enumerate(inputs):
        path = Path(text)
        if path.is_dir():
            sources += [Source(i, path / name, name) for name in _folder_files(path, out)]
        elif path.is_file():
            sources.append(Source(i, path, path.name))
        else:
            raise UserError(f"{os.fspath(text)}: no such file or folder")
    return [os.fspath(text) for text in inputs], sources


def _folder_files(folder: Path, out: Path) -> list[str]:
    """The regular files under `folder`, sorted, but hidden ones and the output folder `out`."""
    found, skip = [], out.resolve()
    for here, subfolders, names in os.walk(folder):
        subfolders[:] = [
            name
            for name in subfolders
            if not name.startswith(".")
            and not (name == skip.name and Path(here, name).resolve() == skip)
        ]
        for name in names:
            path = Path(here, name)
            if not name.startswith(".") and path.is_file():
                found.append(path.relative_to(folder).parts)
    return ["/".join(parts) for parts in sorted(found)]


def _documents(source: Source, digest) -> Iterator[tuple[str, str]]:
    """(key, text) of each non-empty document of `source`, its bytes fed to `digest`."""
    if not source.jsonl:
        data = source.path.read_bytes()
        digest.update(data)
        text = _text(source.path, data)
        if text:
            yield source.name, text
        return
    with open(source.path, "rb") as f:
        for number, line in enumerate(f, 1):
            digest.update(line)
            text = _jsonl_text(source.path, number, line)
            if text:
                yield f"{source.name}:{number}", text


def _text(path: Path, data: bytes) -> str:
    if b"\0" in data:
        raise UserError(f"{path}: a binary file (it holds NUL bytes), not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text (byte {e.start}), a binary file?") from None


def _jsonl_text(path: Path, number: int, line: bytes) -> str:
    if not line.strip():
        return ""
    try:
        value = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"{path}:{number}: not UTF-8 text, a binary file?") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{path}:{number}: not JSON ({e.msg})") from None
    if not isinstance(value, dict) or not isinstance(value.get("text"), str):
        raise UserError(f'{path}:{number}: expected a JSON object with a "text" string')
    return value["text"]


def _scan(sources: list[Source], names: list[str], progress: bool) -> tuple[list, list]:
    """(meta.json's "sources", each file's sha256), every input read and checked once."""
    from tqdm import tqdm

    entries, hashes = [], []
    for source in tqdm(sources, desc="reading", unit="file", file=sys.stderr, disable=not progress):
        digest = hashlib.sha256()
        counts = Counter(split_of(key) for key, _ in _documents(source, digest))
        hashes.append(digest.hexdigest())
        # One entry per split of the file's documents (at least one: its hash is compared).
        splits = [s for s in SPLITS if counts[s]] or [split_of(source.name)]
        for split in splits:
            entries.append(
                {
                    "input": source.input,
                    "path": source.name,
                    "sha256": hashes[-1],
                    "split": split,
                    "documents": counts[split],
                }
            )
    _check_splits(entries, names, len(sources))
    return entries, hashes


def _check_splits(entries: list[dict], names: list[str], files: int) -> None:
    total = Counter()
    for entry in entries:
        total[entry["split"]] += entry["documents"]
    where = ", ".join(names)
    if not total.total():
        raise UserError(
            f"no text to tokenize in {where}: {files} file(s), none with a non-empty document"
        )
    for split in SPLITS:
        if not total[split]:
            raise UserError(
                f"the {split} split of {where} would be empty: a document is val when sha256(its "
                f"path) % 100 < {VAL_PERCENT}, and none of the {total.total()} is {split}; give "
                "more documents (several files, or a .jsonl of one document per line)"
            )


def _import_tokenizers():
    try:
        import tokenizers
    except ImportError:
        raise UserError(
            'spamlang tokenize needs Hugging Face tokenizers: pip install -e ".[text]"'
        ) from None
    return tokenizers


def _check_vocab(vocab_size) -> None:
    if vocab_size is None:
        raise UserError("give a vocabulary size (--vocab-size) or a tokenizer.json (--tokenizer)")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise UserError(f"vocab_size must be an integer, got {vocab_size!r}")
    if not MIN_VOCAB <= vocab_size <= 2**32:
        raise UserError(
            f"vocab_size must be >= {MIN_VOCAB} (the 256 bytes of a byte-level BPE and {EOT}) "
            f"and <= 2^32, got {vocab_size}"
        )


@contextlib.contextmanager
def _serial() -> Iterator[None]:
    """tokenizers on one thread within the block (read at each call)."""
    previous = os.environ.get(_PARALLELISM)
    os.environ[_PARALLELISM] = "false"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(_PARALLELISM, None)
        else:
            os.environ[_PARALLELISM] = previous


@dataclasses.dataclass(frozen=True)
class _GivenTokenizer:
    """A tokenizer.json given by the user: used as is, copied byte for byte."""

    path: Path
    data: bytes
    vocab_size: int  # its largest id + 1
    kind: str

    @classmethod
    def load(cls, path, vocab_size) -> _GivenTokenizer:
        tokenizers, path = _import_tokenizers(), Path(path)
        if not path.is_file():
            raise UserError(f"tokenizer {path}: no such file")
        data = path.read_bytes()
        try:
            tok = tokenizers.Tokenizer.from_str(data.decode("utf-8"))
            spec = json.loads(data)
        except Exception as e:  # tokenizers raises a bare Exception
            raise UserError(f"{path} is not a tokenizer.json ({first_line(e)})") from None
        vocab = max(tok.get_vocab(with_added_tokens=True).values()) + 1
        if vocab_size is not None and vocab_size != vocab:
            raise UserError(
                f"vocab_size {vocab_size} disagrees with {path}, whose vocabulary is {vocab}; "
                "leave the vocabulary size out or give that"
            )
        if tok.token_to_id(EOT) is None:
            raise UserError(f"{path} has no {EOT} token, which ends every document")
        return cls(path, data, vocab, _kind(spec))


def _kind(spec: dict) -> str:
    """What a tokenizer.json is: "byte-level BPE", "Unigram", ..."""
    model = str((spec.get("model") or {}).get("type", "unknown"))
    byte_level = "ByteLevel" in json.dumps(spec.get("pre_tokenizer"))
    return f"byte-level {model}" if byte_level else model


def _train(docs: Iterable[str], count: int, vocab_size: int, progress: bool) -> bytes:
    """tokenizer.json of a byte-level BPE of `vocab_size` trained on `docs`, EOT id 0."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    # No prefix space and no normalizer: decoding gives back the exact text.
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOT],
        # Every byte, seen in training or not: a val document's rare byte still encodes.
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=progress,
    )
    with _serial():
        tok.train_from_iterator(docs, trainer=trainer, length=count)
    return tok.to_str(pretty=True).encode("utf-8")


def _encoder(data: bytes):
    """The tokenizer of tokenizer.json `data`, reading EOT in a text as text."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(data.decode("utf-8"))
    # "<|endoftext|>" written in a document is text: the id only ever ends a document.
    tok.encode_special_tokens = True
    return tok


def _leftover(name: str) -> bool:
    """A file left in a corpus folder only while writing it (or when killed)."""
    stems = (TRAIN, VAL, TOKENIZER, META, _PUBLISHING)
    return name == _LOCK or any(name.startswith(f".{stem}.tmp-") for stem in stems)


def _existing_meta(out: Path) -> dict | None:
    """The meta.json at `out` (None: new or empty); UserError when `out` is not ours."""
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is a file, not a folder")
    if not out.is_dir():
        return None
    for name in (TRAIN, VAL, TOKENIZER, META, _PUBLISHING):
        clean_stale_temps(out / name)  # left by a killed run of ours
    if not [p for p in out.iterdir() if not _leftover(p.name)]:
        return None
    meta = read_object(out / META)
    if meta is None or meta.get("format") != FORMAT:
        raise UserError(
            f"{out} is not empty and holds no meta.json of a spamlang corpus "
            f"({FORMAT}); give a new or empty folder (nothing there is replaced)"
        )
    return meta


def _sha256_file(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _up_to_date(out: Path, old: dict | None, head: dict, given: _GivenTokenizer | None) -> bool:
    """Whether `out` came from the same inputs, settings and tokenizers, and its files are whole."""
    if old is None or old.get("publishing"):
        return False
    tok = old.get("tokenizer") or {}
    same = all(old.get(key) == value for key, value in head.items())
    same = same and ("python_version" in old) == ("python_version" in head)
    same = same and tok.get("tokenizers_version") == _import_tokenizers().__version__
    if given is not None:
        same = same and tok.get("sha256") == hashlib.sha256(given.data).hexdigest()
    if not same:
        return False
    try:
        itemsize = token_dtype(int(old["vocab_size"])).itemsize
        sizes = (old["train_tokens"] * itemsize, old["val_tokens"] * itemsize)
        whole = sizes == ((out / TRAIN).stat().st_size, (out / VAL).stat().st_size)
    except (KeyError, TypeError, ValueError, OSError):
        return False
    return whole and _sha256_file(out / TOKENIZER) == tok.get("sha256")


def _write_safely(out: Path, work):
    """`work()` with `out` created and locked; a stop removes the folders it created."""
    created = [p for p in (out, *out.parents) if not p.exists()]  # deepest first
    with signals_raise():
        try:
            out.mkdir(parents=True, exist_ok=True)
            with locked(out / _LOCK, wait=False):
                return work()
        except Taken as e:
            raise UserError(f"{out} is being written by {e.holder or 'another process'}") from None
        except BaseException as e:
            for folder in created:
                with contextlib.suppress(OSError):
                    folder.rmdir()
            full = no_space(out, e)
            if full is not None:
                raise full from e
            raise


@dataclasses.dataclass(frozen=True)
class _Job:
    """The writing half of `tokenize`: train (or take) the tokenizer, encode, publish."""

    out: Path
    sources: list[Source]
    hashes: list[str]
    vocab_size: int
    given: _GivenTokenizer | None
    progress: bool
    documents: int  # how many there are, for the progress bar

    def run(self, head: dict) -> dict:
        paths = {name: self.out / name for name in (TRAIN, VAL, TOKENIZER, META, _PUBLISHING)}
        with contextlib.ExitStack() as stack:
            tmp = {name: stack.enter_context(staged(path)) for name, path in paths.items()}
            data = self.given.data if self.given else self._trained(head)
            write_blocks(tmp[TOKENIZER], paths[TOKENIZER], [data])
            tok = _encoder(data)  # from the file's bytes: the file gives back these ids
            eot = tok.token_to_id(EOT)
            with open_temp(tmp[TRAIN]) as train, open_temp(tmp[VAL]) as val:
                tokens = self._encode(tok, eot, {"train": train, "val": val})
                for f in (train, val):
                    f.flush()
                    os.fsync(f.fileno())
            meta = self._meta(head, data, eot, tokens)
            write_blocks(tmp[META], paths[META], [_json(meta)])
            # Replaced first: a folder cut between the renames says so, and is refused.
            write_blocks(
                tmp[_PUBLISHING], paths[META], [_json({"format": FORMAT, "publishing": True})]
            )
            publish(
                (tmp[_PUBLISHING], paths[META]),
                *((tmp[name], paths[name]) for name in (TRAIN, VAL, TOKENIZER, META)),
            )
        return meta

    def _documents(self) -> Iterator[tuple[str, str]]:
        """Every input's documents again, in order; UserError for a file that changed."""
        for source, expected in zip(self.sources, self.hashes):
            digest = hashlib.sha256()
            yield from _documents(source, digest)
            if digest.hexdigest() != expected:
                raise UserError(f"{source.path} changed while being tokenized; run again")

    def _trained(self, head: dict) -> bytes:
        count = sum(e["documents"] for e in head["sources"] if e["split"] == "train")
        docs = (text for key, text in self._documents() if split_of(key) == "train")
        data = _train(docs, count, self.vocab_size, self.progress)
        learned = _encoder(data).get_vocab_size(with_added_tokens=True)
        if learned < self.vocab_size:
            print(
                f"note: the train documents gave only {learned} tokens; vocab_size stays "
                f"{self.vocab_size}, ids {learned}..{self.vocab_size - 1} never occur",
                file=sys.stderr,
            )
        return data

    def _encode(self, tok, eot: int, sinks: dict) -> dict[str, int]:
        """Write each document's ids and `eot` to its split's file; the token count of each."""
        from tqdm import tqdm

        dtype, tokens = token_dtype(self.vocab_size), dict.fromkeys(SPLITS, 0)
        show = dict(desc="tokenizing", unit="doc", file=sys.stderr, disable=not self.progress)
        with tqdm(total=self.documents, **show) as bar:
            for batch in _batches(self._documents()):
                encodings = tok.encode_batch([text for _, text in batch], add_special_tokens=False)
                ids = {split: [] for split in SPLITS}
                for (key, _), encoding in zip(batch, encodings):
                    ids[split_of(key)] += [*encoding.ids, eot]
                for split, row in ids.items():
                    sinks[split].write(np.asarray(row, dtype=dtype).tobytes())
                    tokens[split] += len(row)
                bar.update(len(batch))
        return tokens

    def _meta(self, head: dict, data: bytes, eot: int, tokens: dict) -> dict:
        from tokenizers import __version__ as tokenizers_version

        import spamlang

        documents = Counter()
        for entry in head["sources"]:
            documents[entry["split"]] += entry["documents"]
        meta = {
            "format": FORMAT,
            "vocab_size": self.vocab_size,
            "dtype": token_dtype(self.vocab_size).name,
            "train_tokens": tokens["train"],
            "val_tokens": tokens["val"],
            "documents": {split: documents[split] for split in SPLITS},
            "eot_id": eot,
            "tokenizer": {
                "file": TOKENIZER,
                "sha256": hashlib.sha256(data).hexdigest(),
                "trained": self.given is None,
                "tokenizers_version": tokenizers_version,
                "kind": self.given.kind if self.given else KIND,
            },
            **head,
        }
        version = getattr(spamlang, "__version__", None)
        return meta if version is None else {**meta, "spamlang_version": version}


def _batches(docs: Iterable[tuple[str, str]]) -> Iterator[list[tuple[str, str]]]:
    batch, size = [], 0
    for doc in docs:
        batch.append(doc)
        size += len(doc[1])
        if size >= _BATCH_CHARS:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _json(meta: dict) -> bytes:
    return (json.dumps(meta, indent=2) + "\n").encode("utf-8")


def reference_corpus(folder: str | os.PathLike, vocab_size: int) -> str:
    """`folder` as a corpus of the reference text, tokenized once (two processes wait for one)."""
    from filelock import FileLock

    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        tokenize([], folder, vocab_size=vocab_size, use_reference=True, progress=False)
    return str(folder)
