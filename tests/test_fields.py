"""One field checker (`spamlang.fields`): TrainConfig, ModelConfig, the languages and Sweep
refuse the same values with the same one-line message, `[<owner>: ]<field> must be <what>,
got <value!r>`."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import typing

import numpy as np
import pytest

from spamlang import fields, languages
from spamlang.errors import UserError
from spamlang.model.config import ModelConfig
from spamlang.sweep.spec import Sweep
from spamlang.train.config import TrainConfig

BASE = TrainConfig(vocab_size=16, seq_len=8, batch_size=2, tokens=16)
SHAPE = re.compile(
    r"^(?:(?P<owner>[^:]+): )?(?P<field>[\w.]+) must be (?P<what>.+), "
    r"got (?P<value>.+)$"
)


def refusal(build) -> str:
    with pytest.raises(UserError) as e:
        build()
    text = str(e.value)
    assert "\n" not in text and SHAPE.match(text), text
    return text


# One field of each kind in each of the four owners: (build with a value, owner prefix, field).
INT_FIELDS = {
    "TrainConfig": (lambda v: BASE.replace(vocab_size=v), "", "vocab_size"),
    "ModelConfig": (lambda v: ModelConfig(vocab_size=v), "", "vocab_size"),
    "language": (lambda v: languages.make("spam", vocab_size=v), "spam: ", "vocab_size"),
    "Sweep axis": (lambda v: Sweep("s", BASE, {"vocab_size": [v]}), "sweep 's': ", "vocab_size"),
    "Sweep field": (
        lambda v: Sweep("s", BASE, {"lr": [1e-3]}, bracket_lr=v),
        "sweep 's': ",
        "bracket_lr",
    ),
}
FLOAT_FIELDS = {
    "TrainConfig": (lambda v: BASE.replace(lr=v), "", "lr"),
    "ModelConfig": (lambda v: ModelConfig(vocab_size=16, init_std=v), "", "init_std"),
    "language": (lambda v: languages.make("zipf-spam", vocab_size=8, s=v), "zipf-spam: ", "s"),
    "Sweep axis": (lambda v: Sweep("s", BASE, {"lr": [v]}), "sweep 's': ", "lr"),
}


@pytest.mark.parametrize("owner", INT_FIELDS)
def test_a_bool_is_not_an_integer_anywhere(owner):
    build, prefix, field = INT_FIELDS[owner]
    assert refusal(lambda: build(True)) == f"{prefix}{field} must be an integer, got True"


@pytest.mark.parametrize("owner", FLOAT_FIELDS)
def test_a_bool_is_not_a_number_anywhere(owner):
    build, prefix, field = FLOAT_FIELDS[owner]
    assert refusal(lambda: build(True)) == f"{prefix}{field} must be a number, got True"


def test_the_message_is_the_same_after_the_owner_and_field():
    for table, tail in (
        (INT_FIELDS, " must be an integer, got True"),
        (FLOAT_FIELDS, " must be a number, got True"),
    ):
        tails = {
            refusal(lambda build=build: build(True)).removeprefix(prefix).removeprefix(field)
            for build, prefix, field in table.values()
        }
        assert tails == {tail}


def test_nested_fields_keep_their_owners_message():
    # A model override and a language parameter reach their own checker through TrainConfig.
    assert (
        refusal(lambda: BASE.replace(model={"d_model": True}))
        == "d_model must be an integer, got True"
    )
    assert (
        refusal(lambda: BASE.replace(language="cycle", language_params={"k": True}))
        == "cycle: k must be an integer, got True"
    )
    assert (
        refusal(lambda: Sweep("s", BASE, {"model.d_model": [True]}))
        == "sweep 's': model.d_model must be an integer, got True"
    )
    assert (
        refusal(lambda: BASE.replace(tie_embeddings=1))
        == "tie_embeddings must be true or false, got 1"
    )
    assert (
        refusal(lambda: Sweep("s", BASE, {"tie_embeddings": [0]}))
        == "sweep 's': tie_embeddings must be true or false, got 0"
    )


@pytest.mark.parametrize("owner", FLOAT_FIELDS)
def test_ints_are_accepted_for_floats_and_stored_as_floats(owner):
    build, _, field = FLOAT_FIELDS[owner]
    built = build(2)
    if isinstance(built, Sweep):
        ((run_id, config),) = built.points()
        assert run_id == "lr2e0" and config.lr == 2.0 and type(config.lr) is float
        assert built.points() == Sweep("s", BASE, {"lr": [2.0]}).points()
    else:
        assert getattr(built, field) == 2.0 and type(getattr(built, field)) is float
    assert type(fields.as_float("x", 3)) is float


def test_floats_are_finite():
    assert refusal(lambda: BASE.replace(lr=math.inf)) == "lr must be finite, got inf"
    assert (
        refusal(lambda: languages.make("zipf-spam", vocab_size=8, s=math.nan))
        == "zipf-spam: s must be finite, got nan"
    )
    assert (
        refusal(lambda: ModelConfig(vocab_size=16, rope_theta=math.inf))
        == "rope_theta must be finite, got inf"
    )


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: BASE.replace(lr=0.0), "lr must be > 0, got 0.0"),
        (lambda: BASE.replace(batch_size=0), "batch_size must be >= 1, got 0"),
        (
            lambda: BASE.replace(seed=-1),
            "seed must be in [0, 4294967296) (jax.random.PRNGKey keeps "
            "32 bits; larger seeds repeat smaller ones), got -1",
        ),
        (lambda: BASE.replace(b2=1.0), "b2 must be in [0, 1), got 1.0"),
        (lambda: BASE.replace(decay_frac=1.5), "decay_frac must be in [0, 1], got 1.5"),
        (lambda: BASE.replace(seq_len=1), "seq_len must be >= 2 (one predicted position), got 1"),
        (
            lambda: BASE.replace(schedule="linear"),
            "schedule must be one of constant, cosine, wsd, got 'linear'",
        ),
        (lambda: ModelConfig(vocab_size=1), "vocab_size must be >= 2, got 1"),
        (lambda: ModelConfig(vocab_size=16, norm_eps=0), "norm_eps must be > 0, got 0.0"),
        (lambda: ModelConfig(vocab_size=16, embed_dim=0), "embed_dim must be >= 1, got 0"),
        (
            lambda: languages.make("spam", vocab_size=1),
            "spam: vocab_size must be in [2, 1073741824], got 1",
        ),
        (
            lambda: Sweep("s", BASE, {"lr": [1e-3]}, bracket_lr=-1),
            "sweep 's': bracket_lr must be >= 0, got -1",
        ),
    ],
)
def test_ranges_are_refused_with_the_limit_named(build, message):
    assert refusal(build) == message


def test_the_checker_itself():
    assert fields.as_int("n", np.int64(3)) == 3 and type(fields.as_int("n", np.int64(3))) is int
    for bad in (True, 2.5, 16.0, "sixteen", "1.5", "4Ki", None):
        with pytest.raises(UserError, match=r"^n must be an integer, got "):
            fields.as_int("n", bad)
    assert fields.as_int("n", "16") == 16  # text is read as flags read it (parse_int)
    assert fields.as_int("n", 16.0, whole_floats=True) == 16
    assert BASE.replace(vocab_size=16.0).vocab_size == 16  # TrainConfig's JSON: whole floats
    assert fields.in_range("p", 1, gt=0, le=1) == 1
    with pytest.raises(UserError, match=r"^p must be in \(0, 1\], got 0$"):
        fields.in_range("p", 0, gt=0, le=1)
    with pytest.raises(UserError, match=r"^p must be < 1, got nan$"):
        fields.in_range("p", math.nan, lt=1)
    optional = typing.Optional[int]  # noqa: UP045 (the old spelling is what is under test)
    assert fields.check("e", None, optional, ge=1) is None
    with pytest.raises(UserError, match=r"^e must be an integer or null, got 'eight'$"):
        fields.check("e", "eight", optional, ge=1)
    assert fields.check("e", "8", optional, ge=1) == 8
    with pytest.raises(UserError, match=r"^o: c must be one of 0, 1, got True$"):
        fields.one_of("c", True, (0, 1), owner="o")
    assert fields.conform("d", {"a": 1}, dict) == {"a": 1}
    with pytest.raises(UserError, match="d must be a mapping of names to values"):
        fields.conform("d", {1: 1}, dict)


def test_the_checker_imports_nothing_heavy():
    code = (
        "import sys, spamlang.fields, spamlang.train.config; "
        "heavy = {'jax', 'numpy', 'flax', 'optax', 'orbax'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_one_definition_of_is_number_and_finite_used_everywhere():
    """`fields.is_number` and `fields.finite` are the package's only number tests: no module
    defines its own copy (results, plots and sweep summaries read them from here)."""
    from pathlib import Path

    package = Path(fields.__file__).parent
    copies = [
        f"{path.relative_to(package)}: {line.strip()}"
        for path in sorted(package.rglob("*.py"))
        for line in path.read_text().splitlines()
        if re.match(r"\s*def _?(is_number|finite)\(", line)
    ]
    assert copies == [
        "fields.py: def is_number(value: Any) -> bool:",
        "fields.py: def finite(value: Any) -> float | None:",
    ]
    for value in (None, True, "1", math.inf, -math.inf, math.nan, [1.0]):
        assert fields.finite(value) is None
    assert fields.finite(3) == 3.0 and isinstance(fields.finite(3), float)
    assert fields.finite(np.float32(0.5)) == 0.5 and fields.finite(-2.5) == -2.5
