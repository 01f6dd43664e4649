"""An export replaces only its own files: a file it did not write needs --force (#23 item 1)."""

import os

import numpy as np
import pytest

from spamlang import data, languages, token_files
from spamlang.cli import main

LANG = languages.make("spam", vocab_size=8)


def export_cli(capsys, path, *extra):
    status = main(
        [
            "export",
            "spam",
            "--vocab-size",
            "8",
            "--seq-len",
            "8",
            "--num-seqs",
            "4",
            "-o",
            str(path),
            *extra,
        ]
    )
    out, err = capsys.readouterr()
    return status, out, err


def test_a_file_without_sidecar_is_kept_without_force(capsys, tmp_path):
    draft = tmp_path / "precious.txt"
    draft.write_text("my thesis draft\n")
    status, out, err = export_cli(capsys, draft)
    assert status == 2 and out == "" and len(err.splitlines()) == 1
    assert "already exists; pass --force to replace it" in err and "force=True" not in err
    assert "16 B, not a spamlang export" in err
    assert draft.read_text() == "my thesis draft\n"
    assert sorted(os.listdir(tmp_path)) == ["precious.txt"]
    with pytest.raises(token_files.NotAnExport, match="has no sidecar"):
        data.load_tokens(draft)

    status, out, err = export_cli(capsys, draft, "--force")
    assert status == 0
    assert err == (
        f"note: replacing '{draft}' (16 B, not a spamlang export: it has no sidecar "
        f"'{draft}.json')\n"
    )
    np.testing.assert_array_equal(data.load_tokens(draft), data.SequenceDataset(LANG, 0, 8)[0:4])


def test_a_stray_json_that_is_not_a_sidecar_is_kept(capsys, tmp_path):
    mine = tmp_path / "results.json"
    mine.write_text('{"accuracy": 0.9}\n')
    status, out, err = export_cli(capsys, tmp_path / "results")
    assert status == 2 and len(err.splitlines()) == 1
    assert f"'{mine}' already exists; pass --force" in err and "not a spamlang export" in err
    assert mine.read_text() == '{"accuracy": 0.9}\n'
    assert sorted(os.listdir(tmp_path)) == ["results.json"]


def test_python_api_says_force_true(tmp_path):
    (tmp_path / "notes.bin").write_bytes(b"\1\2\3")
    with pytest.raises(token_files.NeedsForce) as e:
        data.export_tokens(LANG, 0, 8, 4, tmp_path / "notes.bin")
    assert "pass force=True to replace it (3 B, not a spamlang export" in str(e.value)
    assert "--force" not in str(e.value)
    data.export_tokens(LANG, 0, 8, 4, tmp_path / "y.bin")
    with pytest.raises(
        token_files.NeedsForce, match=r"pass force=True to replace it \(a spamlang export of 4 x 8"
    ):
        data.export_tokens(LANG, 1, 8, 4, tmp_path / "y.bin")


@pytest.mark.parametrize("name", ["x.npy", "x.NPZ"])
def test_numpy_suffixes_are_refused_naming_the_format(capsys, tmp_path, name):
    status, out, err = export_cli(capsys, tmp_path / name)
    assert status == 2 and len(err.splitlines()) == 1
    assert "raw token file with a JSON sidecar" in err and "np.load cannot read it" in err
    assert os.listdir(tmp_path) == []
