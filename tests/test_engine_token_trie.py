"""The token trie (token_trie.py) against a plain Python construction of the same levels.

The builder works on the flat byte buffer with numpy (byte order by a fixed-width string sort,
common prefixes column by column, UTF-8 well-formedness from self-synchronisation); the
reference below spells every field out from the prefixes of the sorted tokens, with Python's
own UTF-8 decoder for well-formedness.
"""

from __future__ import annotations

import codecs
from collections import Counter
from itertools import accumulate

import numpy as np
import pytest
from engine_support import load_vocab
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen.engine.token_trie import build_token_trie


def _well_formed(data: bytes) -> bool:
    """Valid UTF-8, the last character possibly cut short (what is cut off must still be able
    to become a character: Python's incremental decoder waits for a third byte before refusing
    ``ED A0``, a surrogate's start, so the cut-off part is completed both ways and decoded)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        decoder.decode(data, final=False)
    except UnicodeDecodeError:
        return False
    tail = decoder.getstate()[0]
    if not tail:
        return True
    size = 2 if tail[0] < 0xE0 else 3 if tail[0] < 0xF0 else 4
    for fill in (b"\x80", b"\xbf"):
        try:
            (tail + fill * 3)[:size].decode("utf-8")
            return True
        except UnicodeDecodeError:
            pass
    return False


def _reference(tokens: list[bytes | None], is_text: list[bool]) -> dict[str, list[list]]:
    ids = sorted((i for i, t in enumerate(tokens) if is_text[i] and t), key=lambda i: (tokens[i], i))
    toks: list[bytes] = [tokens[i] for i in ids]  # type: ignore[misc]
    width = max((len(t) for t in toks), default=0)
    out: dict[str, list[list]] = {
        name: [] for name in ("byte", "child_start", "child_count", "tok_start", "tok_count", "run_start", "run_end")
    }
    out["below"], out["utf8_below"], out["sorted_ids"] = [], [], [ids]
    prev: list[bytes] = [b""]
    longer = list(range(len(toks)))  # positions of the tokens longer than k
    for k in range(width):
        longer = [j for j in longer if len(toks[j]) > k]
        # the nodes: distinct prefixes, each with the positions of the tokens under it (sorted
        # tokens sharing a prefix are contiguous)
        nodes: list[bytes] = []
        under: list[list[int]] = []
        for j in longer:
            p = toks[j][: k + 1]
            if not nodes or nodes[-1] != p:
                nodes.append(p)
                under.append([])
            under[-1].append(j)
        out["byte"].append([p[-1] for p in nodes])
        if k:
            per_parent = Counter(p[:-1] for p in nodes)
            counts = [per_parent[q] for q in prev]
            out["child_count"].append(counts)
            out["child_start"].append(list(accumulate(counts, initial=0))[:-1])
        ts, tc, rs, re_, below, utf8 = [], [], [], [], [], []
        for p, js in zip(nodes, under):
            ending = [j for j in js if toks[j] == p]
            tc.append(len(ending))
            ts.append(ending[0] if ending else 0)
            rs.append(js[0])
            re_.append(js[-1] + 1)
            bits = 0
            for j in js:
                for b in toks[j][k + 1 :]:
                    bits |= 1 << b
            below.append(bits)
            utf8.append(all(_well_formed(toks[j][k + 1 :]) for j in js))
        for name, values in (("tok_start", ts), ("tok_count", tc), ("run_start", rs), ("run_end", re_)):
            out[name].append(values)
        out["below"].append(below)
        out["utf8_below"].append(utf8)
        prev = nodes
    if width:
        out["child_count"].append([0] * len(prev))
        out["child_start"].append([0] * len(prev))
    return out


def _built(tokens: list[bytes | None], is_text: list[bool], **build: int) -> dict[str, list[list]]:
    trie = build_token_trie(tokens, np.asarray(is_text, dtype=bool), **build)

    def bits(row: np.ndarray) -> int:
        words = row.tolist()
        return words[0] | words[1] << 64 | words[2] << 128 | words[3] << 192

    return {
        "byte": [a.tolist() for a in trie.level_byte],
        "child_start": [a.tolist() for a in trie.child_start],
        "child_count": [a.tolist() for a in trie.child_count],
        "tok_start": [a.tolist() for a in trie.tok_start],
        "tok_count": [a.tolist() for a in trie.tok_count],
        "run_start": [a.tolist() for a in trie.run_start],
        "run_end": [a.tolist() for a in trie.run_end],
        "below": [[bits(r) for r in a] for a in trie.below],
        "utf8_below": [a.tolist() for a in trie.utf8_below],
        "sorted_ids": [trie.sorted_ids.tolist()],
    }


def _check(tokens: list[bytes | None], is_text: list[bool], **build: int) -> None:
    want, got = _reference(tokens, is_text), _built(tokens, is_text, **build)
    for name, levels in want.items():
        assert got[name] == levels, name


# bytes that make UTF-8 interesting: ASCII, zero bytes (the fixed-width sort pads with them),
# continuation bytes, every kind of lead, bytes that never start a character
_BYTES = st.sampled_from(
    [0x00, 0x22, 0x61, 0x62, 0x80, 0x9F, 0xA0, 0xBF, 0xC0, 0xC3, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF8]
)
_TOKEN = st.one_of(st.none(), st.binary(max_size=0), st.lists(_BYTES, min_size=1, max_size=7).map(bytes))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_TOKEN, st.booleans()), max_size=40))
def test_trie_equals_reference(vocab: list[tuple[bytes | None, bool]]) -> None:
    _check([t for t, _ in vocab], [text for _, text in vocab])


def test_trailing_zero_bytes_sort_by_length() -> None:
    """``b"a"``, ``b"a\\x00"`` and ``b"a\\x00\\x00"`` are equal as zero-padded strings: their
    byte order is by length, and equal tokens keep their ids' order."""
    _check([b"a\x00\x00", b"a", b"a\x00", b"a", b"\x00", b"b"], [True] * 6)


def test_a_very_long_token_sorts_without_padding() -> None:
    """Past the padding budget (a vocabulary with a very long token) the order is Python's."""
    tokens: list[bytes | None] = [b"b", b"a" * 5000, b"ab", b"a", b"\xc3\xa9", b"a\x00"]
    _check(tokens, [True] * len(tokens), max_padded_bytes=1000)


@pytest.mark.parametrize("vocab_name", ["llama-spm", "llama-bpe"])
def test_real_vocabulary_trie_equals_reference(vocab_name: str) -> None:
    vocab = load_vocab(vocab_name)
    if vocab_name == "llama-bpe":
        # a sample (the reference takes seconds per 10,000 tokens): 20,000 tokens with the
        # byte-level quirks the full vocabulary has (long whitespace runs, split characters)
        rng = np.random.default_rng(11)
        picked = sorted(rng.choice(vocab.n_tokens, size=20_000, replace=False).tolist())
    else:
        picked = list(range(vocab.n_tokens))
    tokens = [vocab.token_bytes(i) for i in picked]
    is_text = [bool(vocab.is_text[i]) for i in picked]
    _check(tokens, is_text)
