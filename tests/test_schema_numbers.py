"""integer_node / number_node: exact bounds and multipleOf over JSON number texts."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from structgen import Grammar, SchemaError
from structgen.grammar import ir
from structgen.grammar.lowering import lower_set_operations
from structgen.schema.numbers import integer_node, number_node

PLAIN = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?")
INTEGER_FORM = re.compile(r"-?(0|[1-9][0-9]*)(\.0+)?")
SCIENTIFIC = re.compile(r"-?[1-9](\.[0-9]+)?[eE][+-]?[0-9]+")
JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def grammar(node: ir.Node, rules: dict[str, ir.Node] | None = None) -> Grammar:
    return Grammar({"root": node, **(rules or {})}, "root")


def integer_grammar(**kw: object) -> Grammar:
    rules: dict[str, ir.Node] = {}
    return grammar(integer_node(rules=rules, **kw), rules)  # type: ignore[arg-type]


def number_grammar(**kw: object) -> Grammar:
    rules: dict[str, ir.Node] = {}
    return grammar(number_node(rules=rules, **kw), rules)  # type: ignore[arg-type]


def in_bounds(v: Decimal, kw: dict) -> bool:
    d = {
        k: Decimal(repr(x)) if isinstance(x, float) else Decimal(x)
        for k, x in kw.items()
        if x is not None and k != "multiple_of"
    }
    if "minimum" in d and v < d["minimum"]:
        return False
    if "maximum" in d and v > d["maximum"]:
        return False
    if "exclusive_minimum" in d and v <= d["exclusive_minimum"]:
        return False
    if "exclusive_maximum" in d and v >= d["exclusive_maximum"]:
        return False
    q = kw.get("multiple_of")
    if q is not None:
        q = Decimal(repr(q)) if isinstance(q, float) else Decimal(q)
        if v % q != 0:
            return False
    return True


def expected_number(text: str, kw: dict) -> bool:
    """The documented language of number_node: which valid texts it accepts."""
    if not JSON_NUMBER.fullmatch(text):
        return False
    v = Decimal(text)
    if not in_bounds(v, kw):
        return False
    if kw.get("multiple_of") is not None:
        return bool(PLAIN.fullmatch(text))
    if PLAIN.fullmatch(text) or SCIENTIFIC.fullmatch(text) or v == 0:
        return True
    lower = [
        Decimal(repr(kw[k])) if isinstance(kw[k], float) else Decimal(kw[k])
        for k in ("minimum", "exclusive_minimum")
        if kw.get(k) is not None
    ]
    upper = [
        Decimal(repr(kw[k])) if isinstance(kw[k], float) else Decimal(kw[k])
        for k in ("maximum", "exclusive_maximum")
        if kw.get(k) is not None
    ]
    if v > 0:  # every spelling where the positive side has no bound
        return not upper and all(b <= 0 for b in lower)
    return not lower and all(b >= 0 for b in upper)


# ---------------------------------------------------------------------------------------------
# integers


def test_integer_range_small() -> None:
    g = integer_grammar(minimum=-15, maximum=1234)
    for x in range(-40, 1300):
        assert g.matches(json.dumps(x)) == (-15 <= x <= 1234), x


def test_integer_forms() -> None:
    g = integer_grammar()
    for text in ["0", "-0", "7", "-12", "10.0", "-3.000", "0.0", "-0.00"]:
        assert g.matches(text), text
    # exponents are a documented departure; the rest is not JSON
    for text in ["1e2", "1E2", "1.5e1", "1.5", "01", "+1", "1.", ".5", "--1", "", "-", "1.01"]:
        assert not g.matches(text), text


def test_negative_zero_follows_the_bounds() -> None:
    assert integer_grammar(minimum=0).matches("-0")
    assert not integer_grammar(exclusive_minimum=0).matches("-0")
    assert not integer_grammar(exclusive_maximum=0).matches("-0.0")
    assert number_grammar(maximum=0).matches("-0.0e5")
    assert not number_grammar(exclusive_maximum=0).matches("-0.0e5")


def test_integer_non_integral_and_exclusive_bounds() -> None:
    g = integer_grammar(minimum=1.5, exclusive_maximum=5)
    assert [x for x in range(-3, 9) if g.matches(str(x))] == [2, 3, 4]
    g = integer_grammar(exclusive_minimum=-2.5, maximum=-0.5)
    assert [x for x in range(-6, 3) if g.matches(str(x))] == [-2, -1]


def test_huge_integer_bounds() -> None:
    g = integer_grammar(minimum=-(10**18), maximum=10**18)
    for x in [10**18, -(10**18), 10**18 - 1, 123456789012345678, 0]:
        assert g.matches(str(x))
    for x in [10**18 + 1, -(10**18) - 1, 10**19]:
        assert not g.matches(str(x))
    big = 12345678910111213141516171819202122232425262728293031
    g = integer_grammar(minimum=big)
    assert g.matches(str(big)) and g.matches(str(big + 1)) and not g.matches(str(big - 1))
    assert len(str(integer_node(minimum=big))) < 20_000


def test_float_bounds_are_their_decimal_spelling() -> None:
    g = number_grammar(minimum=0.1)
    assert g.matches("0.1") and not g.matches("0.09999999999999999")
    g = number_grammar(maximum=1e-3)
    assert g.matches("0.001") and g.matches("1e-3") and not g.matches("0.0010000001")


def test_number_fractional_and_negative_bounds() -> None:
    g = number_grammar(minimum=-0.5, exclusive_maximum=3.25)
    accepted = [
        "-0.5",
        "-0.50",
        "-0.4999",
        "0",
        "-0",
        "3.2499999",
        "3",
        "1e0",
        "2.5e0",
        "3.24e0",
        "-5e-1",
        "1e-300",
        "0e10",
    ]
    rejected = ["-0.51", "3.25", "3.250", "3.25e0", "-5.1e-1", "4", "1e1"]
    assert all(g.matches(t) for t in accepted)
    assert not any(g.matches(t) for t in rejected)
    # non-normalised exponent forms under a bound: documented departure
    assert not g.matches("10e-1")


def test_unbounded_side_takes_every_spelling() -> None:
    g = number_grammar(minimum=0)
    for t in ["12e3", "0.5e1", "100E-2", "0.000e9", "-0", "1.25"]:
        assert g.matches(t), t
    for t in ["-1", "-1e-9", "-0.5e1"]:
        assert not g.matches(t), t
    g = number_grammar()
    for t in ["12e3", "-0.5E+1", "0", "-0.0", "123.456e-789"]:
        assert g.matches(t), t


def test_unsatisfiable_bounds() -> None:
    with pytest.raises(SchemaError) as info:
        integer_node(minimum=5, maximum=3, pointer="/properties/a")
    assert info.value.keyword == "maximum" and info.value.pointer == "/properties/a"
    with pytest.raises(SchemaError):
        integer_node(minimum=1.2, maximum=1.8)
    with pytest.raises(SchemaError):
        number_node(exclusive_minimum=1, maximum=1)
    assert number_node(minimum=2, maximum=1, allow_empty=True) == ir.NOTHING
    with pytest.raises(SchemaError) as info:
        integer_node(minimum=1, maximum=4, multiple_of=5)
    assert info.value.keyword == "multipleOf"
    with pytest.raises(SchemaError):
        number_node(exclusive_minimum=0, exclusive_maximum=0.5, multiple_of=0.5)


@pytest.mark.parametrize(
    "kw",
    [
        {"minimum": "1"},
        {"maximum": True},
        {"minimum": float("inf")},
        {"multiple_of": 0},
        {"multiple_of": -2},
        {"minimum": 10**5000},
    ],
)
def test_invalid_keyword_values(kw: dict) -> None:
    with pytest.raises(SchemaError):
        number_node(**kw)


# ---------------------------------------------------------------------------------------------
# multipleOf


@pytest.mark.parametrize("q", [1, 2, 3, 7, 10, 12, 25, 100, 0.5, 1.5, 2.5])
def test_integer_multiple_of(q: float) -> None:
    g = integer_grammar(multiple_of=q)
    for x in range(-130, 131):
        assert g.matches(str(x)) == (Decimal(x) % Decimal(repr(q)) == 0), (q, x)
    assert g.matches("0.0") and g.matches("-0")


@pytest.mark.parametrize("q", [0.01, 0.5, 0.3, 0.25, 1.5, 3, 10])
def test_number_multiple_of(q: float) -> None:
    g = number_grammar(multiple_of=q)
    qd = Decimal(repr(q))
    for k in range(-30, 31):
        for text in {str(qd * k), str(qd * k + Decimal("0.001")), f"{qd * k:.4f}"}:
            assert g.matches(text) == (Decimal(text) % qd == 0), (q, text)
    assert not g.matches(f"{qd}e0")  # plain decimals only (documented)


def test_multiple_of_with_bounds_and_rule_sharing() -> None:
    rules: dict[str, ir.Node] = {}
    a = integer_node(minimum=-100, maximum=10**12, multiple_of=7, rules=rules)
    count = len(rules)
    b = integer_node(minimum=-100, maximum=10**12, multiple_of=7, rules=rules)
    assert a == b and len(rules) == count  # equal constraints share their rules
    g = grammar(a, rules)
    for x in [-98, -7, 0, 7, 999999999995, 10**12 - 1]:
        assert g.matches(str(x)) == (x % 7 == 0 and -100 <= x <= 10**12), x
    assert not g.matches("1000000000003")  # a multiple of 7 above the maximum


def test_multiple_of_needs_a_rule_table_and_a_bounded_modulus() -> None:
    with pytest.raises(TypeError):
        integer_node(multiple_of=3)
    with pytest.raises(SchemaError) as info:
        integer_node(multiple_of=987654321, rules={})
    assert info.value.keyword == "multipleOf"


def test_power_of_ten_multiples_need_no_rules() -> None:
    node = number_node(minimum=0, maximum=100, multiple_of=0.01)
    g = grammar(node)
    assert g.matches("99.99") and g.matches("0.10") and not g.matches("0.001") and not g.matches("100.01")
    lowered = lower_set_operations(g)
    assert lowered.matches("99.99") and not lowered.matches("0.001")


# ---------------------------------------------------------------------------------------------
# properties

bound_ints = st.one_of(st.none(), st.integers(-(10**6), 10**6))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lo=bound_ints,
    hi=bound_ints,
    exclusive=st.booleans(),
    xs=st.lists(st.integers(-(10**7), 10**7), min_size=1, max_size=15),
)
def test_integer_bounds_property(lo: int | None, hi: int | None, exclusive: bool, xs: list[int]) -> None:
    kw = {("exclusive_minimum" if exclusive else "minimum"): lo, "maximum": hi}
    node = integer_node(allow_empty=True, **kw)  # type: ignore[arg-type]
    g = grammar(node)
    probes = xs + [b + d for b in (lo, hi) if b is not None for d in (-1, 0, 1)]
    for x in probes:
        assert g.matches(json.dumps(x)) == in_bounds(Decimal(x), kw), (kw, x)
        assert g.matches(json.dumps(float(x))) == in_bounds(Decimal(x), kw), (kw, x)


finite_floats = st.floats(allow_nan=False, allow_infinity=False, width=64)
bound_values = st.one_of(
    st.none(),
    finite_floats,
    st.integers(-1000, 1000),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-1000, max_value=1000),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    minimum=bound_values,
    maximum=bound_values,
    ex_min=bound_values,
    ex_max=bound_values,
    xs=st.lists(finite_floats, min_size=1, max_size=10),
)
def test_number_bounds_property(minimum, maximum, ex_min, ex_max, xs: list[float]) -> None:  # type: ignore[no-untyped-def]
    kw = {"minimum": minimum, "maximum": maximum, "exclusive_minimum": ex_min, "exclusive_maximum": ex_max}
    node = number_node(allow_empty=True, **kw)
    g = grammar(node)
    probes = [json.dumps(x) for x in xs]
    for b in (minimum, maximum, ex_min, ex_max):
        if b is not None:
            d = Decimal(repr(b)) if isinstance(b, float) else Decimal(b)
            probes += [str(d), f"{d:e}", f"{d:E}", str(d + Decimal("1e-9")), str(d - Decimal("1e-9")), f"{d:.20f}"]
    for text in probes:
        assert g.matches(text) == expected_number(text, kw), (kw, text)


json_number_texts = st.from_regex(r"-?(0|[1-9][0-9]{0,3})(\.[0-9]{1,4})?([eE][+-]?[0-9]{1,2})?", fullmatch=True)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lo=st.one_of(st.none(), st.decimals(-100, 100, places=2)),
    hi=st.one_of(st.none(), st.decimals(-100, 100, places=2)),
    strict=st.booleans(),
    texts=st.lists(json_number_texts, min_size=5, max_size=20),
)
def test_number_any_spelling_property(lo, hi, strict: bool, texts: list[str]) -> None:  # type: ignore[no-untyped-def]
    kw = {("exclusive_minimum" if strict else "minimum"): lo, "maximum": hi}
    g = grammar(number_node(allow_empty=True, **kw))
    for text in texts:
        assert g.matches(text) == expected_number(text, kw), (kw, text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    q=st.sampled_from([2, 3, 6, 7, 9, 11, 15, 20, 0.2, 0.3, 0.75, 0.05, 4.5]),
    lo=st.one_of(st.none(), st.integers(-50, 50)),
    hi=st.one_of(st.none(), st.integers(-50, 200)),
    integer=st.booleans(),
    texts=st.lists(st.from_regex(r"-?(0|[1-9][0-9]{0,2})(\.[0-9]{1,3})?", fullmatch=True), min_size=5, max_size=25),
)
def test_multiple_of_property(q, lo, hi, integer: bool, texts: list[str]) -> None:  # type: ignore[no-untyped-def]
    assume(lo is None or hi is None or lo <= hi)
    kw = {"minimum": lo, "maximum": hi, "multiple_of": q}
    rules: dict[str, ir.Node] = {}
    build = integer_node if integer else number_node
    g = grammar(build(allow_empty=True, rules=rules, **kw), rules)  # type: ignore[operator]
    qd = Decimal(repr(q)) if isinstance(q, float) else Decimal(q)
    probes = texts + [str(qd * k) for k in range(-5, 6)]
    for text in probes:
        ok = in_bounds(Decimal(text), kw)
        form = INTEGER_FORM if integer else PLAIN
        assert g.matches(text) == (ok and bool(form.fullmatch(text))), (kw, integer, text)


# -- draft-04 integers: a zero fraction is no integer there (MaskBench Github_easy---o24544) ---------------

DRAFT_04 = "http://json-schema.org/draft-04/schema#"


@pytest.mark.parametrize("meta", [DRAFT_04, "http://json-schema.org/draft-03/schema#"])
@pytest.mark.parametrize(
    "extra", [{}, {"minimum": 3, "maximum": 20000}, {"multipleOf": 5}, {"multipleOf": 10}, {"multipleOf": 3}]
)
def test_draft04_integer_has_no_zero_fraction(meta: str, extra: dict) -> None:
    g = Grammar.from_json_schema({"$schema": meta, "type": "integer", **extra})
    assert g.matches("12345") == (12345 % extra.get("multipleOf", 1) == 0)
    for text in ("12345.0", "30.00", "-0.0", "0.0"):
        assert not g.matches(text), text


def test_draft04_integer_agrees_with_jsonschema() -> None:
    import jsonschema

    schema = {"$schema": DRAFT_04, "type": "object", "properties": {"id": {"type": "integer"}}}
    g = Grammar.from_json_schema(schema)
    for text in ('{"id":12345}', '{"id":12345.0}', '{"id":-0}', '{"id":1.50}'):
        expected = jsonschema.Draft4Validator(schema).is_valid(json.loads(text))
        assert g.matches(text) == expected, text


def test_later_drafts_keep_zero_fraction_integers() -> None:
    for meta in ("http://json-schema.org/draft-06/schema#", "http://json-schema.org/draft-07/schema#", None):
        schema: dict = {"type": "integer", "multipleOf": 3}
        if meta:
            schema["$schema"] = meta
        g = Grammar.from_json_schema(schema)
        assert g.matches("12.0") and g.matches("12") and not g.matches("13.0")
