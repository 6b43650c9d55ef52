"""Shared helpers of the engine tests: example grammars, vocabularies and the reference mask.

The reference mask of a state is computed with the byte-level matcher alone (no engine code):
tokens are visited in byte order, so consecutive tokens share a prefix and the matcher only
rolls back to the common prefix and feeds the rest.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest

from structgen import Grammar
from structgen.grammar import ir

ASSETS = os.environ.get("STRUCTGEN_ASSETS", os.path.join(os.path.dirname(__file__), "..", ".assets"))

A, L = ir.Ref, ir.lit


def json_grammar() -> Grammar:
    """Any JSON value (RFC 8259), whitespace unbounded: a recursive grammar."""
    ws = ir.star(ir.char(" ", "\t", "\n", "\r"))
    hexd = ir.char((48, 57), (97, 102), (65, 70))
    string = ir.seq(
        L('"'),
        ir.star(
            ir.alt(
                ir.CharClass(((0, 31), (34, 34), (92, 92)), negated=True),
                ir.seq(
                    L("\\"),
                    ir.alt(ir.char('"', "\\", "/", "b", "f", "n", "r", "t"), ir.seq(L("u"), ir.Repeat(hexd, 4, 4))),
                ),
            )
        ),
        L('"'),
    )
    digits = ir.plus(ir.char((48, 57)))
    number = ir.seq(
        ir.opt(L("-")),
        ir.alt(L("0"), ir.seq(ir.char((49, 57)), ir.star(ir.char((48, 57))))),
        ir.opt(ir.seq(L("."), digits)),
        ir.opt(ir.seq(ir.char("e", "E"), ir.opt(ir.char("+", "-")), digits)),
    )
    rules = {
        "root": ir.seq(ws, A("value"), ws),
        "value": ir.alt(A("object"), A("array"), A("string"), A("number"), L("true"), L("false"), L("null")),
        "object": ir.seq(
            L("{"), ws, ir.opt(ir.seq(A("member"), ir.star(ir.seq(ws, L(","), ws, A("member"))))), ws, L("}")
        ),
        "member": ir.seq(A("string"), ws, L(":"), ws, A("value")),
        "array": ir.seq(
            L("["), ws, ir.opt(ir.seq(A("value"), ir.star(ir.seq(ws, L(","), ws, A("value"))))), ws, L("]")
        ),
        "string": string,
        "number": number,
    }
    return Grammar(rules, "root")


def person_grammar() -> Grammar:
    """A regular, JSON-Schema-like grammar: fixed keys, an enum, a bounded string, an integer range."""
    name = ir.seq(L('"'), ir.Repeat(ir.CharClass(((0, 31), (34, 34), (92, 92)), negated=True), 1, 12), L('"'))
    age = ir.alt(ir.seq(ir.char((49, 57)), ir.opt(ir.char((48, 57)))), L("0"), L("100"))
    role = ir.alt(L('"admin"'), L('"user"'), L('"guest"'))
    sp = ir.opt(L(" "))
    body = ir.seq(
        L("{"),
        L('"name":'),
        sp,
        name,
        L(","),
        sp,
        L('"age":'),
        sp,
        age,
        L(","),
        sp,
        L('"role":'),
        sp,
        role,
        ir.opt(
            ir.seq(
                L(","), sp, L('"tags":'), sp, L("["), ir.opt(ir.seq(name, ir.star(ir.seq(L(","), sp, name)))), L("]")
            )
        ),
        L("}"),
    )
    return Grammar({"root": body}, "root")


def token_grammar() -> Grammar:
    """Token atoms around free text (llama.cpp's `<[id]>` / `!<[id]>`)."""
    return Grammar({"root": ir.seq(ir.Token((10,)), ir.star(ir.Token((11,), negated=True)), ir.Token((11,)))}, "root")


def lexeme_grammar() -> Grammar:
    """GLRM-style greedy terminals: identifiers, '=' and numbers, with optional spaces."""
    ident = ir.Lexeme(ir.plus(ir.char((97, 122))))
    num = ir.Lexeme(ir.plus(ir.char((48, 57))))
    sp = ir.star(L(" "))
    stmt = ir.seq(ident, sp, L("="), sp, ir.alt(num, ident), L(";"))
    return Grammar({"root": ir.plus(ir.seq(stmt, sp))}, "root")


VOCAB_FILES = {
    "llama-bpe": "vocab/ggml-vocab-llama-bpe.gguf",
    "qwen2": "vocab/ggml-vocab-qwen2.gguf",
    "llama-spm": "vocab/ggml-vocab-llama-spm.gguf",
    "gemma3": "models/gemma-3-270m-q4_k_m.gguf",
}


@functools.lru_cache(maxsize=None)
def load_vocab(name: str):  # type: ignore[no-untyped-def]
    from structgen.vocab import Vocab

    path = os.path.join(ASSETS, VOCAB_FILES[name])
    if not os.path.exists(path):
        pytest.skip(f"asset {path} missing: run `make assets` (models: `python tools/fetch_assets.py --models`)")
    return Vocab.from_gguf(path)


def byte_tokens(vocab) -> dict[int, int]:  # type: ignore[no-untyped-def]
    """A text token of each single byte (every byte-level vocabulary has them)."""
    out: dict[int, int] = {}
    for tid in range(vocab.n_tokens):
        b = vocab.token_bytes(tid)
        if len(b) == 1 and vocab.is_text[tid]:
            out.setdefault(b[0], tid)
    return out


def greedy_tokens(vocab, text: bytes) -> list[int]:  # type: ignore[no-untyped-def]
    """Longest-match tokenization (tokens may cross grammar terminal boundaries, as real ones do)."""
    index = _text_index(vocab)
    longest = int(vocab.lengths.max())
    out, pos = [], 0
    while pos < len(text):
        for n in range(min(longest, len(text) - pos), 0, -1):
            t = index.get(text[pos : pos + n])
            if t is not None:
                out.append(t)
                pos += n
                break
        else:
            raise AssertionError(f"cannot tokenize {text[pos : pos + 8]!r}")
    return out


@functools.lru_cache(maxsize=8)
def _text_index(vocab):  # type: ignore[no-untyped-def]
    index: dict[bytes, int] = {}
    for i in np.flatnonzero(vocab.is_text).tolist():
        index.setdefault(vocab.token_bytes(i), i)
    return index


@functools.lru_cache(maxsize=8)
def _sorted_text_tokens(vocab):  # type: ignore[no-untyped-def]
    toks = [(vocab.token_bytes(i), i) for i in np.flatnonzero(vocab.is_text).tolist()]
    toks.sort()
    return toks


def reference_mask(grammar: Grammar, vocab, prefix: bytes) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Bool mask over the logit width computed by the byte-level matcher only."""
    allowed = np.zeros(vocab.logit_width, dtype=bool)
    m = grammar.matcher()
    assert m.feed(prefix), "prefix must be viable"
    base = m.position
    if m.is_accepting():
        allowed[list(vocab.eos_token_ids)] = True
    prev = b""
    alive_upto = 0  # bytes of prev fed successfully
    fed = 0  # bytes of prev fed (the last may have killed the matcher)
    for tok, tid in _sorted_text_tokens(vocab):
        lcp = 0
        limit = min(len(prev), len(tok))
        while lcp < limit and prev[lcp] == tok[lcp]:
            lcp += 1
        keep = min(lcp, fed)
        if fed > keep:
            m.rollback(fed - keep)
        fed = keep
        alive_upto = min(alive_upto, keep)
        ok = alive_upto == fed
        while ok and fed < len(tok):
            ok = m.feed(tok[fed : fed + 1])
            fed += 1
            if ok:
                alive_upto = fed
        if ok and fed == len(tok):
            allowed[tid] = True
        prev = tok
        assert m.position == base + fed
    return allowed


def pieces_vocab(docs: list[bytes], sizes: tuple[int, ...] = (2, 3, 4, 5, 6)):  # type: ignore[no-untyped-def]
    """A vocabulary of every byte and every piece of ``sizes`` bytes of ``docs``: tokens that
    cross every boundary the documents have."""
    from structgen import Vocab

    pieces = {doc[i : i + n] for doc in docs for n in sizes for i in range(len(doc) - n + 1)}
    return Vocab([bytes([b]) for b in range(256)] + sorted(pieces), eos_token_ids=[], special_token_ids=[])


def walk_against_matcher(c, grammar: Grammar, vocab, text: bytes, every: int = 1, first: int = 0) -> None:  # type: ignore[no-untyped-def]
    """Along ``text``'s greedy tokens from ``c``'s start, the mask equals the matcher's at steps
    ``first``, ``first + every``, ...; every token is committed."""
    state = c.start()
    done = b""
    for i, tok in enumerate(greedy_tokens(vocab, text)):
        if i % every == first:
            assert np.array_equal(state.mask(), reference_mask(grammar, vocab, done)), f"after {done!r}"
        assert state.commit_token(tok)
        done += vocab.token_bytes(tok)
