"""The Lark reader against glrmask 0.5.0's own Lark reader: constructs, lexing, %ignore, tokens, errors.

Each case lists inputs with the verdict glrmask 0.5.0 gives them (``accept``: a sentence,
``prefix``: every byte allowed but not yet a sentence, ``reject``: some byte refused). The test
checks that structgen's matcher on ``Grammar.from_lark(text)`` gives the same verdict and, where
glrmask is installed, that ``glrmask.Grammar.from_lark(text)`` still gives it and allows the same
next bytes at every step. Masks over a real vocabulary are compared at the end.
"""

from __future__ import annotations

import json
import pathlib
import re
from typing import Any

import numpy as np
import pytest
from glrmask_oracle import (
    TOKEN_BASE,
    VOCAB_SIZE,
    Oracle,
    _token_ids,
    byte_vocab,
    completes_within,
    matcher_verdict,
    verdicts_agree,
)
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from vocab_support import gguf_vocab

from structgen import Grammar, GrammarError, LimitError
from structgen.engine.constraint import Constraint
from structgen.grammar import ir
from structgen.grammar.emptiness import empty_rules
from structgen.grammar.lark import COMMON_TERMINALS
from structgen.limits import GrammarLimits

try:
    import glrmask
except ImportError:  # the comparisons with glrmask are skipped, the hard-coded verdicts still run
    glrmask = None

T0, T1, T2 = TOKEN_BASE, TOKEN_BASE + 1, TOKEN_BASE + 2


class LarkOracle:
    """One grammar compiled by glrmask's Lark reader over the byte vocabulary of the GLRM oracle."""

    def __init__(self, source: str, bindings: dict[str, Any] | None = None) -> None:
        grammar = glrmask.Grammar.from_lark(source)
        for name, value in (bindings or {}).items():
            grammar.bind(**{name: value})
        self.constraint = grammar.compile(byte_vocab(), mask_strategy=glrmask.MaskStrategy.TOKEN_TRIE)

    def verdict(self, pieces: Any) -> str:
        state = self.constraint.start()
        for tok in _token_ids(pieces):
            if not state.mask(size=VOCAB_SIZE)[tok] or not state.commit_token(tok):
                return "reject"
        return "accept" if state.is_accepting() else "prefix"


def lark_error(source: str) -> str | None:
    """glrmask's message for ``source`` (read or compile), None if it compiles."""
    try:
        LarkOracle(source)
    except ValueError as exc:
        return str(exc)
    return None


def same_masks(grammar: Grammar, oracle: LarkOracle, data: bytes) -> None:
    """At every prefix of ``data`` that both still allow, the allowed next bytes are the same, but
    for the bytes glrmask allows into a dead end (see ``glrmask_oracle.completes_within``)."""
    matcher = grammar.matcher()
    state = oracle.constraint.start()
    for i, byte in enumerate(data):
        ours = set(matcher.viable_next_bytes())
        theirs = {b for b in range(256) if state.mask(size=VOCAB_SIZE)[b]}
        only_theirs = {b for b in theirs - ours if completes_within(oracle.constraint, data[:i] + bytes([b]))}
        assert ours <= theirs and not only_theirs, (data[:i], sorted((ours - theirs) | only_theirs)[:12])
        if byte not in ours:
            return
        matcher.feed(bytes([byte]))
        state.commit_token(byte)


def test_an_empty_token_set_makes_the_rule_dead():
    # `<[]>` matches no token, so `"a" <[]>` has no sentence: structgen offers nothing, not even
    # "a" (glrmask still calls "a" a viable prefix: the dead-end masks of the hardening issue)
    grammar = Grammar.from_lark('start: "a" <[]>')
    assert matcher_verdict(grammar, "a") == R


def check(src: str, cases: dict[str, list], bindings: dict | None = None, oracle_bindings: dict | None = None) -> None:
    grammar = Grammar.from_lark(src)
    if bindings:
        grammar = grammar.bind(**bindings)
    oracle = LarkOracle(src, oracle_bindings or bindings) if glrmask is not None else None
    for verdict, inputs in cases.items():
        for text in inputs:
            assert matcher_verdict(grammar, text) == verdict, ("structgen", src, text)
            if oracle is not None:
                assert oracle.verdict(text) == verdict, ("glrmask", src, text)
                if isinstance(text, (str, bytes)):
                    same_masks(grammar, oracle, text.encode() if isinstance(text, str) else text)


A, P, R = "accept", "prefix", "reject"

# (id, source, {verdict: inputs})
CASES = [
    # -- declarations and layout --------------------------------------------------------------
    ("choice", 'start: "a" | "b"', {A: ["a", "b"], P: [""], R: ["ab"]}),
    ("continuation-lines", 'start: "a"\n    | "b"\n\n  // c\n  | "c"', {A: ["a", "b", "c"]}),
    ("continuation-crlf", 'start: "a"\r\n| "b"\r\n', {A: ["a", "b"]}),
    ("newline-inside-parens-before-bar", 'start: ( "a"\n | "b" )', {A: ["a", "b"]}),
    ("comments", 'start: "a" # one\n// two\n', {A: ["a"]}),
    ("spacing-around-colon", 'start : "a"\n  x:"b"', {A: ["a"]}),
    ("modifiers-and-aliases", 'start: a b c\n?a: "x" -> foo\n!b: "y"\n!?c: "z" | "w" -> bar', {A: ["xyz", "xyw"]}),
    ("underscore-rule", 'start: _x\n_x: "a"', {A: ["a"]}),
    ("empty-body", 'start: x "a"\nx: ', {A: ["a"]}),
    ("empty-alternative", 'start: "a" |', {A: ["", "a"]}),
    ("empty-group", 'start: () "a"', {A: ["a"]}),
    ("forward-reference", 'start: x y\ny: "b"\nx: "a"', {A: ["ab"]}),
    ("directive-mid-line", 'start: "a" %ignore " "\n', {A: ["a", " a "]}),
    ("directive-after-empty-alternative", 'start: "a"\n| %import common.WS', {A: ["a", ""]}),
    # -- literals -------------------------------------------------------------------------------
    ("escapes", r'start: "\n\t\\\"\x41\u00e9\U0001F600"', {A: ['\n\t\\"Aé😀']}),
    ("single-quotes", r"start: 'a\'b'", {A: ["a'b"]}),
    ("unknown-escape-kept", r'start: "\q\0\b"', {A: ["\\q\\0\\b"], R: ["q"]}),
    ("raw-unicode", 'start: "é☃"', {A: ["é☃"]}),
    ("surrogate-pair", r'start: "\uD83D\uDE00"', {A: ["😀"]}),
    ("escape-naming-no-character", r'start: "\U00110000\ud800"', {A: ["\\U00110000\\ud800"]}),
    ("short-u-escape-kept", r'start: "\u12" "\U12" "\uZZZZ"', {A: ["\\u12\\U12\\uZZZZ"]}),
    ("x-escape-is-a-code-point", r'start: "\x80"', {A: ["\x80"], R: [b"\x80"]}),
    ("case-insensitive-literal", 'start: "abc"i', {A: ["ABC", "aBc"], R: ["abd"]}),
    ("case-insensitive-unicode", 'start: "é"i', {A: ["É", "é"]}),
    ("case-insensitive-punctuation", 'start: "a.b"i "+"', {A: ["A.b+"], R: ["AXb+"]}),
    ("literal-range", 'start: "a".."c"', {A: ["a", "b", "c"], R: ["d"]}),
    ("literal-range-unicode", 'start: "é".."ê" "\\x00".."\\x7f"', {A: ["êb"]}),
    ("empty-literal", 'start: "" "a"', {A: ["a"]}),
    # -- regexes --------------------------------------------------------------------------------
    ("regex", "start: /[a-z]+[0-9]/", {A: ["ab1"], R: ["1"]}),
    ("regex-flags", "start: /abc/i /./s", {A: ["ABC\n"]}),
    ("regex-x-flag", "start: /a b/x", {A: ["ab"]}),
    ("regex-escaped-slash", r"start: /a\/b/ /[\/]/", {A: ["a/b/"]}),
    ("regex-unicode-digit", r"start: /\d/", {A: ["1", "٣"]}),
    ("regex-dot-excludes-newline", "start: /./", {A: ["é"], R: ["\n"]}),
    # -- operators ------------------------------------------------------------------------------
    ("optional-brackets", 'start: ["a"] "b"', {A: ["b", "ab"]}),
    ("quantifiers", 'start: "a"? "b"* "c"+', {A: ["c", "abbcc"], P: ["ab"], R: ["ac b"]}),
    ("tilde-exact", 'start: "a" ~ 2', {A: ["aa"], P: ["a"], R: ["aaa"]}),
    ("tilde-range", 'start: "a"~2..3', {A: ["aa", "aaa"], P: ["a"], R: ["aaaa"]}),
    ("tilde-spaced-range", 'start: "a" ~ 1 .. 2', {A: ["a", "aa"]}),
    ("tilde-zero", 'start: "a" ~ 0 "b"', {A: ["b"], R: ["ab"]}),
    ("quantified-brackets", 'start: ["a"]* "b"', {A: ["aab", "b"]}),
    ("grouping", 'start: ("a" | "b")+ "c"', {A: ["abc"], R: ["c"]}),
    ("sequence-binds-tighter-than-choice", 'start: "a" "b" | "c"', {A: ["ab", "c"], R: ["ac"]}),
    # -- terminals and the lexing model -------------------------------------------------------
    ("rule-is-not-greedy", 'start: foo "a"\nfoo: "a"+', {A: ["aa", "aaa"]}),
    ("mixed-case-name-is-a-rule", 'start: Foo "a"\nFoo: "a"+', {A: ["aa"]}),
    ("rule-level-repetition", 'start: /a/+ "a"', {A: ["aa", "aaa"]}),
    ("terminal-references-terminal", 'start: X\nX: _D "x" _D\n_D: /[0-9]/', {A: ["1x2"], R: ["x"]}),
    ("nullable-terminal", 'start: X "b"\nX: "a"*', {A: ["b", "ab", "aab"]}),
    ("optional-terminal", 'start: X?\nX: "a"', {A: ["", "a"]}),
    ("parallel-terminals", 'start: ID "=" ID | "let" ID\nID: /[a-z]+/', {A: ["a=b", "letx"]}),
    # -- %import common -------------------------------------------------------------------------
    ("common-number", "start: NUMBER\n%import common.NUMBER", {A: ["1", "1.5", "1e5", ".5", "1."], R: ["-1"]}),
    (
        "common-signed-number",
        "start: SIGNED_NUMBER\n%import common.SIGNED_NUMBER",
        {A: ["1", "+1.5", "-1e5", ".5"]},
    ),
    ("common-int", "start: INT\n%import common.INT", {A: ["1", "01"], R: ["-1"]}),
    (
        "common-escaped-string",
        "start: ESCAPED_STRING\n%import common.ESCAPED_STRING",
        {A: ['"a"', '"a\\"b"', '""'], R: ['"\n"']},
    ),
    ("common-cname", "start: CNAME\n%import common.CNAME", {A: ["a_1", "_"], R: ["1a"]}),
    ("common-list", "start: LETTER DIGIT\n%import common (LETTER, DIGIT)", {A: ["a1", "A1"]}),
    ("common-newline", 'start: "a" NEWLINE "b"\n%import common.NEWLINE', {A: ["a\nb", "a\r\nb", "a\n\nb"]}),
    ("common-alias", '%import common.WS -> SP\nstart: "a" SP "b"', {A: ["a b", "a \t b"]}),
    ("common-used-in-terminal", "start: A B\n%import common (WS, INT)\nA: INT\nB: WS", {A: ["1 "]}),
    ("word-sequence", 'start: WORD (" " WORD)*\n%import common.WORD', {A: ["ab cd"], R: ["ab  cd"]}),
    # -- %ignore --------------------------------------------------------------------------------
    (
        "ignore-ws",
        "start: WORD+\n%import common.WORD\n%import common.WS\n%ignore WS",
        {A: ["ab cd", " ab  cd ", "ab"], P: [""]},
    ),
    ("ignore-literal", '%ignore " "\nstart: "a" "b"', {A: ["a b", "ab", " a  b "]}),
    ("ignore-regex", '%ignore /[ ]+/\nstart: "a" "b"', {A: ["a b", " a  b "]}),
    ("ignore-two", '%ignore " "\n%ignore "\\n"\nstart: "a" "b"', {A: ["a \nb"]}),
    ("ignore-sequence", 'start: "a" "b"\n%ignore "x" "y"', {A: ["axyb"], R: ["axb"]}),
    ("ignore-choice-terminal", 'start: "a" "b"\n%ignore X\nX: "x" | "yy"', {A: ["axyyb"], R: ["ayb"]}),
    ("ignore-never-splits-a-terminal", 'start: X\nX: "a" "b"\n%ignore " "', {A: ["ab"], R: ["a b"]}),
    ("ignore-between-rule-items", 'start: x\nx: "a" "b"\n%ignore " "', {A: ["ab", "a b"]}),
    ("ignore-around-empty-rule", 'start: "a" y "b"\ny: \n%ignore " "', {A: ["a b", "a  b", "ab"]}),
    ("ignore-declared-before-use", '%ignore WS\nstart: "a" X\nX: "b"\n%import common.WS', {A: [" a b "]}),
    # -- [lazy] ---------------------------------------------------------------------------------
    ("lazy-terminal", "start: X\nX[lazy]: /a+/", {A: ["a"], R: ["aa"]}),
    ("lazy-twice", "start: X X\nX[lazy]: /a+/", {A: ["aa"], P: ["a"], R: ["aaa"]}),
    ("lazy-rule", 'start: x\nx[lazy]: "a"+', {A: ["a"], R: ["aa"]}),
    ("lazy-nullable", 'start: X "b"\nX[lazy]: /a*/', {A: ["b"], R: ["ab"]}),
    ("lazy-choice", "start: X\nX[lazy]: /(ab|a)c?/", {A: ["a"], R: ["ab", "ac"]}),
    ("lazy-through-terminal", "start: X\nX[lazy]: A\nA: /a+/", {A: ["a"], R: ["aa"]}),
    ("lazy-delimited", 'start: X "!"\nX[lazy]: /.*end/', {A: ["xxend!"], R: ["xxendend!"]}),
]

TOKEN_CASES = [
    ("at-token", 'start: "a" @token(256)', {A: [["a", T0]], P: ["a"], R: [["a", T1]]}),
    ("token-id", 'start: "a" <[256]>', {A: [["a", T0]], R: [["a", T1]]}),
    ("token-list", 'start: "a" <[256,258]>', {A: [["a", T0], ["a", T2]], R: [["a", T1]]}),
    ("token-range", 'start: "a" <[256-258, 260]>', {A: [["a", T1], ["a", TOKEN_BASE + 4]], R: [["a", TOKEN_BASE + 3]]}),
    ("token-negated", 'start: "a" <[^256-257]>', {A: [["a", T2], ["a", 98]], R: [["a", T0], ["a", T1]]}),
    ("token-wildcard", "start: <[*]>", {A: [[97], [T0]], R: [[97, 97]]}),  # ints: token ids
    ("token-with-ignore", '%ignore " "\nstart: "a" <[256]> "b"', {A: [["a", " ", T0, " ", "b"], ["a", T0, "b"]]}),
]


@pytest.mark.parametrize("src, cases", [pytest.param(src, cases, id=name) for name, src, cases in CASES + TOKEN_CASES])
def test_construct(src: str, cases: dict[str, list]) -> None:
    check(src, cases)


# Greedy terminals that can never end in their context: no continuation completes these inputs;
# structgen rejects them, glrmask's Lark reader still calls them prefixes (as its GLRM reader does,
# test_glrm.GLRMASK_DEAD_ENDS)
LARK_DEAD_ENDS = [
    ("start: A A\nA: /a+/", ["a", "aa", "aaa"]),
    ('start: FOO "a"\nFOO: "a"+', ["aa", "aaa"]),
    ('start: A1 "a"\nA1: "a"+', ["aa"]),
    ('start: _A "a"\n_A: "a"+', ["aa"]),
    ('start: /a+/ "a"', ["aa"]),
]


@pytest.mark.parametrize("src, inputs", LARK_DEAD_ENDS)
def test_dead_ends_glrmask_keeps_alive(src: str, inputs: list[str]) -> None:
    grammar = Grammar.from_lark(src)
    oracle = LarkOracle(src) if glrmask is not None else None
    for text in inputs:
        assert matcher_verdict(grammar, text) == R, text
        if oracle is not None:
            assert oracle.verdict(text) == P and not completes_within(oracle.constraint, text.encode()), text


@pytest.mark.parametrize("src, cases", [pytest.param(src, cases, id=name) for name, src, cases in CASES])
def test_written_glrm_means_the_same_to_glrmask(src: str, cases: dict[str, list]) -> None:
    """Lark read here and written as GLRM gets from glrmask's GLRM reader the verdicts its Lark
    reader gives the Lark text."""
    if glrmask is None:
        pytest.skip("glrmask (the GLRM oracle) is not installed (pip install '.[test]')")
    oracle = Oracle(Grammar.from_lark(src).to_glrm())
    for verdict, inputs in cases.items():
        for text in inputs:
            assert oracle.verdict(text) == verdict, (src, text)


def test_special_token_is_an_extern_token() -> None:
    src = 'start: "a" <|end|> <|end|>?'
    g = Grammar.from_lark(src)
    assert dict(g.externs) == {"end": "token"}
    check(src, {A: [["a", T0], ["a", T0, T0]], R: [["a", T1]]}, bindings={"end": T0})


def test_special_token_by_vocabulary_text() -> None:
    g = Grammar.from_lark('start: "a" <|im_end|>', special_tokens="vocabulary")
    assert not g.externs
    body = g.rules["start"]
    assert ir.Token(name="<|im_end|>") in list(ir.iter_nodes(body))


def test_extern_grammar() -> None:
    src = '%ignore " "\nstart: "<" @inner ">"'
    g = Grammar.from_lark(src)
    assert dict(g.externs) == {"inner": "grammar"}
    inner = Grammar.from_lark("start: /[0-9]+/")
    theirs = {"inner": glrmask.Grammar.from_lark("start: /[0-9]+/")} if glrmask is not None else None
    check(src, {A: ["<12>", "< 12 >"], R: ["<1 2>"]}, bindings={"inner": inner}, oracle_bindings=theirs)


def test_mapping_to_the_grammar_form() -> None:
    g = Grammar.from_lark('start: A "x" b /[0-9]/\nA: /a+/\nb: "b"')
    assert g.start == "start" and not g.externs
    assert g.rules["start"] == ir.seq(ir.Lexeme(ir.Ref("A")), ir.lit("x"), ir.Ref("b"), ir.char((48, 57)))
    assert g.rules["b"] == ir.lit("b")


def test_ignore_is_a_hidden_terminal_before_every_lexical_atom() -> None:
    g = Grammar.from_lark('start: "a" x\nx: "b"\n%ignore " "')
    ws = ir.star(ir.Ref("%ignore~1"))
    assert g.rules["%ignore~1"] == ir.lit(" ")
    assert g.rules["start"] == ir.seq(ws, ir.lit("a"), ir.Ref("x"))
    assert g.rules["x"] == ir.seq(ws, ir.lit("b"))
    assert g.rules[g.start] == ir.seq(ir.Ref("start"), ws)  # and after the end


@pytest.mark.parametrize("name", sorted(COMMON_TERMINALS))
def test_common_terminals_match_glrmask(name: str) -> None:
    samples = ["1", "a", "A", "1.", ".5", "1e5", "+1", "-1.5e-3", "ff", "\n", "\n\n", "\r\n", "\r", " \t"]
    samples += [" \x0c", "#x", "//x", "--x", "/*x*/", "/* a * b **/", '"a"', '"\\""', "a_1", "é", "", "1E+2"]
    src = f"start: {name}\n%import common.{name}"
    expected = {}
    if glrmask is None:
        pytest.skip("glrmask (the GLRM oracle) is not installed (pip install '.[test]')")
    oracle = LarkOracle(src)
    for s in samples:
        expected.setdefault(oracle.verdict(s), []).append(s)
    check(src, expected)


# -- errors: the texts glrmask refuses, with positions --------------------------------------------

# (id, source, message fragment, (line, column) or None)
ERRORS = [
    ("no-start", 'x: "a"', "must define a rule named 'start'", None),
    ("undefined-rule", "start: y", "unknown rule referenced", (1, 8)),
    ("undefined-terminal", "start: X", "unknown rule referenced", (1, 8)),
    ("duplicate", 'start: a\na: "x"\na: "y"', 'duplicate Lark declaration "a"', (3, 1)),
    ("duplicate-import", 'start: INT\n%import common.INT\nINT: "x"', 'duplicate Lark declaration "INT"', (3, 1)),
    ("rule-priority", 'start.2: "a"', "priorities are not supported", (1, 6)),
    ("terminal-priority", 'start: X\nX.2: "a"', "priorities are not supported", (2, 2)),
    ("attribute", "start: X\nX[capture]: /a+/", 'unsupported Lark rule attribute "capture"', (2, 3)),
    ("template", 'start: _sep{"a", ","}', "unexpected character '{'", (1, 12)),
    ("declare", '%declare X\nstart: "a"', "unsupported Lark directive %declare", (1, 1)),
    ("override", '%override start: "b"', "unsupported Lark directive %override", (1, 1)),
    ("extend", 'start: "a"\n%extend start: "y"', "unsupported Lark directive %extend", (2, 1)),
    ("relative-import", '%import .foo.X\nstart: "a"', "expected name in Lark import", (1, 9)),
    ("other-module", "start: X\n%import foo.X", 'unsupported Lark import module "foo"', (2, 1)),
    ("unknown-common", "start: BOGUS\n%import common.BOGUS", 'unknown common terminal "BOGUS"', (2, 16)),
    ("lowercase-alias", "start: x\n%import common.WS -> x", 'imported terminal alias "x" must be uppercase', (2, 22)),
    ("terminal-uses-rule", 'start: X\nX: x\nx: "a"', "not a terminal rule", (2, 4)),
    ("terminal-cycle", 'start: X\nX: X "a" | "a"', "cycle detected in terminal rule references", None),
    ("bare-dot", "start: x.y", "bare '.' is not a Lark atom", (1, 9)),
    ("regex-flag-m", "start: /a/m", "unsupported regex flag 'm'", (1, 8)),
    ("regex-flag-twice", "start: /a/ii", "duplicate regex flag 'i'", (1, 8)),
    ("regex-lookahead", "start: /(?=a)a/", "invalid regex", (1, 8)),
    ("regex-anchor", "start: /^a$/", "invalid regex", (1, 8)),
    ("regex-lazy-quantifier", "start: /a*?b/", "invalid regex", (1, 8)),
    ("range-of-strings", 'start: "ab".."c"', "single Unicode-scalar endpoints", (1, 14)),
    ("reversed-range", 'start: "z".."a"', "invalid Lark literal range", (1, 13)),
    ("reversed-tilde", 'start: "a" ~ 3..2', "upper bound 2 is smaller than lower bound 3", (1, 12)),
    ("open-tilde", 'start: "a"~1..', "expected upper bound after '..'", (1, 15)),
    ("double-quantifier", 'start: "a"+?', "unexpected '?'", (1, 12)),
    ("newline-in-brackets", 'start: [ "a"\n "b" ]', "expected RBracket, got newline", (1, 13)),
    ("newline-in-parens", 'start: ( "a"\n "b" )', "expected RParen, got newline", (1, 13)),
    ("continuation-without-bar", 'start: "a"\n    "b"', "expected rule name", (2, 5)),
    ("bad-x-escape", 'start: "\\x4"', "invalid \\x escape", (1, 8)),
    ("unterminated-string", 'start: "abc', "unterminated string", (1, 8)),
    ("unterminated-regex", "start: /abc", "unterminated regex", (1, 8)),
    ("token-range-reversed", 'start: "a" <[258-256]>', "token range endpoints are reversed", (1, 12)),
    ("token-negated-wildcard", 'start: "a" <[^*]>', "negated wildcard is not supported", (1, 12)),
    ("token-not-a-number", 'start: "a" <[x]>', "expected numeric token ID", (1, 12)),
    ("token-unterminated", 'start: "a" <[1', "unterminated <[...]> token atom", (1, 12)),
    ("special-unterminated", 'start: "a" <|x', "unterminated or empty named special token", (1, 12)),
    ("angle-other", 'start: "a" <x>', "expected <[...]> or <|name|>", (1, 12)),
    ("at-token-spaced", 'start: "a" @token( 256 )', "expected @token(<token-id>)", (1, 12)),
    ("at-token-two-ids", 'start: "a" @token(256, 257)', "expected @token(<token-id>)", (1, 12)),
    ("token-in-terminal", 'start: X\nX: "a" <[256]>', "extern cannot be part of a terminal", (2, 8)),
    ("ignore-rule", 'start: "a" "b"\n%ignore x\nx: "x"', "not a terminal rule", (2, 9)),
    ("ignore-nullable", 'start: "a" "b"\n%ignore /x*/', "must consume at least one byte", (2, 1)),
    ("json", 'start: %json {"type": "integer"}', "%json is not read", (1, 8)),
    ("llguidance-counted-repetition", 'start: "a"{2}', "unexpected character '{'", (1, 11)),
    ("llguidance-directive", '%llguidance {}\nstart: "a"', "unsupported Lark directive %llguidance", (1, 1)),
    (
        "llguidance-regex-directive",
        'start: %regex {"substring_chars": "ab"}',
        "unsupported Lark directive %regex",
        (1, 8),
    ),
    ("llguidance-and", 'start: X\nX: "a" & "a"', "unexpected character '&'", (2, 8)),
    ("llguidance-not", 'start: X\nX: ~"a"', "unexpected '~'", (2, 4)),
    ("llguidance-stop", 'start: X\nX[stop=""]: /a+/', 'unsupported Lark rule attribute "stop"', (2, 3)),
    ("extern-and-rule", 'start: x @x\nx: "a"', "names both an extern and a rule", (1, 10)),
    ("special-and-extern-grammar", "start: <|x|> @x", "both as a special token and as an extern grammar", (1, 14)),
]

# rows glrmask does not refuse while reading or compiling (it reports them another way, or
# accepts them): an extern slot unbound at compile time, and %json, which it compiles itself
_GLRMASK_COMPILES = {"json", "extern-and-rule", "special-and-extern-grammar"}


@pytest.mark.parametrize("src, fragment, where", [pytest.param(src, f, w, id=name) for name, src, f, w in ERRORS])
def test_error(src: str, fragment: str, where: tuple[int, int] | None) -> None:
    with pytest.raises(GrammarError) as info:
        Grammar.from_lark(src)
    assert fragment in str(info.value)
    if where is not None:
        assert (info.value.line, info.value.column) == where


@pytest.mark.parametrize("name, src", [(name, src) for name, src, _f, _w in ERRORS if name not in _GLRMASK_COMPILES])
def test_glrmask_refuses_the_same_texts(name: str, src: str) -> None:
    if glrmask is None:
        pytest.skip("glrmask (the GLRM oracle) is not installed (pip install '.[test]')")
    assert lark_error(src) is not None, name


def test_limits() -> None:
    with pytest.raises(LimitError):
        Grammar.from_lark('start: "a" ~ 2000000')
    with pytest.raises(LimitError):
        Grammar.from_lark('start: "a"', limits=GrammarLimits(max_source_bytes=4))
    with pytest.raises(LimitError):
        Grammar.from_lark("start: " + "(" * 20 + '"a"' + ")" * 20, limits=GrammarLimits(max_nesting=10))
    with pytest.raises(LimitError):
        Grammar.from_lark('start: "a" <[0-4000000000]>')
    with pytest.raises(ValueError):
        Grammar.from_lark('start: "a"', special_tokens="other")


def test_deep_nesting_is_glrmask_s_bound() -> None:
    deep = "start: " + "(" * 129 + '"a"' + ")" * 129
    with pytest.raises(GrammarError, match="supported depth of 128"):
        Grammar.from_lark(deep, limits=GrammarLimits(max_nesting=1000))
    assert Grammar.from_lark("start: " + "(" * 100 + '"a"' + ")" * 100).matches("a")


def test_long_chains_do_not_recurse() -> None:
    n = 5000
    rules = "\n".join(f"A{i}: A{i + 1}" for i in range(n))
    g = Grammar.from_lark(
        f'start: A0 | x0\n{rules}\nA{n}: "a"\n%ignore " "\n'
        + "\n".join(f"x{i}: x{i + 1}" for i in range(n))
        + f'\nx{n}: "b"'
    )
    assert g.matches(" a ") and g.matches("b")


# -- hypothesis: any text gives a grammar or a GrammarError, never another exception -----------------

_PIECES = st.sampled_from(
    [
        '"a"',
        '"b"i',
        "/[a-c]+/",
        "X",
        "x",
        "(",
        ")",
        "[",
        "]",
        "|",
        "?",
        "*",
        "+",
        "~ 2",
        "..",
        "->",
        "\n",
        "\n| ",
        ":",
        "%ignore ",
        "%import common.WS",
        "<[256]>",
        "<|e|>",
        "@g",
        " ",
        "#c\n",
        '"a".."c"',
        ".",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=14), st.text(max_size=6))
def test_any_text_reads_or_raises_grammar_error(pieces: list[str], noise: str) -> None:
    src = 'start: x X\nx: "q"\nX: "r"\n' + "".join(pieces) + noise
    try:
        Grammar.from_lark(src)
    except GrammarError as exc:
        assert exc.line is None or exc.line >= 1
    except LimitError:
        pass


# A small generated dialect: rules over literals, classes and repetition, with and without %ignore,
# must mean the same to structgen and to glrmask on random short inputs.
_ATOMS = ['"a"', '"b"', '"ab"', "A", "B", "x", '"a".."b"', "/[ab]/", '"A"i']


@st.composite
def _lark_grammars(draw: st.DrawFn) -> str:
    def expr(depth: int) -> str:
        kind = draw(st.integers(0, 5 if depth < 2 else 1))
        if kind <= 1:
            return draw(st.sampled_from(_ATOMS))
        if kind == 2:
            return " ".join(expr(depth + 1) for _ in range(draw(st.integers(1, 3))))
        if kind == 3:
            return "(" + " | ".join(expr(depth + 1) for _ in range(draw(st.integers(2, 3)))) + ")"
        if kind == 4:
            return "(" + expr(depth + 1) + ")" + draw(st.sampled_from(["?", "*", "+", " ~ 2", " ~ 1..2"]))
        return "[" + expr(depth + 1) + "]"

    lines = [f"start: {expr(0)}", f"x: {expr(1)}", 'A: "a" | "aa"', "B: /b+/"]
    if draw(st.booleans()):
        lines.append('%ignore " "')
    return "\n".join(lines)


@settings(max_examples=100, deadline=None)
@given(_lark_grammars(), st.lists(st.text(alphabet="abA ", max_size=5), min_size=1, max_size=6))
def test_generated_grammars_mean_the_same_to_glrmask(src: str, inputs: list[str]) -> None:
    if glrmask is None:
        pytest.skip("glrmask (the GLRM oracle) is not installed (pip install '.[test]')")
    grammar = Grammar.from_lark(src)
    start = grammar.matcher()
    # an empty language: glrmask still lets ignored bytes through, structgen allows nothing
    assume(start.is_accepting() or start.viable_next_bytes())
    # a rule with no sentence: glrmask still offers the bytes that enter it (a dead end), structgen
    # does not (the dead-end masks of the hardening issue)
    assume(not empty_rules(grammar))
    oracle = LarkOracle(src)
    for text in inputs:
        assert verdicts_agree(oracle, matcher_verdict(grammar, text), text), (src, text)
        same_masks(grammar, oracle, text.encode())


# -- masks over a real vocabulary -----------------------------------------------------------------

REAL_VOCAB_GRAMMARS = [
    (
        "json-like",
        "\n".join(
            [
                "start: value",
                '?value: object | array | ESCAPED_STRING | SIGNED_NUMBER | "true" | "false" | "null"',
                'object: "{" [pair ("," pair)*] "}"',
                'pair: ESCAPED_STRING ":" value',
                'array: "[" [value ("," value)*] "]"',
                "%import common (ESCAPED_STRING, SIGNED_NUMBER, WS)",
                "%ignore WS",
            ]
        ),
        '{"a": [1, -2.5e3, true], "b": {"c": null}}',
    ),
    (
        "key-values",
        'start: (CNAME "=" INT NEWLINE)+\n%import common (CNAME, INT, NEWLINE, WS_INLINE)\n%ignore WS_INLINE',
        "alpha = 12\nbeta=3\n",
    ),
]


@pytest.mark.parametrize("vocab_name", ["llama-bpe", "llama-spm"])
@pytest.mark.parametrize("name, src, text", REAL_VOCAB_GRAMMARS, ids=[c[0] for c in REAL_VOCAB_GRAMMARS])
def test_masks_on_a_real_vocabulary(name: str, src: str, text: str, vocab_name: str) -> None:
    """Along the tokenisation of ``text`` the token masks of structgen and glrmask are identical."""
    if glrmask is None:
        pytest.skip("glrmask (the GLRM oracle) is not installed (pip install '.[test]')")
    vocab = gguf_vocab(vocab_name)
    n = vocab.n_tokens
    table = {i: vocab.token_bytes(i) for i in range(n) if vocab.token_bytes(i) and not vocab.is_special[i]}
    theirs = glrmask.Grammar.from_lark(src).compile(glrmask.Vocab.from_id_to_bytes(table))
    ours = Constraint.compile(Grammar.from_lark(src), vocab)
    texts = np.zeros(n, dtype=bool)
    texts[list(table)] = True
    state, their_state = ours.start(), theirs.start()
    ids = _greedy_tokens(text.encode(), table)
    for step, tok in enumerate([*ids, None]):
        our_mask = np.asarray(state.mask(), dtype=bool)[:n] & texts
        their_mask = np.asarray(their_state.mask(size=n), dtype=bool)[:n]
        diff = np.flatnonzero(our_mask != their_mask)
        assert not diff.size, (step, [vocab.token_bytes(int(i)) for i in diff[:8]])
        if tok is None:
            break
        assert state.commit_token(tok) and their_state.commit_token(tok)
    assert state.is_accepting() and their_state.is_accepting()


def _greedy_tokens(data: bytes, table: dict[int, bytes]) -> list[int]:
    """``data`` cut into the longest vocabulary tokens, left to right."""
    by_bytes = {b: i for i, b in table.items()}
    longest = max(len(b) for b in by_bytes)
    out, pos = [], 0
    while pos < len(data):
        for k in range(min(longest, len(data) - pos), 0, -1):
            tok = by_bytes.get(data[pos : pos + k])
            if tok is not None:
                out.append(tok)
                pos += k
                break
        else:  # pragma: no cover - every byte is a token in the vocabularies used
            raise AssertionError(f"no token for {data[pos : pos + 1]!r}")
    return out


# -- where glrmask's terminals and ir.Lexeme differ (as for GLRM: see docs/grammars-glrm.md) ------

LEXEME_DIFFERENCES = [
    ("longest-match-falls-back", 'start: A "b"\nA: /a|abc/', {A: ["ab", "abcb"], P: ["abc"]}),
    ("longest-match-falls-back-later", 'start: A "b" "c" "d"?\nA: /a|abcd/', {A: ["abc", "abcdbc"], P: ["abcd"]}),
    ("multibyte-character-repetition", "start: A /è/\nA: /é+/", {A: ["éè", "ééè"]}),
]


@pytest.mark.parametrize("name, src, cases", LEXEME_DIFFERENCES, ids=[c[0] for c in LEXEME_DIFFERENCES])
def test_lexeme_semantics_differ_from_glrmask(name: str, src: str, cases: dict[str, list]) -> None:
    """The listed verdicts are glrmask's (longest match over the input); structgen's lexemes look
    one byte ahead, so on some input of each case its verdict is another (a deliberate
    difference, documented, not a failure)."""
    grammar = Grammar.from_lark(src)
    differs = [t for verdict, inputs in cases.items() for t in inputs if matcher_verdict(grammar, t) != verdict]
    assert differs, name


@pytest.mark.parametrize("name, src, cases", LEXEME_DIFFERENCES, ids=[c[0] for c in LEXEME_DIFFERENCES])
def test_lexeme_semantics_differences_are_glrmask_behaviour(name: str, src: str, cases: dict[str, list]) -> None:
    if glrmask is None:
        pytest.skip("glrmask (the GLRM oracle) is not installed (pip install '.[test]')")
    oracle = LarkOracle(src)
    for verdict, inputs in cases.items():
        for text in inputs:
            assert oracle.verdict(text) == verdict


def test_empty_remaining_language_allows_no_byte() -> None:
    src = 'start: "a" x\nx: x\n%ignore " "'
    matcher = Grammar.from_lark(src).matcher()
    assert not matcher.feed(b"a")  # the language is empty: nothing is viable, not even "a"
    if glrmask is not None:  # glrmask lets ignored spaces through after "a", before the dead end
        assert LarkOracle(src).verdict("a  ") == P


# -- the examples of docs/grammars-lark.md ---------------------------------------------------------

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "grammars-lark.md"
_ITEM = re.compile(r'`("(?:[^"\\]|\\.)*")` (accept|prefix|reject)')


def _doc_examples() -> list[tuple[str, list[tuple[str, str]]]]:
    """(source, [(text, verdict)]) for each ```lark block with a ``Verdicts:`` line under it."""
    out = []
    lines = DOC.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if line.strip() != "```lark":
            continue
        end = lines.index("```", i + 1)
        source = "\n".join(lines[i + 1 : end]) + "\n"
        after = next((x for x in lines[end + 1 :] if x.strip()), "")
        if after.startswith("Verdicts:"):
            out.append((source, [(json.loads(t), v) for t, v in _ITEM.findall(after)]))
    return out


DOC_EXAMPLES = _doc_examples()


def test_the_page_has_examples() -> None:
    assert len(DOC_EXAMPLES) >= 4 and all(items for _src, items in DOC_EXAMPLES)


@pytest.mark.parametrize("src, items", DOC_EXAMPLES, ids=[f"example{i}" for i in range(len(DOC_EXAMPLES))])
def test_doc_example(src: str, items: list[tuple[str, str]]) -> None:
    check(src, {verdict: [text for text, v in items if v == verdict] for _t, verdict in items})


def test_doc_python_block_runs() -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.S | re.M)
    assert blocks
    exec(compile("\n".join(blocks), str(DOC), "exec"), {"__name__": "docs_grammars_lark"})


def test_token_atoms_on_a_real_vocabulary() -> None:
    """The engine reads the reader's token atoms: a special token by text, any token, a negation."""
    vocab = gguf_vocab("llama-bpe")
    (eot,) = vocab.lookup_text("<|eot_id|>")
    (a,) = vocab.lookup_text("a")

    def after_a(src: str, **options: str) -> np.ndarray:
        state = Constraint.compile(Grammar.from_lark(src, **options), vocab).start()
        assert state.commit_token(a)
        return np.asarray(state.mask(), dtype=bool)

    assert np.flatnonzero(after_a('start: "a" <|eot_id|>', special_tokens="vocabulary")).tolist() == [eot]
    anything = Grammar({"root": ir.seq(ir.lit("a"), ir.Token((), None, negated=True))})
    state = Constraint.compile(anything, vocab).start()
    assert state.commit_token(a)
    assert (after_a('start: "a" <[*]>') == np.asarray(state.mask(), dtype=bool)).all()
    negated = after_a(f'start: "a" <[^{a}]>')
    assert not negated[a] and negated.sum() == after_a('start: "a" <[*]>').sum() - 1


def test_long_inputs_are_read_in_linear_time() -> None:
    # blank lines were scanned again for each newline before it, and each special token looked
    # for the next newline to the end of the text: both quadratic, minutes at these sizes
    assert Grammar.from_lark('start: "a"' + "\n" * 100_000 + '  | "b"\n' + "\n  # c" * 50_000).matches("b")
    g = Grammar.from_lark("start: " + " ".join(["<[1]> <|e|>"] * 10_000) + " " * 400_000)
    assert dict(g.externs) == {"e": "token"}
