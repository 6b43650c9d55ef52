"""Regex reader (``structgen.grammar.regex``): each construct, each refusal, limits, and properties.

Languages are decided two ways: through Python's ``regex`` package on a spelling of the lowered
node (``regex_support``, always available), and through the byte-level matcher
``Grammar.matches`` (once ``structgen.grammar.matcher`` exists).
"""

from __future__ import annotations

import importlib.util
from typing import Callable

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from regex_support import node_fullmatch

from structgen import Grammar, GrammarLimits, LimitError, RegexError
from structgen.grammar import ir
from structgen.grammar.regex import regex_to_node
from structgen.grammar.regex_ast import postorder
from structgen.grammar.regex_parse import parse_regex

HAVE_MATCHER = importlib.util.find_spec("structgen.grammar.matcher") is not None

Decide = Callable[[ir.Node, "str | bytes"], bool]


def _via_matcher(node: ir.Node, text: str | bytes) -> bool:
    return Grammar({"root": node}, "root").matches(text)


@pytest.fixture(params=["regex-oracle", "matcher"])
def decide(request: pytest.FixtureRequest) -> Decide:
    if request.param == "matcher":
        return _via_matcher
    return node_fullmatch


def full(decide: Decide, pattern: str, text: str | bytes, **kw: object) -> bool:
    return decide(regex_to_node(pattern, search=False, **kw), text)  # type: ignore[arg-type]


def found(decide: Decide, pattern: str, text: str) -> bool:
    return decide(regex_to_node(pattern), text)


def glrm(decide: Decide, pattern: str, text: str | bytes, flags: str = "", flavor: str = "glrm") -> bool:
    return decide(regex_to_node(pattern, flavor=flavor, flags=flags), text)


# ---------------------------------------------------------------------------------------------
# ECMA: constructs


@pytest.mark.parametrize(
    "pattern, yes, no",
    [
        ("abc", ["abc"], ["ab", "abcd", "ABC"]),
        ("a|bc|", ["a", "bc", ""], ["b", "abc"]),
        ("(a)(?:b)(?<name>c)", ["abc"], ["ab"]),
        ("a*", ["", "aaa"], ["b"]),
        ("a+", ["a", "aa"], [""]),
        ("a?", ["", "a"], ["aa"]),
        ("a{2}", ["aa"], ["a", "aaa"]),
        ("a{2,}", ["aa", "aaaa"], ["a"]),
        ("a{1,3}", ["a", "aaa"], ["", "aaaa"]),
        ("a*?b+?c??d{1,2}?", ["bd", "aabbcdd"], ["abc"]),
        ("\\t\\n\\v\\f\\r\\0", ["\t\n\x0b\x0c\r\x00"], []),
        ("\\x41\\u00e9\\u{1F600}\\uD83D\\uDE00", ["Aé😀😀"], []),
        ("\\cJ\\cj", ["\n\n"], []),
        ("\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\\\/\\-", [".*+?()[]{}|^$\\/-"], []),
        (".", ["a", "é", "😀", "\t"], ["\n", "\r", "\u2028", "\u2029", "", "ab"]),
        ("[abc]", ["a", "c"], ["d", ""]),
        ("[^abc]", ["d", "\n", "😀"], ["a"]),
        ("[a-cx-z]", ["b", "y"], ["d"]),
        ("[\\d_]", ["5", "_"], ["a"]),
        ("[\\w-]", ["-", "a"], ["é"]),
        ("[a-]", ["a", "-"], ["b"]),
        ("[\\b]", ["\x08"], ["b"]),
        ("[\\]\\\\]", ["]", "\\"], ["a"]),
        ("[]", [], ["", "a", "]"]),
        ("[^]", ["a", "\n"], ["", "ab"]),
        ("[😀-😂]", ["😁"], ["a"]),
        ("\\d", [str(d) for d in range(10)], ["a", "\u0660", "\u07c0"]),
        ("\\D", ["a", "\u0660"], ["5"]),
        ("\\w", ["a", "Z", "0", "_"], ["é", "-", "\u212a"]),
        ("\\W", ["é", "-"], ["a"]),
        (
            "\\s",
            [" ", "\t", "\n", "\x0b", "\x0c", "\r", "\xa0", "\ufeff", "\u2028", "\u2029", "\u2003", "\u3000"],
            ["\x1c", "\x85", "\u200b", "\u180e", "a"],
        ),
        ("\\S", ["a", "\x85", "\u200b"], [" ", "\ufeff"]),
        ("\\p{L}", ["a", "é", "π"], ["1", "-"]),
        ("\\p{Letter}+", ["Hello", "π"], ["123"]),
        ("\\P{L}", ["1"], ["a"]),
        ("\\p{Lu}", ["A", "É"], ["a"]),
        ("\\p{digit}+", ["42", "\u09ea\u09e8"], ["-%#"]),
        ("\\p{Script=Greek}", ["α"], ["a"]),
        ("\\p{sc=Grek}", ["α"], ["a"]),
        ("\\p{scx=Greek}", ["\u0342"], ["a"]),
        ("\\p{General_Category=Nd}", ["7"], ["a"]),
        ("\\p{White_Space}", [" "], ["a"]),
        ("\\p{Any}", ["a", "\U0010ffff"], [""]),
        ("\\p{ASCII}", ["\x7f"], ["\x80"]),
        ("[\\p{Lu}\\d]", ["A", "1"], ["a"]),
        ("\\uD800", [], ["", "a"]),
        ("a{x}", ["a{x}"], ["a"]),
        ("a}]", ["a}]"], []),
        ("\\@\\#\\ \\'\\\"", ["@# '\""], []),
    ],
)
def test_ecma_constructs(decide: Decide, pattern: str, yes: list[str], no: list[str]) -> None:
    for text in yes:
        assert full(decide, pattern, text), (pattern, text)
    for text in no:
        assert not full(decide, pattern, text), (pattern, text)


@pytest.mark.parametrize(
    "pattern, yes, no",
    [
        ("abc", ["abc", "xxabcyy", "abcabc"], ["ab", "", "acb"]),
        ("a+", ["xxaayy"], ["xyz"]),
        ("^abc", ["abc", "abcd"], ["xabc"]),
        ("abc$", ["abc", "xabc"], ["abcx", "abc\n"]),
        ("^abc$", ["abc"], ["abc\n", "xabc", "abcx"]),
        ("^a|^b$", ["a", "ax", "b"], ["xa", "bx", "xb"]),
        ("^(a|b)$", ["a", "b"], ["ab", "xa"]),
        ("(^a)", ["ax"], ["xa"]),
        ("(^a|b)c", ["acx", "xbcx"], ["xac"]),
        ("a(b$|c)", ["xab", "xacx"], ["xabx"]),
        ("^$", [""], ["a"]),
        ("$^", [""], ["a"]),
        ("^^a$$", ["a"], ["aa"]),
        ("(?:^)a", ["ab"], ["ba"]),
        ("", ["", "anything"], []),
        ("[]", [], ["", "a"]),
        ("^\\p{Letter}+$", ["Hello", "π"], ["123", ""]),
        ("(^a)*b", ["b", "xb", "ab"], ["a", "xa"]),
        ("^([^,]+(,|$)){3,}$", ["a,b,c", "a,b,c,", "a,b,c,d"], ["a,b", "a,b,", ",a,b,c"]),
        ("^(\\/?(\\.{2}|[a-z0-9\\-]*)($|\\/))*$", ["", "a/b", "/a/../b", "a/b/"], ["A", "a//B"]),
        ("(a|$)+", ["", "b", "ba"], []),
        ("(?:^|,)x", ["x", "a,x"], ["ax"]),
        ("(?:^|^)(?:$|$)", [""], ["a"]),
        ("(?:(?:^)+a)", ["ab"], ["ba"]),
    ],
)
def test_ecma_search_semantics(decide: Decide, pattern: str, yes: list[str], no: list[str]) -> None:
    for text in yes:
        assert found(decide, pattern, text), (pattern, text)
    for text in no:
        assert not found(decide, pattern, text), (pattern, text)


def test_search_true_is_search_none() -> None:
    assert regex_to_node("a", search=True) == regex_to_node("a")
    assert regex_to_node("^a$", search=False) == regex_to_node("a", search=False)


def test_full_match_ignores_anchors_at_the_ends(decide: Decide) -> None:
    assert full(decide, "^a|b$", "a") and full(decide, "^a|b$", "b")
    assert not full(decide, "^a|b$", "ab")


def test_counts_stay_symbolic() -> None:
    node = regex_to_node("a{0,100000}", search=False)
    assert node == ir.Repeat(ir.lit("a"), 0, 100000)
    assert regex_to_node("(?:ab){3,}", search=False) == ir.Repeat(ir.lit("ab"), 3, None)


def test_lazy_quantifiers_mean_the_same_language() -> None:
    for greedy, lazy in [("a*", "a*?"), ("a+", "a+?"), ("a?", "a??"), ("a{2,5}", "a{2,5}?")]:
        assert regex_to_node(greedy) == regex_to_node(lazy)


def test_literals_merge_and_classes_are_normalised() -> None:
    assert regex_to_node("abc", search=False) == ir.lit("abc")
    assert regex_to_node("[cba]", search=False) == ir.CharClass(((0x61, 0x63),))
    assert regex_to_node("[^a]", search=False) == ir.CharClass(((0x61, 0x61),), negated=True)
    assert regex_to_node("[^]", search=False) == ir.ANY_CHAR
    assert regex_to_node("[]", search=False) == ir.NOTHING
    assert regex_to_node("é", search=False) == ir.Literal("é".encode())


def test_named_and_plain_groups_only_group() -> None:
    assert regex_to_node("(?<x>ab)(cd)(?:ef)", search=False) == ir.lit("abcdef")


# ---------------------------------------------------------------------------------------------
# ECMA: refusals


@pytest.mark.parametrize(
    "pattern, fragment",
    [
        ("a(?=b)", "lookahead"),
        ("a(?!b)", "lookahead"),
        ("(?<=a)b", "lookbehind"),
        ("(?<!a)b", "lookbehind"),
        ("(a)\\1", "backreference"),
        ("(?<n>a)\\k<n>", "backreference"),
        ("\\bword", "word boundary"),
        ("a\\B", "word boundary"),
        ("\\a", "unknown escape"),
        ("\\e", "unknown escape"),
        ("\\z", "unknown escape"),
        ("\\Z", "unknown escape"),
        ("\\A", "unknown escape"),
        ("\\01", "octal"),
        ("[\\1]", "backreference"),
        ("\\c1", "\\c must be followed"),
        ("\\x4", "hexadecimal"),
        ("\\u12", "hexadecimal"),
        ("\\u{110000}", "U+10FFFF"),
        ("\\p{Foo}", "unknown Unicode property"),
        ("\\pL", "must be followed by {name}"),
        ("\\p{Block=Basic_Latin}", "unsupported Unicode property"),
        ("\\p{gc=Foo}", "General_Category"),
        ("\\p{Script=Nope}", "unknown script"),
        ("(?i:a)", "not supported in ECMA-262"),
        ("(?P<n>a)", "Python-style"),
        ("(?#c)", "comment"),
        ("(?>a)", "atomic"),
        ("a**", "another quantifier"),
        ("a*+", "another quantifier"),
        ("a{2}{3}", "another quantifier"),
        ("*a", "nothing to repeat"),
        ("a|*", "nothing to repeat"),
        ("(*)", "nothing to repeat"),
        ("{2}", "nothing to repeat"),
        ("^*", "anchor"),
        ("a{,3}", "{,n}"),
        ("a{1,2", "incomplete"),
        ("a{3,1}", "out of order"),
        ("[b-a]", "out of order"),
        ("[\\d-z]", "range bound"),
        ("[a-\\w]", "range bound"),
        ("(a", "unclosed group"),
        ("a)", "unmatched"),
        ("[a", "unclosed character class"),
        ("a\\", "lone backslash"),
        ("\\é", "unknown escape"),
        ("a^b", "'^'"),
        ("a$b", "'$'"),
        ("a(^b)", "'^'"),
        ("(a$)b", "'$'"),
        ("(^a$)*", "both '^' and '$'"),
        ("(?:^a|b$)+", "both '^' and '$'"),
        ("(?:^a)*b(?:c$)*x", "'$'"),
        ("(a$b?)*", "'$'"),
        ("x(^|y)", "'^'"),
    ],
)
def test_ecma_refusals(pattern: str, fragment: str) -> None:
    with pytest.raises(RegexError) as info:
        regex_to_node(pattern)
    assert fragment in str(info.value)
    assert info.value.pattern == pattern
    assert info.value.position is not None and 0 <= info.value.position <= len(pattern)


def test_refusal_positions() -> None:
    with pytest.raises(RegexError) as info:
        regex_to_node("abc(?=d)")
    assert info.value.position == 3
    with pytest.raises(RegexError) as info:
        regex_to_node("ab$c")
    assert info.value.position == 2


def test_ecma_flags_refused() -> None:
    with pytest.raises(RegexError):
        regex_to_node("a", flags="i")
    regex_to_node("a", flags="u")


def test_unknown_flavor() -> None:
    with pytest.raises(RegexError):
        regex_to_node("a", flavor="pcre")


# ---------------------------------------------------------------------------------------------
# Limits and hostile input


def test_repeat_limit() -> None:
    with pytest.raises(LimitError) as info:
        regex_to_node("a{2000000}")
    assert info.value.limit == "max_repeat"
    with pytest.raises(LimitError):
        regex_to_node("a{1," + "9" * 5000 + "}")
    small = GrammarLimits(max_repeat=10)
    with pytest.raises(LimitError):
        regex_to_node("a{11}", limits=small)
    regex_to_node("a{10}", limits=small)


@pytest.mark.parametrize("flavor", ["ecma", "glrm", "glrm-bytes"])
def test_deep_nesting_is_a_limit_error_not_recursion(flavor: str) -> None:
    with pytest.raises(LimitError) as info:
        regex_to_node("(" * 10_000 + "a" + ")" * 10_000, flavor=flavor)
    assert info.value.limit == "max_nesting"
    with pytest.raises((LimitError, RegexError)):
        regex_to_node("(" * 10_000, flavor=flavor)


def test_deep_rust_classes_are_a_limit_error() -> None:
    with pytest.raises(LimitError):
        regex_to_node("[" * 10_000 + "a" + "]" * 10_000, flavor="glrm")


def test_nesting_within_the_limit_works(decide: Decide) -> None:
    depth = 50
    pattern = "(?:" * depth + "a" + ")" * depth
    assert full(decide, pattern, "a")
    assert len(postorder(parse_regex("(" * 150 + ")" * 150))) >= 1


def test_long_patterns_are_read() -> None:
    big = "|".join(f"w{i}" for i in range(20_000))
    node = regex_to_node(big, search=False)
    assert isinstance(node, ir.Alt) and len(node.items) == 20_000
    assert regex_to_node("a" * 100_000, search=False) == ir.lit("a" * 100_000)


def test_pattern_size_limit() -> None:
    with pytest.raises(LimitError):
        regex_to_node("a" * 100, limits=GrammarLimits(max_source_bytes=50))


# ---------------------------------------------------------------------------------------------
# GLRM (Rust regex forms)


@pytest.mark.parametrize(
    "pattern, flags, yes, no",
    [
        ("ab|c", "", ["ab", "c"], ["abc", ""]),
        ("a*+b", "", ["b", "aab"], ["a"]),
        ("a{2}{3}", "", ["aaaaaa"], ["aa"]),
        (".", "", ["a", "\r", "😀"], ["\n"]),
        (".", "s", ["\n"], []),
        ("(?s).", "", ["\n"], []),
        ("(?s:.)\\n", "", ["\n\n"], []),
        ("\\d", "", ["5", "\u0660", "\u09ea"], ["a"]),
        ("\\w", "", ["a", "é", "_", "\u0300", "\u200d"], ["-", " "]),
        ("\\s", "", [" ", "\x85", "\u2003"], ["a", "\ufeff", "\u200b", "\x1c"]),
        ("\\p{Greek}", "", ["α"], ["a", "\u0342"]),
        ("\\p{scx=Greek}", "", ["\u0342"], ["a"]),
        ("\\pL\\p{Lu}\\PL", "", ["aB1"], ["aB2x"]),
        ("\\p{is lu}\\p{ Lu }", "", ["AB"], ["a"]),
        ("\\p{sc!=Greek}", "", ["a"], ["α"]),
        ("\\p{sc}\\p{lc}\\p{cf}", "", ["$a\xad"], []),
        ("[[:alpha:]]+", "", ["abC"], ["é", "1"]),
        ("[[:^digit:]x]", "", ["a", "x"], ["1"]),
        ("[a-z--c]", "", ["a", "d"], ["c"]),
        ("[a-z&&[^c]]", "", ["b"], ["c", "1"]),
        ("[a-g~~b-h]", "", ["a", "h"], ["c"]),
        ("[a-z[0-9]]", "", ["5", "q"], ["-"]),
        ("[]a]", "", ["]", "a"], ["b"]),
        ("[^]a]", "", ["b"], ["]", "a"]),
        ("[a-]", "", ["-"], ["b"]),
        ("\\x{1F600}\\u{e9}\\u00e9\\U0001F600\\x41", "", ["😀éé😀A"], []),
        ("(?P<n>a)(?<m>b)", "", ["ab"], []),
        ("\\/\\-\\ \\#\\@", "", ["/- #@"], []),
        ("\\a\\f\\t\\n\\r\\v", "", ["\x07\x0c\t\n\r\x0b"], []),
        ("a b # comment\nc", "x", ["abc"], ["a b"]),
        ("[a b]", "x", ["a", "b"], [" "]),
        ("a\\ b", "x", ["a b"], []),
        ("a # a comment up to the end", "x", ["a"], ["a "]),
        ("[--a]", "", ["-", "a"], ["b"]),
        ("[]--a]", "", ["]"], ["-", "a"]),
        ("(?x) a { 1 , 2 }", "", ["a", "aa"], ["aaa"]),
        ("(?i)straße", "", ["STRAẞE", "straße"], ["STRASSE"]),
        ("k", "i", ["K", "\u212a"], []),
        ("(?i)[a-c]", "", ["B"], ["d"]),
        ("(?i)[^a]", "", ["b"], ["a", "A"]),
        ("(?i)\\p{Lu}", "", ["a"], ["1"]),
        ("(?i)\\P{Lu}", "", ["1"], ["a"]),
        ("(?i)[[:upper:]]", "", ["a", "\u212a"], ["1"]),
        ("(?i)[[:^upper:]]", "", ["1"], ["a", "A"]),
        ("a(?i)b|c", "", ["aB", "C"], ["AB"]),
        ("(a(?i)b)c", "", ["aBc"], ["aBC"]),
        ("(?i:a)b", "", ["Ab"], ["AB"]),
        ("(?-i:a)b", "i", ["aB"], ["AB"]),
        ("(?u)é", "", ["é"], []),
        ("", "", [""], ["a"]),
        ("()|a", "", ["", "a"], []),
    ],
)
def test_glrm_constructs(decide: Decide, pattern: str, flags: str, yes: list[str], no: list[str]) -> None:
    for text in yes:
        assert glrm(decide, pattern, text, flags), (pattern, text)
    for text in no:
        assert not glrm(decide, pattern, text, flags), (pattern, text)


@pytest.mark.parametrize(
    "pattern, flags, yes, no",
    [
        ("\\xff", "", [b"\xff"], [b"\xc3\xbf"]),
        (".", "", [b"a", b"\xff"], [b"\n", b"\xc3\xbf"]),
        (".", "s", [b"\n"], []),
        ("[\\x80-\\xff]+", "", [b"\x80\xc3"], [b"a"]),
        ("[^a]", "", [b"\xff", b"b"], [b"a"]),
        ("\\d\\w\\s", "", [b"1_ "], [b"1\xc3\xa9 "]),
        ("[[:alpha:]]", "i", [b"a"], [b"1"]),
        ("ab", "i", [b"AB", b"aB"], [b"ac"]),
        ("(?i)k", "", [b"K", b"k"], ["\u212a".encode()]),
        ("\\x{41}", "", [b"A"], []),
    ],
)
def test_glrm_bytes_constructs(decide: Decide, pattern: str, flags: str, yes: list[bytes], no: list[bytes]) -> None:
    for data in yes:
        assert glrm(decide, pattern, data, flags, flavor="glrm-bytes"), (pattern, data)
    for data in no:
        assert not glrm(decide, pattern, data, flags, flavor="glrm-bytes"), (pattern, data)


def test_glrm_bytes_nodes() -> None:
    assert regex_to_node("\\xff", flavor="glrm-bytes") == ir.Literal(b"\xff")
    assert regex_to_node(".", flavor="glrm-bytes", flags="s") == ir.ANY_BYTE
    assert regex_to_node("[^a]", flavor="glrm-bytes") == ir.ByteClass(((0x61, 0x61),), negated=True)
    assert regex_to_node("(?s).", flavor="glrm") == ir.ANY_CHAR


@pytest.mark.parametrize(
    "pattern, flags, flavor, fragment",
    [
        ("^a", "", "glrm", "anchors"),
        ("a$", "", "glrm", "anchors"),
        ("\\ba", "", "glrm", "assertions"),
        ("a\\z", "", "glrm", "assertions"),
        ("\\Aa", "", "glrm", "assertions"),
        ("\\<a\\>", "", "glrm", "assertions"),
        ("[\\b]", "", "glrm", "assertions"),
        ("a(?=b)", "", "glrm", "lookahead"),
        ("(?<!a)b", "", "glrm", "lookbehind"),
        ("(a)\\1", "", "glrm", "backreference"),
        ("\\0", "", "glrm", "backreference"),
        ("(?P<n>a)(?P=n)", "", "glrm", "backreference"),
        ("a*?", "", "glrm", "lazy"),
        ("a+?", "", "glrm", "lazy"),
        ("a??", "", "glrm", "lazy"),
        ("a{2,3}?", "", "glrm", "lazy"),
        ("a{,3}", "", "glrm", "{,n}"),
        ("a{", "", "glrm", "counted repetition"),
        ("a{x}", "", "glrm", "counted repetition"),
        ("(?>a)", "", "glrm", "atomic"),
        ("(?#c)a", "", "glrm", "comment"),
        ("\\Qa\\E", "", "glrm", "unknown escape"),
        ("\\e", "", "glrm", "unknown escape"),
        ("\\cA", "", "glrm", "unknown escape"),
        ("\\é", "", "glrm", "unknown escape"),
        ("(?m)a", "", "glrm", "inline flag 'm'"),
        ("(?U)a", "", "glrm", "inline flag 'U'"),
        ("(?R)a", "", "glrm", "inline flag 'R'"),
        ("(?-u)a", "", "glrm", "alphabet"),
        ("(?i-i)a", "", "glrm", "duplicate flag"),
        ("(?i-)a", "", "glrm", "dangling"),
        ("(?)a", "", "glrm", "empty flag group"),
        ("(?q)a", "", "glrm", "unknown inline flag"),
        ("(?i)*", "", "glrm", "nothing to repeat"),
        ("a(?i)*", "", "glrm", "nothing to repeat"),
        ("a", "m", "glrm", "unsupported regex flag"),
        ("\\p{^Greek}", "", "glrm", "\\P{...}"),
        ("\\p{L&}", "", "glrm", "unknown or unsupported Unicode property"),
        ("\\p{Age=3.0}", "", "glrm", "Age"),
        ("\\p{ is lu }", "", "glrm", "unknown or unsupported Unicode property"),
        ("\\p{WB=ALetter}", "", "glrm", "Word_Break"),
        ("\\x{D800}", "", "glrm", "scalar"),
        ("[\\d-z]", "", "glrm", "range boundary"),
        ("[z-a]", "", "glrm", "out of order"),
        ("é", "", "glrm-bytes", "non-ASCII"),
        ("[é]", "", "glrm-bytes", "non-ASCII"),
        ("\\u00e9", "", "glrm-bytes", "Unicode escapes"),
        ("\\x{100}", "", "glrm-bytes", "at most \\xFF"),
        ("\\pL", "", "glrm-bytes", "\\p"),
        ("a", "u", "glrm-bytes", "'u'"),
        ("(?u)a", "", "glrm-bytes", "alphabet"),
    ],
)
def test_glrm_refusals(pattern: str, flags: str, flavor: str, fragment: str) -> None:
    with pytest.raises(RegexError) as info:
        regex_to_node(pattern, flavor=flavor, flags=flags)
    assert fragment in str(info.value)


def test_glrm_ignores_search() -> None:
    assert regex_to_node("ab", flavor="glrm", search=None) == ir.lit("ab")


def test_grammar_from_regex() -> None:
    g = Grammar.from_regex("^a+$")
    assert g.start == "root"
    assert g.rules["root"] == ir.Repeat(ir.lit("a"), 1, None)
    assert Grammar.from_regex("k", flavor="glrm", flags="i").rules["root"] == ir.CharClass(
        ((0x4B, 0x4B), (0x6B, 0x6B), (0x212A, 0x212A))
    )
    assert Grammar.from_regex("\\xff", flavor="glrm-bytes").rules["root"] == ir.Literal(b"\xff")


# ---------------------------------------------------------------------------------------------
# Property tests: random ECMA patterns against Python's regex package

# ECMA spelling -> Python `regex` spelling with the same meaning.
_SPACE_PY = "[\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]"
_LEAVES = [
    ("a", "a"),
    ("b", "b"),
    ("é", "é"),
    ("😀", "😀"),
    ("\\.", "\\."),
    ("\\-", "\\-"),
    ("\\/", "/"),
    ("\\n", "\\n"),
    (".", "[^\\n\\r\\u2028\\u2029]"),
    ("\\d", "[0-9]"),
    ("\\D", "[^0-9]"),
    ("\\w", "[A-Za-z0-9_]"),
    ("\\W", "[^A-Za-z0-9_]"),
    ("\\s", _SPACE_PY),
    ("\\S", _SPACE_PY.replace("[", "[^", 1)),
    ("[ab]", "[ab]"),
    ("[^a]", "[^a]"),
    ("[a-c]", "[a-c]"),
    ("[\\w-]", "[A-Za-z0-9_\\-]"),
    ("[^\\d\\s]", "[^0-9\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff]"),
    ("\\x61", "a"),
    ("\\u00e9", "é"),
    ("\\u{1F600}", "😀"),
    ("\\uD83D\\uDE00", "😀"),
    ("\\p{L}", "\\p{L}"),
    ("\\P{Ll}", "\\P{Ll}"),
    ("\\p{Script=Greek}", "\\p{Script=Greek}"),
    ("[]", "(?!)"),
    ("[^]", "(?s:.)"),
]
_ALPHABET = [
    "a",
    "b",
    "c",
    "é",
    "😀",
    "-",
    ".",
    "/",
    "\n",
    "\r",
    " ",
    "0",
    "_",
    "A",
    "α",
    "\u2028",
    "\xa0",
    "\ufeff",
    "Π",
]

_QUANTIFIERS = ["*", "+", "?", "{2}", "{1,}", "{0,2}", "{1,3}", "*?", "+?", "??", "{0,1}?"]


def _patterns() -> st.SearchStrategy[tuple[str, str]]:
    leaves = st.sampled_from(_LEAVES)

    def extend(children: st.SearchStrategy[tuple[str, str]]) -> st.SearchStrategy[tuple[str, str]]:
        concat = st.lists(children, min_size=2, max_size=3).map(
            lambda xs: ("".join(x[0] for x in xs), "".join(x[1] for x in xs))
        )
        alternation = st.lists(children, min_size=2, max_size=3).map(
            lambda xs: ("(?:" + "|".join(x[0] for x in xs) + ")", "(?:" + "|".join(x[1] for x in xs) + ")")
        )
        group = st.tuples(children, st.sampled_from(["(", "(?:", "(?<g>"])).map(
            lambda t: (t[1] + t[0][0] + ")", "(?:" + t[0][1] + ")")
        )
        quantified = st.tuples(children, st.sampled_from(_QUANTIFIERS)).map(
            lambda t: ("(?:" + t[0][0] + ")" + t[1], "(?:" + t[0][1] + ")" + t[1])
        )
        return st.one_of(concat, alternation, group, quantified)

    return st.recursive(leaves, extend, max_leaves=8)


_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(pair=_patterns(), data=st.data())
def test_property_full_match_agrees_with_regex(pair: tuple[str, str], data: st.DataObject) -> None:
    ecma, python = pair
    node = regex_to_node(ecma, search=False)
    reference = regex.compile(python)
    for text in data.draw(st.lists(st.text(alphabet=st.sampled_from(_ALPHABET), max_size=6), max_size=6)):
        assert node_fullmatch(node, text) == (reference.fullmatch(text) is not None), (ecma, text)
        if HAVE_MATCHER:
            assert _via_matcher(node, text) == (reference.fullmatch(text) is not None), (ecma, text)


@_SETTINGS
@given(pair=_patterns(), start=st.booleans(), end=st.booleans(), data=st.data())
def test_property_search_agrees_with_regex(pair: tuple[str, str], start: bool, end: bool, data: st.DataObject) -> None:
    ecma, python = pair
    ecma = ("^" if start else "") + ecma + ("$" if end else "")
    python = ("^" if start else "") + "(?:" + python + ")" + ("\\Z" if end else "")
    node = regex_to_node(ecma)
    reference = regex.compile(python)
    for text in data.draw(st.lists(st.text(alphabet=st.sampled_from(_ALPHABET), max_size=6), max_size=6)):
        expected = reference.search(text) is not None
        assert node_fullmatch(node, text) == expected, (ecma, text)
        if HAVE_MATCHER:
            assert _via_matcher(node, text) == expected, (ecma, text)


@_SETTINGS
@given(left=_patterns(), right=_patterns(), data=st.data())
def test_property_anchored_alternatives(left: tuple[str, str], right: tuple[str, str], data: st.DataObject) -> None:
    ecma = f"^{left[0]}|{right[0]}$"
    python = f"^(?:{left[1]})|(?:{right[1]})\\Z"
    node = regex_to_node(ecma)
    reference = regex.compile(python)
    for text in data.draw(st.lists(st.text(alphabet=st.sampled_from(_ALPHABET), max_size=6), max_size=4)):
        expected = reference.search(text) is not None
        assert node_fullmatch(node, text) == expected, (ecma, text)
        if HAVE_MATCHER:
            assert _via_matcher(node, text) == expected, (ecma, text)


def _edges(children: st.SearchStrategy[tuple[str, str]], start: bool) -> st.SearchStrategy[tuple[str, str]]:
    """ECMA/Python spellings of anchored parts that may open (start) or close (not start) a pattern."""
    a, py = ("^", "^") if start else ("$", "\\Z")

    def wrap(shape: str, x: tuple[str, str], y: tuple[str, str]) -> tuple[str, str]:
        ecma = shape.replace("A", a).replace("X", x[0]).replace("Y", y[0])
        python_shape = shape.replace("(?:", "(").replace("(", "(?:")
        python = python_shape.replace("A", py).replace("X", "(?:" + x[1] + ")").replace("Y", "(?:" + y[1] + ")")
        return ecma, python

    if start:
        shapes = ["", "A", "(AX)", "(?:AX|Y)", "(AX)*", "(?:A|X)", "(AX)+", "(?:AX|Y){0,2}", "A(?:A|A)", "(?:A)*"]
    else:
        shapes = ["", "A", "(XA)", "(?:XA|Y)", "(XA)*", "(?:A|X)", "(XA)+", "(?:XA|Y){0,2}", "(?:A|A)A", "(?:A)*"]
    return st.tuples(st.sampled_from(shapes), children, children).map(lambda t: wrap(t[0], t[1], t[2]))


@_SETTINGS
@given(data=st.data())
def test_property_anchors_inside_edge_groups(data: st.DataObject) -> None:
    head = data.draw(_edges(_patterns(), True))
    middle = data.draw(_patterns())
    tail = data.draw(_edges(_patterns(), False))
    ecma = head[0] + middle[0] + tail[0]
    python = head[1] + "(?:" + middle[1] + ")" + tail[1]
    node = regex_to_node(ecma)
    reference = regex.compile(python)
    for text in data.draw(st.lists(st.text(alphabet=st.sampled_from(_ALPHABET), max_size=6), max_size=6)):
        expected = reference.search(text) is not None
        assert node_fullmatch(node, text) == expected, (ecma, python, text)
        if HAVE_MATCHER:
            assert _via_matcher(node, text) == expected, (ecma, text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab()[]{}|*+?^$\\-,.0123dDwWsSpPuxk<>=!:")), max_size=12))
def test_property_arbitrary_text_never_crashes(pattern: str) -> None:
    for flavor in ("ecma", "glrm", "glrm-bytes"):
        try:
            regex_to_node(pattern, flavor=flavor)
        except (RegexError, LimitError):
            pass
