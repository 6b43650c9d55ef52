"""JSON lexical pieces: string spellings, excluded names, number spellings."""

from __future__ import annotations

import json
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from structgen.grammar import Grammar, ir
from structgen.schema.json_text import (
    any_string,
    hex_range,
    number_literal,
    string_all_spellings,
    string_literal,
    string_not_in,
)
from structgen.schema.jsonvalue import canon, to_fraction


def _g(node: ir.Node) -> Grammar:
    return Grammar({"root": node})


def test_any_string() -> None:
    g = _g(any_string())
    for s in ['""', '"abc"', '"\\u00e9"', '"\\uD83D\\ude00"', '"é"', '"\\n\\"\\\\\\/"', '"\\u001f"']:
        assert g.matches(s), s
    for s in ['"\\ud800"', '"a', '"\x01"', '"\\x"', '"\\u0061"']:  # lone surrogate, control, bad escape, \u of ASCII
        assert not g.matches(s), s


def test_string_not_in_excludes_every_spelling() -> None:
    g = _g(string_not_in(["a", "ab", "foo", "é", 'q"']))
    for s in ['"a"', '"ab"', '"foo"', '"é"', '"\\u00e9"', '"\\u00E9"', '"q\\""']:
        assert not g.matches(s), s
    for s in ['""', '"b"', '"abc"', '"fo"', '"fooo"', '"e"', '"q"', '"éé"']:
        assert g.matches(s), s


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=4), max_size=4), st.text(max_size=5))
def test_string_not_in_agrees_with_membership(names: list[str], probe: str) -> None:
    g = _g(string_not_in(names))
    for text in {json.dumps(probe), json.dumps(probe, ensure_ascii=False)}:
        if any(0xD800 <= ord(c) <= 0xDFFF for c in probe):
            continue
        assert g.matches(text) == (probe not in names), (names, text)


def test_string_literal_spellings() -> None:
    g = _g(string_literal("é\n/"))
    assert g.matches(json.dumps("é\n/", ensure_ascii=False)) and g.matches(json.dumps("é\n/"))
    assert _g(string_all_spellings("a")).matches('"\\u0061"')


def test_hex_range() -> None:
    g = _g(hex_range(0x0000, 0xD7FF))
    assert g.matches("d7FF") and g.matches("0000") and not g.matches("d800")


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.integers(-(10**20), 10**20), st.floats(allow_nan=False, allow_infinity=False)))
def test_number_literal_accepts_serialiser_output(x: float) -> None:
    g = _g(number_literal(to_fraction(x)))
    assert g.matches(json.dumps(x))
    if isinstance(x, int):
        assert g.matches(json.dumps(float(x))) or abs(x) > 2**53
    assert not g.matches(json.dumps(x + 1 if isinstance(x, int) else x * 2 + 1))


def test_number_literal_spellings() -> None:
    g = _g(number_literal(Fraction(15)))
    assert all(g.matches(t) for t in ["15", "15.0", "1.5e1", "1.5E+01", "1.50e1"])
    assert not any(g.matches(t) for t in ["150e-1", "16", "15.1"])
    g = _g(number_literal(Fraction(0)))
    assert all(g.matches(t) for t in ["0", "-0", "0.0", "0e5", "-0.00E-3"])


def test_canonical_values() -> None:
    assert (
        canon(1) == canon(1.0)
        and canon(True) != canon(1)
        and canon({"a": [1], "b": 2}) == canon({"b": 2.0, "a": [1.0]})
    )
    assert canon([0]) != canon([False])


def _spellings(c: str) -> list[str]:
    o = ord(c)
    out = [c] if o >= 0x20 and c not in '"\\' else []
    short = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    if c in short:
        out.append(short[c])
    if not 0x20 <= o <= 0x7E:
        if o < 0x10000:
            out += ["\\u%04x" % o, "\\u%04X" % o]
        else:
            v = o - 0x10000
            out.append("\\u%04x\\u%04X" % (0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)))
    return out


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [chr(c) for c in range(0x80)] + ["é", "\u07ff", "\u0800", "\ufffd", "\U0001f600", "\U0010ffff"]
        ),
        max_size=4,
    ),
    st.data(),
)
def test_string_spellings_agree_with_the_scalar_translator(chars: list[str], data: st.DataObject) -> None:
    """Excluding listed keys and matching key patterns relies on both sides spelling alike."""
    text = '"' + "".join(data.draw(st.sampled_from(_spellings(c))) for c in chars) + '"'
    assert _g(any_string()).matches(text) == _SCALAR_STRING[0].matches(text)


_SCALAR_STRING: list[Grammar] = []


def setup_module() -> None:
    from structgen.schema.strings import string_node

    _SCALAR_STRING.append(_g(string_node()))
