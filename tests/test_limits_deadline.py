"""The caller-set deadline of translation (``deadline_s=``) and compilation (``EngineLimits.deadline_s``).

Each test uses a deadline too small for any real work (a nanosecond) or one no test reaches (an
hour): never a timing assertion.
"""

from __future__ import annotations

import dataclasses

import pytest
from generation_support import byte_vocab
from pydantic import BaseModel

from structgen import Constraint, EngineLimits, Grammar
from structgen.deadline import check_deadline, deadline_scope
from structgen.errors import LimitError, SchemaError
from structgen.schema import compile_schema

TINY = 1e-9
HOUR = 3600.0

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z]+$"},
        "kind": {"oneOf": [{"type": "integer"}, {"type": "string", "maxLength": 3}]},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}},
    },
    "required": ["name"],
}


class Point(BaseModel):
    x: int
    y: int


def test_schema_translation_past_its_deadline_names_it() -> None:
    with pytest.raises(LimitError) as info:
        Grammar.from_json_schema(SCHEMA, deadline_s=TINY)
    assert info.value.limit == "deadline_s"
    assert "deadline" in str(info.value)


def test_type_translation_past_its_deadline_names_it() -> None:
    with pytest.raises(LimitError) as info:
        Grammar.from_type(Point, deadline_s=TINY)
    assert info.value.limit == "deadline_s"


def test_a_deadline_not_reached_changes_nothing() -> None:
    assert Grammar.from_json_schema(SCHEMA, deadline_s=HOUR) == Grammar.from_json_schema(SCHEMA)
    assert compile_schema(SCHEMA, deadline_s=HOUR).options.deadline_s == HOUR


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "10", True])
def test_a_bad_translation_deadline_is_a_schema_error(bad: object) -> None:
    with pytest.raises(SchemaError, match="deadline_s"):
        Grammar.from_json_schema(SCHEMA, deadline_s=bad)


def test_the_deadline_bounds_pretty_mode_translation_too() -> None:
    with pytest.raises(LimitError) as info:
        Grammar.from_json_schema(SCHEMA, whitespace="pretty", deadline_s=TINY)
    assert info.value.limit == "deadline_s"


@pytest.mark.parametrize("mode", ["lazy", "aot"])
def test_compilation_past_its_deadline_names_it(mode: str) -> None:
    grammar = Grammar.from_json_schema(SCHEMA)
    with pytest.raises(LimitError) as info:
        Constraint.compile(grammar, byte_vocab(), mode=mode, limits=EngineLimits(deadline_s=TINY))
    assert info.value.limit == "deadline_s"


def test_compilation_within_its_deadline_gives_the_same_masks() -> None:
    grammar = Grammar.from_json_schema(SCHEMA)
    vocab = byte_vocab()
    bounded = Constraint.compile(grammar, vocab, mode="aot", limits=EngineLimits(deadline_s=HOUR))
    plain = Constraint.compile(grammar, vocab)
    a, b = bounded.start(), plain.start()
    for ch in b'{"name": "abc"}':
        assert (a.mask() == b.mask()).all()
        a.commit_token(ch)
        b.commit_token(ch)
    assert a.is_accepting() and b.is_accepting()


def test_masks_after_compilation_are_not_bound_by_its_deadline() -> None:
    """The deadline bounds compile; masks computed later (lazy mode) run without it."""
    grammar = Grammar.from_json_schema(SCHEMA)
    limits = dataclasses.replace(EngineLimits(), deadline_s=HOUR)
    c = Constraint.compile(grammar, byte_vocab(), limits=limits)
    assert c.start().mask().any()


@pytest.mark.parametrize("bad", [0, -5, float("nan"), "1", False])
def test_a_bad_compile_deadline_is_refused_with_the_limits(bad: object) -> None:
    # refused where the limits are built, as every other EngineLimits field is
    with pytest.raises(LimitError, match="deadline_s") as e:
        EngineLimits(deadline_s=bad)  # type: ignore[arg-type]
    assert e.value.limit == "deadline_s"


def test_scopes_nest_and_end() -> None:
    with deadline_scope(HOUR, limit="outer"):
        with deadline_scope(TINY, limit="inner"):
            with pytest.raises(LimitError) as info:
                check_deadline()
            assert info.value.limit == "inner"
        check_deadline()  # the inner bound ended with its scope
        with deadline_scope(HOUR * 2, limit="later"):
            check_deadline()
    with deadline_scope(TINY, limit="outer"):
        with deadline_scope(HOUR, limit="inner"):  # a later end does not lift an earlier one
            with pytest.raises(LimitError) as info:
                check_deadline()
            assert info.value.limit == "outer"
    check_deadline()  # no scope: no bound


def test_a_failed_translation_leaves_no_deadline_behind() -> None:
    with pytest.raises(LimitError):
        Grammar.from_json_schema(SCHEMA, deadline_s=TINY)
    check_deadline()
    assert Grammar.from_json_schema(SCHEMA) is not None


# -- long literals within every limit -----------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "quoted"),
    [
        (lambda text: Grammar.from_json_schema({"const": text}), True),
        (lambda text: Grammar.from_json_schema({"type": "string", "pattern": f"^{text}$"}), True),
        (lambda text: Grammar.from_regex(f"^{text}$"), False),
    ],
    ids=["const", "pattern", "regex"],
)
def test_a_long_literal_compiles_and_walks(make, quoted: bool) -> None:  # noqa: ANN001 - a grammar factory
    """A literal 12,000 bytes long is a right-nested chain of terms that long; the checks after
    lowering walked it recursively and failed with a misleading ``max_nesting``."""
    text = "ab" * 6_000
    constraint = Constraint.compile(make(text), byte_vocab())
    state = constraint.start()
    first = b'"' if quoted else b"a"
    assert state.is_allowed(first[0])
    written = (f'"{text}"' if quoted else text).encode()
    assert state.commit_tokens(list(written[:64]))
    assert not state.is_accepting() and state.is_allowed(written[64])
