"""Differential test of the GLRM regex flavours against glrmask 0.5.0 itself.

Each pattern is compiled by glrmask as ``t s = /PATTERN/FLAGS;`` (or ``b/.../``) over a byte-level
vocabulary and fed one byte per token; its verdict on each string must equal ours. Ours is decided
through Python's ``regex`` on the lowered node, and through ``Grammar.matches`` once the matcher
exists. Strings avoid characters assigned in Unicode 17 (our Unicode data is newer than glrmask's).
"""

from __future__ import annotations

import importlib.util
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from regex_support import node_fullmatch

from structgen import Grammar, RegexError
from structgen.grammar.regex import regex_to_node

glrmask = pytest.importorskip("glrmask", reason="glrmask (the GLRM oracle) is not installed (pip install '.[test]')")

HAVE_MATCHER = importlib.util.find_spec("structgen.grammar.matcher") is not None
_VOCAB = glrmask.Vocab.from_id_to_bytes({i: bytes([i]) for i in range(256)})
_COMPILED: dict[tuple[str, str, bool], object] = {}


def _glrmask_constraint(pattern: str, flags: str, as_bytes: bool) -> object:
    key = (pattern, flags, as_bytes)
    if key not in _COMPILED:
        source = f"glrm 1; start s; t s = {'b' if as_bytes else ''}/{pattern}/{flags};"
        _COMPILED[key] = glrmask.Grammar.from_glrm(source).compile(_VOCAB)
    return _COMPILED[key]


def glrmask_accepts(pattern: str, data: bytes, flags: str = "", as_bytes: bool = False) -> bool:
    state = _glrmask_constraint(pattern, flags, as_bytes).start()  # type: ignore[attr-defined]
    for byte in data:
        # Committing a token outside the mask does not always raise (the state's verdict after it
        # is meaningless), so the mask decides.
        if not state.mask(size=256)[byte]:
            return False
        state.commit_token(byte)
    return bool(state.is_accepting())


def _check(pattern: str, flags: str, as_bytes: bool, samples: list[bytes]) -> None:
    node = regex_to_node(pattern, flavor="glrm-bytes" if as_bytes else "glrm", flags=flags)
    grammar = Grammar({"root": node}, "root") if HAVE_MATCHER else None
    for data in samples:
        expected = glrmask_accepts(pattern, data, flags, as_bytes)
        if as_bytes:
            ours = node_fullmatch(node, data)
        else:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            ours = False if text is None else node_fullmatch(node, text)
        assert ours == expected, (pattern, flags, data, expected)
        if grammar is not None:
            assert grammar.matches(data) == expected, ("matcher", pattern, flags, data, expected)


_TEXT_ALPHABET = [
    "a",
    "b",
    "c",
    "z",
    "A",
    "K",
    "k",
    "\u212a",
    "s",
    "S",
    "\u017f",
    "é",
    "É",
    "ß",
    "\u1e9e",
    "α",
    "Α",
    "\u0342",
    "1",
    "9",
    "\u0660",
    "_",
    "-",
    " ",
    "\t",
    "\n",
    "\r",
    "\x85",
    "\xa0",
    "]",
    "[",
    "&",
    "~",
    "😀",
    "\u200d",
    "/",
    "#",
    "$",
    "\xad",
]


def _text_samples(extra: list[str]) -> list[bytes]:
    singles = _TEXT_ALPHABET + extra
    pairs = ["".join(p) for p in itertools.product(["a", "b", "A", "é", "1", "\n", "k", " "], repeat=2)]
    out = [""] + singles + pairs + extra + ["aaa", "aaaa", "aaaaaa", "abc", "abab", "ab", "aab"]
    encoded = [s.encode("utf-8") for s in out]
    return encoded + [b"\xff", b"\xc3", b"a\x80", b"\xed\xa0\x80"]


GLRM_CASES: list[tuple[str, str, list[str]]] = [
    ("ab|c", "", ["abc"]),
    ("a*+b", "", []),
    ("a**", "", []),
    ("a{2}{3}", "", []),
    ("a?+", "", []),
    ("(ab)+", "", []),
    ("a{2,3}b{0,}", "", ["aabbb"]),
    (".", "", []),
    (".", "s", []),
    ("(?s).\\n", "", []),
    ("\\d\\D", "", ["1a", "\u06601"]),
    ("\\w", "", ["\u0300", "\u200c"]),
    ("\\W", "", []),
    ("\\s", "", ["\u2003", "\x1c", "\ufeff"]),
    ("\\S", "", []),
    ("\\p{Greek}", "", []),
    ("\\p{scx=Greek}", "", []),
    ("\\p{Script_Extensions=Greek}", "", []),
    ("\\pL\\PL", "", ["a1", "1a"]),
    ("\\p{Lu}", "", []),
    ("\\p{is lu}", "", []),
    ("\\p{ lu }", "", []),
    ("\\p{Uppercase_Letter}", "", []),
    ("\\p{gc=Nd}", "", []),
    ("\\p{sc!=Latin}", "", []),
    ("\\p{sc}\\p{lc}", "", ["$a"]),
    ("\\p{cf}", "", []),
    ("\\p{space}", "", []),
    ("\\p{digit}", "", []),
    ("\\p{punct}", "", ["!"]),
    ("\\p{Any}", "", []),
    ("\\p{Assigned}", "", []),
    ("\\p{ascii}", "", ["\x7f", "\x80"]),
    ("\\p{Alphabetic}", "", []),
    ("\\p{White_Space}", "", []),
    ("\\p{Emoji}", "", []),
    ("\\p{Hex_Digit}", "", ["f", "F", "g"]),
    ("[[:alpha:]]", "", []),
    ("[[:^alpha:]]", "", []),
    ("[[:word:][:space:]]", "", []),
    ("[[:punct:]]", "", ["!", "~"]),
    ("[a-z--c]", "", []),
    ("[a-z&&[^c]]", "", []),
    ("[a-z&&b-d--c]", "", ["d"]),
    ("[a-g~~b-h]", "", ["h", "d"]),
    ("[a-z[0-9]]", "", []),
    ("[]a]", "", []),
    ("[^]a]", "", []),
    ("[a-]", "", []),
    ("[-a]", "", []),
    ("[a--b]", "", []),
    ("[a&b~c]", "", []),
    ("[\\]\\[\\-]", "", []),
    ("[^\\n]", "", []),
    ("[\\d\\s]", "", []),
    ("[^\\W_]", "", []),
    ("\\x{1F600}|\\u{e9}|\\x41|\\u00E9|\\U0001F600", "", ["A"]),
    ("(?P<n>a)(?<m>b)", "", []),
    ("\\/\\-\\ \\#\\@\\&\\~", "", ["/- #@&~"]),
    ("\\a\\f\\t\\n\\r\\v", "", ["\x07\x0c\t\n\r\x0b"]),
    ("a b # comment\nc", "x", ["abc"]),
    ("[a b]", "x", []),
    ("[a#b]\n]", "x", ["#"]),
    ("a\\ b", "x", ["a b"]),
    ("a *", "x", []),
    ("(?x) a { 1 , 2 }", "", []),
    ("(?i)straße", "", ["STRAẞE", "straße", "STRASSE"]),
    ("k", "i", []),
    ("s", "i", []),
    ("é", "i", []),
    ("(?i)[a-c]", "", ["B"]),
    ("(?i)[^a]", "", []),
    ("(?i)\\p{Lu}", "", []),
    ("(?i)\\P{Lu}", "", []),
    ("(?i)[[:upper:]]", "", []),
    ("(?i)[[:^upper:]]", "", []),
    ("(?i)[^[:upper:]]", "", []),
    ("(?i)[k-l--k]", "", ["l", "L"]),
    ("a(?i)b|c", "", ["aB", "C"]),
    ("(a(?i)b)c", "", ["aBc", "aBC"]),
    ("(?i:a)b", "", ["Ab", "AB"]),
    ("(?-i:a)b", "i", ["aB", "AB"]),
    ("(?i)σ", "", ["Σ", "ς"]),
    ("(?u)é", "", []),
    ("()|a", "", []),
    ("(?:)", "", []),
    ("[--a]", "", []),
    ("[---a]", "", []),
    ("[^--a]", "", []),
    ("[]--a]", "", []),
    ("[- -a]", "x", []),
    ("[--a--b]", "", []),
    ("[ ^a]", "x", []),
    ("[ ] a]", "x", []),
    ("[&&a]", "", []),
    ("[a&&]", "", []),
    ("[~~a]", "", []),
    ("[[:foo:]]", "", [":", "f", "o"]),
    ("[[:alpha:]-z]", "", []),
    ("[\\w&&\\p{Greek}]", "", []),
    ("x{2} {3}", "x", ["xxxxxx"]),
    ("(?x)a(?-x) b", "", ["a b"]),
    ("\\p{ Greek }\\p{sc = Greek}", "", ["αβ"]),
    ("\\pZ", "", ["\u2028", "\u3000"]),
    ("a{0}b{0,0}", "", []),
    ("(?i)ǅ", "", ["ǆ", "Ǆ"]),
    ("[^\\x00-\\x{10FFFF}]|x", "", ["x"]),
]


@pytest.mark.parametrize("pattern, flags, extra", GLRM_CASES)
def test_glrm_agrees_with_glrmask(pattern: str, flags: str, extra: list[str]) -> None:
    _check(pattern, flags, False, _text_samples(extra))


_BYTE_SAMPLES = [
    b"",
    b"a",
    b"A",
    b"b",
    b"k",
    b"K",
    b"1",
    b"_",
    b" ",
    b"\n",
    b"\t",
    b"\x00",
    b"\x7f",
    b"\x80",
    b"\xff",
    b"\xc3\xa9",
    b"aa",
    b"ab",
    b"a\xff",
    b"\xff\xff",
    b"\xe2\x84\xaa",
]

GLRM_BYTE_CASES: list[tuple[str, str]] = [
    ("\\xff", ""),
    ("\\x{41}", ""),
    (".", ""),
    (".", "s"),
    ("[\\x80-\\xff]+", ""),
    ("[^a]", ""),
    ("\\d|\\w|\\s", ""),
    ("\\D", ""),
    ("\\W", ""),
    ("[[:alpha:]]", "i"),
    ("ab", "i"),
    ("(?i)k", ""),
    ("[a-z&&[^c]]", ""),
    ("a*+", ""),
]


@pytest.mark.parametrize("pattern, flags", GLRM_BYTE_CASES)
def test_glrm_bytes_agree_with_glrmask(pattern: str, flags: str) -> None:
    _check(pattern, flags, True, _BYTE_SAMPLES)


@pytest.mark.parametrize(
    "pattern, flags, as_bytes",
    [
        ("^a", "", False),
        ("a$", "", False),
        ("\\ba", "", False),
        ("a\\z", "", False),
        ("a(?=b)", "", False),
        ("(a)\\1", "", False),
        ("a*?", "", False),
        ("a{,3}", "", False),
        ("(?>a)", "", False),
        ("\\Qa\\E", "", False),
        ("(?m)a", "", False),
        ("(?-u)a", "", False),
        ("(?i-i)a", "", False),
        ("a{", "", False),
        ("\\x{D800}", "", False),
        ("[\\d-z]", "", False),
        ("\\p{^Greek}", "", False),
        ("\\cA", "", False),
        ("\\p{ is lu }", "", False),
        ("\\e", "", False),
        ("\\0", "", False),
        ("é", "", True),
        ("\\u00e9", "", True),
        ("a", "u", True),
        ("[\\b]", "", False),
        ("(?i)*", "", False),
        ("(?P<n>a)(?P<n>b)", "", False),
        ("[a-&&b]", "", False),
        ("[[]]", "", False),
        ("[[:alpha:]", "", False),
    ],
)
def test_both_refuse(pattern: str, flags: str, as_bytes: bool) -> None:
    with pytest.raises(ValueError):
        _glrmask_constraint(pattern, flags, as_bytes)
    with pytest.raises(RegexError):
        regex_to_node(pattern, flavor="glrm-bytes" if as_bytes else "glrm", flags=flags)


# ---------------------------------------------------------------------------------------------
# Random patterns

_LEAVES = [
    "a",
    "b",
    "k",
    "é",
    "ß",
    "σ",
    ".",
    "\\d",
    "\\w",
    "\\s",
    "\\D",
    "\\W",
    "[a-c]",
    "[^a]",
    "[[:alpha:]]",
    "[a-z--c]",
    "[a-z&&[^b]]",
    "\\p{Greek}",
    "\\pL",
    "\\p{Lu}",
    "\\P{Lu}",
    "\\x{e9}",
    "(?i:k)",
    "(?-i:a)",
    "[k-z]",
    "[^[:upper:]]",
]
_QUANTIFIERS = ["*", "+", "?", "{2}", "{1,}", "{0,2}", "*+", "?+", "{1,2}{2}"]


def _glrm_patterns() -> st.SearchStrategy[str]:
    def extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.lists(children, min_size=2, max_size=3).map("".join),
            st.lists(children, min_size=2, max_size=3).map(lambda xs: "(?:" + "|".join(xs) + ")"),
            st.tuples(children, st.sampled_from(["(", "(?:", "(?P<g>", "(?i:", "(?s:"])).map(
                lambda t: t[1] + t[0] + ")"
            ),
            st.tuples(children, st.sampled_from(_QUANTIFIERS)).map(lambda t: "(?:" + t[0] + ")" + t[1]),
        )

    return st.recursive(st.sampled_from(_LEAVES), extend, max_leaves=6)


_RANDOM_ALPHABET = [
    "a",
    "b",
    "c",
    "k",
    "K",
    "\u212a",
    "é",
    "É",
    "ß",
    "\u1e9e",
    "σ",
    "Σ",
    "ς",
    "α",
    "\n",
    "1",
    "\u0660",
    "_",
    " ",
    "s",
    "S",
    "\u017f",
    "Z",
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pattern=_glrm_patterns(),
    flags=st.sampled_from(["", "i", "s", "is"]),
    texts=st.lists(st.text(alphabet=st.sampled_from(_RANDOM_ALPHABET), max_size=5), min_size=1, max_size=8),
)
def test_random_glrm_patterns_agree_with_glrmask(pattern: str, flags: str, texts: list[str]) -> None:
    try:
        _glrmask_constraint(pattern, flags, False)
    except ValueError:
        with pytest.raises(RegexError):
            regex_to_node(pattern, flavor="glrm", flags=flags)
        return
    _check(pattern, flags, False, [t.encode("utf-8") for t in texts])
