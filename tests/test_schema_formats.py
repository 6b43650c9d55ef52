"""String formats: the JSON-Schema-Test-Suite's verdicts, Python-made values, and random near-misses
checked against independent strict Python checks (tests/format_checks.py)."""

from __future__ import annotations

import ipaddress
import json
import re
from datetime import timedelta, timezone
from functools import cache

import pytest
from format_checks import CHECKS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structgen import Grammar, SchemaError
from structgen.grammar.lowering import lower_set_operations
from structgen.schema.formats import FORMATS, format_node
from structgen.schema.strings import string_node


@cache
def format_grammar(name: str) -> Grammar:
    return Grammar({"root": string_node(format=name)}, "root")


def accepts(name: str, value: str) -> bool:
    verdicts = {format_grammar(name).matches(json.dumps(value, ensure_ascii=ea)) for ea in (True, False)}
    assert len(verdicts) == 1, (name, value)  # the serialisation never changes the verdict
    return verdicts.pop()


def departure(name: str, value: str) -> bool:
    """Valid strings that structgen rejects on purpose (documented in docs/json-schema-scalars.md)."""
    if name in ("hostname", "idn-hostname") and any(label[2:4] == "--" for label in value.split(".")):
        return True  # Punycode A-labels
    if name == "idn-hostname" and not re.sub("[\u3002\uff0e\uff61]", ".", value).isascii():
        return True  # U-labels
    if name == "idn-email" and not value.rpartition("@")[2].isascii():
        return True  # internationalised domain names
    return False


# ---------------------------------------------------------------------------------------------
# JSON-Schema-Test-Suite, optional/format


def suite_cases(corpora) -> list[tuple[str, object, bool, str]]:  # type: ignore[no-untyped-def]
    folder = corpora / "json-schema-test-suite" / "tests" / "draft2020-12" / "optional" / "format"
    cases = []
    for path in sorted(folder.glob("*.json")):
        for group in json.loads(path.read_text(encoding="utf-8")):
            name = group["schema"]["format"]
            for test in group["tests"]:
                cases.append((name, test["data"], test["valid"], test["description"]))
    return cases


def test_json_schema_test_suite_formats(corpora) -> None:  # type: ignore[no-untyped-def]
    checked = departures = 0
    wrong: list[str] = []
    for name, data, valid, description in suite_cases(corpora):
        if not isinstance(data, str):
            continue  # formats only constrain strings; other types are the translator's business
        if name in ("regex", "unknown"):
            with pytest.raises(SchemaError):
                string_node(format=name)
            continue
        got = accepts(name, data)
        checked += 1
        if got == valid:
            continue
        if valid and departure(name, data):
            departures += 1
            continue
        wrong.append(f"{name}: {data!r} expected {valid} ({description})")
    assert not wrong, "\n".join(wrong)
    assert checked > 600 and departures <= 60


def test_suite_invalid_strings_are_never_accepted(corpora) -> None:  # type: ignore[no-untyped-def]
    for name, data, valid, _ in suite_cases(corpora):
        if isinstance(data, str) and not valid and name in FORMATS:
            assert not accepts(name, data), (name, data)


# ---------------------------------------------------------------------------------------------
# registry


def test_unknown_and_unenforceable_formats_are_refused() -> None:
    for name in ["regex", "unknown", "color", ""]:
        with pytest.raises(SchemaError) as info:
            format_node(name, pointer="/a")
        assert info.value.keyword == "format" and info.value.pointer == "/a"
    with pytest.raises(SchemaError):
        format_node(3)  # type: ignore[arg-type]


def test_exact_only_refuses_subsets() -> None:
    for name, info in FORMATS.items():
        if info.exact:
            format_node(name, exact_only=True)
        else:
            with pytest.raises(SchemaError):
                format_node(name, exact_only=True)


def test_format_with_length_lowers_to_plain_rules() -> None:
    g = Grammar({"root": string_node(format="ipv4", max_length=9)}, "root")
    lowered = lower_set_operations(g)
    for s in ["1.2.3.4", "10.20.3.4", "10.20.30.4", "1.2.3", "255.1.1.1"]:
        assert lowered.matches(json.dumps(s)) == g.matches(json.dumps(s)), s


@pytest.mark.slow
def test_hostname_lowers_to_plain_rules() -> None:
    # hostname's 253-character limit is an intersection: about 24,000 DFA states once lowered
    g = format_grammar("hostname")
    lowered = lower_set_operations(g)
    for s in ["example.com", "a" * 63 + ".com", "a" * 64, "-a.com", ".".join(["a" * 63] * 4)]:
        assert lowered.matches(json.dumps(s)) == g.matches(json.dumps(s)), s


# ---------------------------------------------------------------------------------------------
# values Python makes must be accepted

offsets = st.integers(-1439, 1439).map(lambda m: timezone(timedelta(minutes=m)))


@settings(max_examples=200, deadline=None)
@given(d=st.dates())
def test_python_dates(d) -> None:  # type: ignore[no-untyped-def]
    assert accepts("date", d.isoformat())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dt=st.datetimes(timezones=offsets))
def test_python_datetimes(dt) -> None:  # type: ignore[no-untyped-def]
    text = dt.isoformat()
    assert accepts("date-time", text)
    assert accepts("time", text[11:])
    assert accepts("date-time", text.replace("+00:00", "Z"))


@settings(max_examples=200, deadline=None)
@given(ip=st.ip_addresses())
def test_python_ip_addresses(ip) -> None:  # type: ignore[no-untyped-def]
    name = "ipv4" if ip.version == 4 else "ipv6"
    other = "ipv6" if ip.version == 4 else "ipv4"
    assert accepts(name, str(ip)) and accepts(name, ip.exploded)
    assert not accepts(other, str(ip))
    if ip.version == 6:
        assert accepts("ipv6", str(ip).upper())
        if ip.ipv4_mapped is not None:
            assert accepts("ipv6", f"::ffff:{ip.ipv4_mapped}")


@settings(max_examples=100, deadline=None)
@given(u=st.uuids())
def test_python_uuids(u) -> None:  # type: ignore[no-untyped-def]
    assert accepts("uuid", str(u)) and accepts("uuid", str(u).upper())
    assert not accepts("uuid", u.hex)


def test_leap_seconds_exactly_at_2359_utc() -> None:
    for local in list(range(0, 1440, 37)) + [1439, 1438, 0, 59, 60]:
        for offset in list(range(-1439, 1440, 97)) + [0, 1, -1, 1439, -1439, 60]:
            hh, mm = divmod(local, 60)
            sign = "+" if offset >= 0 else "-"
            oh, om = divmod(abs(offset), 60)
            text = f"{hh:02d}:{mm:02d}:60{sign}{oh:02d}:{om:02d}"
            assert accepts("time", text) == ((local - offset) % 1440 == 1439), text


# ---------------------------------------------------------------------------------------------
# random near-misses: the same verdict as the strict Python check

SEEDS = {
    "date": (["2020-02-29", "1900-02-28", "0000-02-29", "2023-12-31"], "0123456789-:T "),
    "time": (["23:59:60Z", "12:30:15.5+05:30", "00:29:60-23:30", "01:00:60+01:01"], "0123456789:.+-Zz"),
    "date-time": (["2020-02-29T23:59:60Z", "1999-12-31t10:00:00.001-02:00"], "0123456789-:.+TZtz"),
    "duration": (["P1Y2M3DT4H5M6S", "PT1M", "P2W", "P1DT2H"], "0123456789PYMDTHSW"),
    "ipv4": (["192.168.0.1", "0.0.0.0", "255.255.255.255", "10.1.20.200"], "0123456789.:"),
    "ipv6": (["::1", "1:2:3:4:5:6:7:8", "::ffff:192.168.0.1", "fe80::a:b", "1::"], "0123456789abcdefABCDEF:."),
    "uuid": (["2eb8aa08-aa98-11ea-b4aa-73b441d16380"], "0123456789abcdefgABCDEF-"),
    "hostname": (["www.example.com", "a-b.c", "xn--a.b", "a" * 63], "abcxyz019-."),
    "idn-hostname": (["www.example.com", "a\u3002b\uff0ec", "a" * 63], "abcxyz019-.\u3002\uff61é"),
    "email": (
        ["joe.bloggs@example.com", '"a b"@x.org', "a@[1.2.3.4]", "a@[IPv6:1::2]", "a!#@b-c.d"],
        'abc09.@"\\ []:-!#IPv6',
    ),
    "idn-email": (["δοκιμή@example.com", '"é"@a.b'], 'aé.@"\\-δ'),
    "uri": (
        ["http://a.b/c?d#e", "urn:x:y", "http://[::1]:80/", "ftp://u:p@h/%20", "http://[v1.x]"],
        "ahtp:/?#[]@%20.-v:é",
    ),
    "uri-reference": (["//a/b", "../c", "?q", "#f", "a/b:c", ""], "abc:/?#[]@%20.-é"),
    "iri": (["http://é.x/π?q=\ue000#ü"], "ahtp:/?#é\ue000%2"),
    "iri-reference": (["π/é", "#ü"], "aπé:/?#\ue000%2"),
    "uri-template": (["http://x/{a}/{+b,c:3}{?d*}", "{%41.b}"], "ab{}+,:*?#.%4'1 "),
    "json-pointer": (["/a~0b/~1/", ""], "/a~01 2"),
    "relative-json-pointer": (["0#", "12/a~1", "0/"], "01/#~a-+"),
}


@st.composite
def near_miss(draw, name: str) -> str:  # type: ignore[no-untyped-def]
    seeds, alphabet = SEEDS[name]
    s = list(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        i = draw(st.integers(0, len(s)))
        c = draw(st.sampled_from(alphabet))
        if op == "insert":
            s.insert(i, c)
        elif s and i < len(s):
            if op == "delete":
                del s[i]
            else:
                s[i] = c
    return "".join(s)


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_near_misses_match_python_checks(name: str) -> None:
    check = CHECKS[name]

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(values=st.lists(near_miss(name), min_size=1, max_size=10))
    def run(values: list[str]) -> None:
        for v in values:
            assert accepts(name, v) == check(v), (name, v)

    run()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(v=st.text(max_size=12), name=st.sampled_from(sorted(CHECKS)))
def test_random_text_matches_python_checks(v: str, name: str) -> None:
    assert accepts(name, v) == CHECKS[name](v), (name, v)


def test_ipv6_in_email_literals_needs_a_gap_of_two_groups() -> None:
    assert accepts("email", "a@[IPv6:1:2:3:4:5:6::8]") is False
    assert accepts("email", "a@[IPv6:1:2:3:4:5::8]")
    assert accepts("email", "a@[IPv6:1:2:3:4:5::1.2.3.4]") is False
    assert accepts("email", "a@[IPv6:1:2:3:4::1.2.3.4]")
    assert accepts("ipv6", "1:2:3:4:5:6::8")
    ipaddress.IPv6Address("1:2:3:4:5:6::8")


@pytest.mark.parametrize("name", sorted(n for n, info in FORMATS.items() if info.self_encoded))
def test_declared_format_facts_hold(name: str) -> None:
    """Formats declared self-encoded (their own JSON encoding) skip the walk that would find that
    out, and the clean-up reads their productivity from their closed mark (tens of ms of walks on
    date-time's first use in a process): the walks, run here with declarations and marks set
    aside, agree, for the node and for each part a quoted string flattens it into."""
    from structgen.grammar import ir
    from structgen.schema import json_escapes, trim

    node = FORMATS[name].build()
    parts = [node, *(node.items if isinstance(node, ir.Seq) else ())]
    saved_encoded, saved_productive = dict(json_escapes._KNOWN_SELF_ENCODED), dict(trim._CLOSED_PRODUCTIVE)
    saved_marks = dict(ir._CLOSED)
    json_escapes._KNOWN_SELF_ENCODED.clear()
    trim._CLOSED_PRODUCTIVE.clear()
    ir._CLOSED.clear()
    try:
        assert json_escapes._self_encoded(node)
        for part in parts:
            assert trim._productive_node(part, set())
    finally:
        json_escapes._KNOWN_SELF_ENCODED.update(saved_encoded)
        trim._CLOSED_PRODUCTIVE.update(saved_productive)
        ir._CLOSED.update(saved_marks)
