"""string_node: lengths, pattern and format over the decoded value, read through JSON escapes."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from structgen import Grammar, SchemaError
from structgen.grammar import ir
from structgen.grammar.lowering import lower_set_operations
from structgen.schema.json_escapes import ANY_ENCODED, encode_chars
from structgen.schema.strings import length_bounds, string_node


def grammar(node: ir.Node) -> Grammar:
    return Grammar({"root": node}, "root")


def dumps_both(value: str) -> list[str]:
    return [json.dumps(value, ensure_ascii=True), json.dumps(value, ensure_ascii=False)]


def node_count(node: ir.Node) -> int:
    return sum(1 for _ in ir.iter_nodes(node))


# ---------------------------------------------------------------------------------------------
# escapes


def test_unconstrained_string_reads_every_json_dumps_output() -> None:
    g = grammar(string_node())
    for s in ["", "abc", 'a"b\\c', "\n\r\t\b\f\x00\x1f\x7f", "/", "é😀\u2028\uffff\ue000", "\ud7ff"]:
        for text in dumps_both(s):
            assert g.matches(text), text


@pytest.mark.parametrize(
    "text",
    [
        '"\\ud800"',
        '"\\udc00x"',
        '"\\ude00\\ud83d"',
        '"\x01"',
        '"\n"',
        '"\\x41"',
        '"\\U0041"',
        '"\\u12"',
        '"a',
        'a"',
        '"\\"',
    ],
)
def test_invalid_json_strings_are_rejected(text: str) -> None:
    assert not grammar(string_node()).matches(text)


def test_escape_forms() -> None:
    g = grammar(string_node(max_length=1))
    for text in ['"\\/"', '"\\u00e9"', '"\\u00E9"', '"\\uD83D\\uDE00"', '"\\u000a"', '"\\n"', '"\\""', '"\\u007f"']:
        assert g.matches(text), text
    assert not g.matches('"\\u0022"') and not g.matches('"\\u005c"')
    # ASCII letters spelt as \\u escapes: a documented departure unless ascii_escapes=True
    assert not g.matches('"\\u0041"')
    assert grammar(string_node(max_length=1, ascii_escapes=True)).matches('"\\u0041"')


def test_lengths_count_code_points() -> None:
    g = grammar(string_node(min_length=2, max_length=3))
    for s, ok in [
        ("ab", True),
        ("abc", True),
        ("a", False),
        ("abcd", False),
        ("😀😀", True),
        ('\n\t"', True),
        ("😀", False),
    ]:
        for text in dumps_both(s):
            assert g.matches(text) == ok, text


def test_large_length_bound_stays_symbolic() -> None:
    node = string_node(max_length=100_000)
    assert node_count(node) < 100
    g = grammar(string_node(min_length=3000, max_length=3001))
    assert (
        g.matches(json.dumps("x" * 3000))
        and not g.matches(json.dumps("x" * 2999))
        and not g.matches(json.dumps("é" * 3002, ensure_ascii=False))
    )


def test_length_keyword_values() -> None:
    assert grammar(string_node(min_length=2.0)).matches('"ab"')
    for bad in [{"min_length": -1}, {"max_length": 1.5}, {"min_length": True}, {"max_length": "3"}]:
        with pytest.raises(SchemaError):
            string_node(**bad)  # type: ignore[arg-type]
    with pytest.raises(SchemaError) as info:
        string_node(min_length=3, max_length=2, pointer="/x")
    assert info.value.keyword == "maxLength" and info.value.pointer == "/x"
    assert string_node(min_length=3, max_length=2, allow_empty=True) == ir.NOTHING


def test_format_and_lengths_intersect() -> None:
    g = grammar(string_node(format="ipv4", max_length=9))
    assert g.matches('"1.2.3.4"') and g.matches('"10.20.3.4"') and not g.matches('"10.20.30.4"')
    with pytest.raises(SchemaError) as info:
        string_node(format="uuid", max_length=10)
    assert info.value.keyword == "maxLength"
    with pytest.raises(SchemaError) as info:
        string_node(format="date", min_length=11)
    assert info.value.keyword == "minLength"
    # lengths the format implies add no intersection
    assert not any(isinstance(n, ir.Intersection) for n in ir.iter_nodes(string_node(format="uuid", max_length=36)))


def test_length_bounds() -> None:
    assert length_bounds(ir.seq(ir.lit("é"), ir.repeat(ir.ANY_CHAR, 2, 5))) == (3, 6)
    assert length_bounds(ir.star(ir.lit("ab"))) == (0, None)
    assert length_bounds(ir.alt(ir.lit("a"), ir.lit("abc"))) == (1, 3)


def test_encode_chars_refuses_non_character_nodes() -> None:
    for node in [ir.Ref("x"), ir.ByteClass(((0, 255),)), ir.Literal(b"\xff")]:
        with pytest.raises(ValueError):
            encode_chars(node)


# ---------------------------------------------------------------------------------------------
# patterns (need the regex reader)


def ecma_search(pattern: str, text: str) -> bool:
    """Python's ``re`` as an oracle for the ECMA-262 patterns below: ``\\w`` and ``\\d`` are
    ASCII-only there (``re.ASCII``), and ``$`` matches only at the very end (``\\Z``; none of
    the patterns has ``$`` inside a class)."""
    return re.search(pattern.replace("$", "\\Z"), text, re.ASCII) is not None


PATTERNS = [
    "^[a-c]+$",
    "ab",
    "\\d{2}",
    "^x|y$",
    "^(foo|ba[rz])*$",
    "[^a-z]",
    "^.{2,4}$",
    "\\n",
    "^[😀-😂é]+$",
    "^\\w+@\\w+$",
    "^a.c$",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_pattern_examples(pattern: str) -> None:
    g = grammar(string_node(pattern=pattern))
    for s in [
        "",
        "abc",
        "ab",
        "12",
        "x",
        "zy",
        "foobar",
        "bazfoo",
        "aé",
        "A",
        "a\nb",
        "😀é",
        "a@b",
        "a.c",
        "a\nc",
        "😁",
    ]:
        expected = ecma_search(pattern, s)
        for text in dumps_both(s):
            assert g.matches(text) == expected, (pattern, s)


def test_pattern_sees_decoded_characters() -> None:
    g = grammar(string_node(pattern='^"\\\\/$'))
    assert g.matches(json.dumps('"\\/')) and g.matches('"\\"\\\\\\/"')
    g = grammar(string_node(pattern="^\\u00e9$"))
    assert g.matches('"é"') and g.matches('"\\u00e9"') and g.matches('"\\u00C9"') is False


def test_pattern_and_lengths() -> None:
    g = grammar(string_node(pattern="^[a-z]+\\d$", max_length=5))
    assert g.matches('"abc1"') and g.matches('"abcd1"') and not g.matches('"abcde1"')
    with pytest.raises(SchemaError) as info:
        string_node(pattern="^a$", min_length=2)
    assert info.value.keyword == "minLength"
    with pytest.raises(SchemaError) as info:
        string_node(pattern="^(ab|a)$", min_length=3)
    assert info.value.keyword in ("minLength", "pattern")
    with pytest.raises(SchemaError) as info:
        string_node(pattern="^[0-9]+$", format="date")
    assert info.value.keyword == "pattern"
    assert string_node(pattern="^a$", min_length=2, allow_empty=True) == ir.NOTHING


def test_bad_pattern_is_a_schema_error() -> None:
    with pytest.raises(SchemaError) as info:
        string_node(pattern="(a", pointer="/p")
    assert info.value.keyword == "pattern" and info.value.pointer == "/p"
    with pytest.raises(SchemaError):
        string_node(pattern=3)  # type: ignore[arg-type]


def test_pattern_with_length_lowers_to_plain_rules() -> None:
    g = grammar(string_node(pattern="^[a-f0-9]+$", min_length=4, max_length=8))
    lowered = lower_set_operations(g)
    assert not any(
        isinstance(n, (ir.Intersection, ir.Difference)) for body in lowered.rules.values() for n in ir.iter_nodes(body)
    )
    for s in ["abcd", "abc", "0123456789", "deadbeef", "xyzw"]:
        assert lowered.matches(json.dumps(s)) == g.matches(json.dumps(s)), s


def test_lowered_strings_count_decoded_characters() -> None:
    # the automaton is built over decoded characters: a few states per position, each transition
    # reading one encoded character, however many bytes its escape takes
    g = grammar(string_node(pattern="\\d", max_length=100))
    lowered = lower_set_operations(g)
    assert len(lowered.rules) - len(g.rules) < 250
    for s in ["1", "a" * 99 + "1", "a" * 100 + "1", "\n😀é" * 10 + "7", "é" * 100]:
        for text in dumps_both(s):
            assert lowered.matches(text) == g.matches(text), s


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pattern=st.sampled_from(PATTERNS),
    lo=st.integers(0, 3),
    span=st.one_of(st.none(), st.integers(0, 4)),
    values=st.lists(st.text(st.sampled_from('abcxyz12é😀\n@."\\'), max_size=7), min_size=1, max_size=8),
)
def test_lowering_property(pattern: str, lo: int, span: int | None, values: list[str]) -> None:
    hi = None if span is None else lo + span
    node = string_node(pattern=pattern, min_length=lo, max_length=hi, allow_empty=True)
    g = grammar(node)
    lowered = lower_set_operations(g)
    for v in values:
        for text in dumps_both(v):
            assert lowered.matches(text) == g.matches(text), (pattern, lo, hi, v)


# ---------------------------------------------------------------------------------------------
# properties

text_strategy = st.text(st.characters(codec="utf-8"), max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lo=st.integers(0, 8),
    span=st.one_of(st.none(), st.integers(0, 6)),
    values=st.lists(text_strategy, min_size=1, max_size=8),
)
def test_length_property(lo: int, span: int | None, values: list[str]) -> None:
    hi = None if span is None else lo + span
    g = grammar(string_node(min_length=lo, max_length=hi))
    for v in values:
        expected = lo <= len(v) and (hi is None or len(v) <= hi)
        for text in dumps_both(v):
            assert g.matches(text) == expected, (lo, hi, v)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pattern=st.sampled_from(PATTERNS),
    lo=st.integers(0, 4),
    span=st.one_of(st.none(), st.integers(0, 4)),
    values=st.lists(st.text(st.sampled_from('abcxyz12é😀\n@."\\'), max_size=7), min_size=1, max_size=8),
)
@example(pattern="^\\w+@\\w+$", lo=0, span=None, values=["1@é"])  # ECMA \w is ASCII only
@example(pattern="^x|y$", lo=0, span=None, values=["y\n"])  # ECMA $ does not match before a final newline
def test_pattern_and_length_property(pattern: str, lo: int, span: int | None, values: list[str]) -> None:
    hi = None if span is None else lo + span
    node = string_node(pattern=pattern, min_length=lo, max_length=hi, allow_empty=True)
    g = grammar(node)
    for v in values:
        expected = ecma_search(pattern, v) and lo <= len(v) and (hi is None or len(v) <= hi)
        for text in dumps_both(v):
            assert g.matches(text) == expected, (pattern, lo, hi, v)


def test_any_encoded_is_one_character() -> None:
    g = grammar(ir.seq(ir.lit('"'), ANY_ENCODED, ir.lit('"')))
    for cp in list(range(0x300)) + [0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF]:
        for text in dumps_both(chr(cp)):
            assert g.matches(text), hex(cp)


code_points = st.one_of(
    st.integers(0, 0x2FF), st.integers(0xD700, 0xE100), st.integers(0xFFF0, 0x10100), st.integers(0x1F000, 0x10FFFF)
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ranges=st.lists(st.tuples(code_points, st.integers(0, 0x500)), min_size=1, max_size=4),
    probes=st.lists(code_points, min_size=5, max_size=20),
)
def test_encoded_class_property(ranges: list[tuple[int, int]], probes: list[int]) -> None:
    spans = [(lo, min(lo + n, ir.MAX_CODEPOINT)) for lo, n in ranges]
    cls = ir.CharClass(tuple(spans))
    g = grammar(ir.seq(ir.lit('"'), encode_chars(cls), ir.lit('"')))
    members = cls.codepoints()
    for cp in probes + [lo for lo, _ in spans] + [hi for _, hi in spans]:
        if 0xD800 <= cp <= 0xDFFF:
            continue
        inside = any(lo <= cp <= hi for lo, hi in members)
        for text in dumps_both(chr(cp)):
            assert g.matches(text) == inside, (spans, hex(cp), text)
