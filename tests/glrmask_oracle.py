"""glrmask 0.5.0 as a test oracle: compile GLRM text over a byte-level vocabulary and ask verdicts.

The vocabulary maps ids 0-255 to the single bytes and ids ``TOKEN_BASE + k`` to extra tokens (for
``extern token`` slots), so committing a byte string one id per byte walks the grammar byte by
byte. A verdict is ``"accept"`` (the whole input is a sentence), ``"prefix"`` (every byte was
allowed, the input is not yet a sentence) or ``"reject"`` (some byte was refused).

Tests import this module only through :func:`oracle_or_skip`, so the suite still runs (skipping
these comparisons) where glrmask is not installed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import pytest

#: First id of the extra (non-byte) tokens in the oracle vocabulary.
TOKEN_BASE = 256
#: Number of extra token ids available for ``extern token`` bindings.
EXTRA_TOKENS = 16
VOCAB_SIZE = TOKEN_BASE + EXTRA_TOKENS

Piece = "bytes | int"  # a byte string (one id per byte) or a whole extra token id


def oracle_or_skip() -> Any:
    """The glrmask module, or skip the calling test with the reason."""
    return pytest.importorskip("glrmask", reason="glrmask (the GLRM oracle) is not installed (pip install '.[test]')")


@lru_cache(maxsize=1)
def byte_vocab() -> Any:
    glrmask = oracle_or_skip()
    table = {i: bytes([i]) for i in range(256)}
    # extra tokens carry text no byte-level test uses, so they never shadow byte ids
    table.update({TOKEN_BASE + k: f"<extra{k}>".encode() for k in range(EXTRA_TOKENS)})
    return glrmask.Vocab.from_id_to_bytes(table)


class Oracle:
    """One compiled GLRM grammar; :meth:`verdict` runs an input through a fresh state."""

    def __init__(self, source: str, bindings: dict[str, Any] | None = None, *, default_strategy: bool = False) -> None:
        glrmask = oracle_or_skip()
        grammar = glrmask.Grammar.from_glrm(source)
        for name, value in (bindings or {}).items():
            if isinstance(value, (list, tuple, set, frozenset)):
                value = glrmask.TokenSet(sorted(value))
            grammar.bind(**{name: value})
        # TOKEN_TRIE: masks computed per call; the default (PARSER_DWA) precomputation takes
        # minutes on some small recursive grammars. (The two differ on one refused construct: an
        # extern grammar in `-`, an error by default, silently not subtracted with TOKEN_TRIE.)
        strategy = None if default_strategy else glrmask.MaskStrategy.TOKEN_TRIE
        self.constraint = grammar.compile(byte_vocab(), mask_strategy=strategy)

    def verdict(self, pieces: bytes | str | Sequence[bytes | int]) -> str:
        state = self.constraint.start()
        for tok in _token_ids(pieces):
            # commit_token of a token outside the mask does not always return False, so the
            # mask decides what is allowed
            if not state.mask(size=VOCAB_SIZE)[tok] or not state.commit_token(tok):
                return "reject"
        return "accept" if state.is_accepting() else "prefix"

    def accepts(self, pieces: bytes | str | Sequence[bytes | int]) -> bool:
        return self.verdict(pieces) == "accept"


def completes_within(constraint: Any, data: bytes, extra: int = 4, max_states: int = 2_000) -> bool:
    """Whether glrmask (``constraint``, compiled over :func:`byte_vocab`) accepts some extension
    of ``data`` by at most ``extra`` bytes.

    glrmask keeps a prefix alive where a greedy terminal can never end in its context
    (``A A`` with ``A = /a+/``); structgen's matcher rejects it. Where the two differ so, this
    bounded search tells such a dead end from a real difference of language. States are told
    apart by their masks (states with the same next bytes are searched once: a heuristic, which
    keeps ``[a-z]+`` from branching 26 ways per byte)."""
    state = constraint.start()
    for tok in data:
        state.commit_token(tok)
    frontier = [state]
    seen: set[tuple[bool, bytes]] = set()
    for _ in range(extra + 1):
        nxt = []
        for st in frontier:
            if st.is_accepting():
                return True
            mask = st.mask(size=VOCAB_SIZE)
            for b in range(256):
                if mask[b]:
                    child = st.copy()
                    child.commit_token(b)
                    key = (child.is_accepting(), bytes(child.mask(size=VOCAB_SIZE)[:256]))
                    if key not in seen:
                        seen.add(key)
                        nxt.append(child)
        if len(seen) > max_states:
            return True  # too many to rule out: count it as a real difference
        frontier = nxt
    return False


def verdicts_agree(oracle: Any, ours: str, pieces: bytes | str | Sequence[bytes | int]) -> bool:
    """Whether glrmask's verdict on ``pieces`` is structgen's ``ours``, counting a prefix that glrmask
    keeps alive and structgen rejects as agreement when glrmask completes it within a few bytes
    neither (a greedy terminal that can never end in its context; :func:`completes_within`).
    ``oracle``: an :class:`Oracle` or anything with its ``verdict`` and ``constraint``."""
    theirs = oracle.verdict(pieces)
    if theirs == ours:
        return True
    if (ours, theirs) != ("reject", "prefix") or not isinstance(pieces, (str, bytes)):
        return False
    return not completes_within(oracle.constraint, pieces.encode("utf-8") if isinstance(pieces, str) else pieces)


def _token_ids(pieces: bytes | str | Sequence[bytes | int]) -> Iterable[int]:
    if isinstance(pieces, str):
        pieces = pieces.encode("utf-8")
    if isinstance(pieces, (bytes, bytearray)):
        yield from pieces
        return
    for p in pieces:
        if isinstance(p, int):
            yield p
        else:
            yield from (p.encode("utf-8") if isinstance(p, str) else p)


def glrmask_error(source: str) -> str | None:
    """The error message glrmask gives for ``source`` (parse or compile), or None if it compiles."""
    try:
        Oracle(source)
    except ValueError as exc:
        return str(exc)
    return None


def matcher_verdict(grammar: Any, pieces: bytes | str | Sequence[bytes | int]) -> str:
    """The same three-way verdict from structgen's reference matcher (extra tokens by id)."""
    m = grammar.matcher()
    if isinstance(pieces, str):
        pieces = pieces.encode("utf-8")
    if isinstance(pieces, (bytes, bytearray)):
        pieces = [pieces]
    for p in pieces:
        if not isinstance(p, int) and not p:
            continue  # nothing fed, nothing refused (as in the oracle, which refuses tokens)
        ok = m.feed_token(p, b"") if isinstance(p, int) else m.feed(p.encode() if isinstance(p, str) else p)
        if not ok:
            return "reject"
    return "accept" if m.is_accepting() else "prefix"
