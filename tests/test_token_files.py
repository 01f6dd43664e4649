"""spamlang.token_files: load_tokens in another dtype, for PyTorch's nn.Embedding."""

import numpy as np
import pytest

from spamlang import data, languages
from spamlang.errors import UserError


@pytest.mark.parametrize("vocab_size", [1000, 70_000])  # stored as uint16, and as uint32
def test_int64_tokens_feed_torch_embedding(tmp_path, vocab_size):
    torch = pytest.importorskip("torch")
    path = tmp_path / "t.bin"
    data.export_tokens(languages.make("spam", vocab_size=vocab_size), 0, 2, 8, path)
    stored = data.load_tokens(path)
    tokens = data.load_tokens(path, dtype=np.int64)
    np.testing.assert_array_equal(tokens, stored)
    embed = torch.nn.Embedding(vocab_size, 4)
    with pytest.raises((TypeError, RuntimeError)):  # what the README's recipe avoids
        embed(torch.from_numpy(np.array(stored)))
    assert embed(torch.from_numpy(tokens)).shape == (8, 2, 4)


def test_a_dtype_too_narrow_for_the_ids_is_refused(tmp_path):
    path = tmp_path / "t.bin"
    data.export_tokens(languages.make("spam", vocab_size=70_000), 0, 2, 4, path)
    with pytest.raises(UserError, match="int64"):
        data.load_tokens(path, dtype=np.int16)
