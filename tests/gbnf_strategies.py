"""Hypothesis strategies for grammar forms that GBNF can express (shared by the GBNF tests)."""

from __future__ import annotations

from hypothesis import strategies as st

from structgen import Grammar
from structgen.grammar import ir

L, R = ir.lit, ir.Ref

RULES = ["root", "a", "b-2", "c"]
TEXT = st.text(alphabet=st.sampled_from(list('ab"\\\n\t-[]^éあ😀\x00\x7f ')), min_size=1, max_size=4)


def char_classes() -> st.SearchStrategy[ir.Node]:
    cps = st.sampled_from([0x0, 0x20, 0x2D, 0x41, 0x5A, 0x5C, 0x5D, 0x5E, 0x61, 0x7A, 0xE9, 0x3042, 0x1F600, 0x10FFFF])
    ranges = st.lists(st.tuples(cps, cps).map(lambda t: (min(t), max(t))), min_size=1, max_size=3)
    return st.builds(lambda r, n: ir.CharClass(tuple(r), n), ranges, st.booleans()).filter(
        lambda c: bool(c.codepoints())
    )


LEAF = st.one_of(
    TEXT.map(L),
    char_classes(),
    st.just(ir.ANY_CHAR),
    st.builds(lambda i, n: ir.Token(ids=(i,), negated=n), st.integers(0, 70000), st.booleans()),
    st.just(ir.Token(name="<|eot_id|>")),  # one token in the llama-bpe vocabulary
    st.sampled_from(RULES).map(R),
)


def extend(children: st.SearchStrategy[ir.Node]) -> st.SearchStrategy[ir.Node]:
    counts = st.tuples(st.integers(0, 4), st.one_of(st.none(), st.integers(0, 4))).filter(
        lambda t: t[1] is None or t[1] >= t[0]
    )
    return st.one_of(
        st.lists(children, min_size=2, max_size=4).map(lambda xs: ir.seq(*xs)),
        st.lists(st.one_of(children, st.just(ir.EMPTY)), min_size=2, max_size=4).map(lambda xs: ir.alt(*xs)),
        st.builds(lambda x, c: ir.repeat(x, c[0], c[1]), children, counts),
    )


NODE = st.recursive(LEAF, extend, max_leaves=8)
GRAMMAR = st.fixed_dictionaries({name: NODE for name in RULES}).map(lambda rules: Grammar(rules, "root"))


TOKEN_FREE_LEAF = st.one_of(
    st.text(alphabet="ab", min_size=1, max_size=2).map(L),
    st.sampled_from([ir.char("a"), ir.char("b", negated=True), ir.ANY_CHAR]),
    st.sampled_from(["a", "b-2"]).map(R),
)


TOKEN_FREE_NODE = st.recursive(TOKEN_FREE_LEAF, extend, max_leaves=6)

# Fragments of GBNF text, valid and not, for comparing reader verdicts with llama.cpp's.
FRAGMENTS = [
    '"a"',
    '"b\\n"',
    '""',
    '"\\x41\\u00e9"',
    '"\\q"',
    "[a-c]",
    "[^x]",
    "[]",
    "[z-a]",
    "[\\]-]",
    ".",
    "a",
    "b",
    "root",
    "(",
    ")",
    "|",
    "*",
    "+",
    "?",
    "{2}",
    "{0,3}",
    "{1,}",
    "{0}",
    "{,2}",
    "{2001}",
    "{0,2001}",
    "{ 1 , 2 }",
    "<[5]>",
    "!<[6]>",
    "!a",
    " ",
    " ",
    "\n",
    "\n  ",
    "\r\n",
    "#c\n",
    "::=",
    "\\",
    "-",
    "'",
    "{",
]
ATOMS = ['"a"', '"b"', '""', "[a-c]", "[]", ".", "a", "b", "<[5]>", "(", ")", "|", "*", "?", "{0,2}", " "]
_FRAGMENT = st.one_of(st.sampled_from(ATOMS), st.sampled_from(FRAGMENTS))
GBNF_TEXT = st.builds(
    lambda root, others: (
        'a ::= "x"\nb ::= "y"\nroot ::= ' + "".join(root) + "".join(f"\n{n} ::= " + "".join(b) for n, b in others)
    ),
    st.lists(_FRAGMENT, max_size=8),
    st.lists(st.tuples(st.sampled_from(["a", "b"]), st.lists(_FRAGMENT, max_size=5)), max_size=3),
)
