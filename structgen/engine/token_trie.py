"""The vocabulary as a byte trie laid out level by level, for vectorised walks.

Text tokens are sorted by their bytes; the trie node at depth ``k`` is a distinct prefix of length
``k + 1``. Each level is a set of flat numpy arrays: the byte of each node, where its children
start in the next level (children of one node are contiguous, because all tokens sharing a
prefix are contiguous in sorted order) and how many there are, and which tokens end at the node.
A walk from an automaton state then advances all live nodes of a level with one gather, and
never visits the subtree of a dead node. The trie knows nothing about grammars.

Built once per vocabulary (0.2-0.3 s for Llama 3's 128k tokens, 0.4-0.5 s for Gemma 3's 262k;
``docs/performance.md``) and cached on disk by the vocabulary's fingerprint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .arrays import ranges


@dataclass(frozen=True)
class LevelViews:
    """Memoryviews of one trie level (see :meth:`TokenTrie.views`)."""

    byte: memoryview
    child_start: memoryview
    child_count: memoryview
    tok_start: memoryview
    tok_count: memoryview
    run_start: memoryview
    run_end: memoryview
    below: memoryview
    utf8_below: memoryview


@dataclass(frozen=True)
class TokenTrie:
    """Level-ordered byte trie over a vocabulary's text tokens."""

    n_tokens: int  #: ids covered: 0 .. n_tokens - 1
    level_byte: tuple[np.ndarray, ...]  #: uint8 per node
    child_start: tuple[np.ndarray, ...]  #: int64 per node: first child in the next level
    child_count: tuple[np.ndarray, ...]  #: int32 per node
    tok_start: tuple[np.ndarray, ...]  #: int64 per node: first entry in ``sorted_ids``
    tok_count: tuple[np.ndarray, ...]  #: int32 per node
    run_start: tuple[np.ndarray, ...]  #: int64 per node: its subtree's tokens are sorted_ids[run_start:run_end]
    run_end: tuple[np.ndarray, ...]
    below: tuple[np.ndarray, ...]  #: uint64 (nodes, 4): the bytes anywhere below the node, as a bit set
    utf8_below: tuple[np.ndarray, ...]  #: bool per node: every token's bytes below it are well-formed UTF-8
    sorted_ids: np.ndarray  #: text token ids in byte order

    @property
    def depth(self) -> int:
        return len(self.level_byte)

    def views(self) -> list[LevelViews]:
        """Per level, memoryviews of the arrays: element access returns Python ints cheaply
        (for walks that finish in Python on a few nodes)."""
        cached = self.__dict__.get("_views")
        if cached is None:
            cached = [
                LevelViews(
                    memoryview(self.level_byte[k]),
                    memoryview(self.child_start[k]),
                    memoryview(self.child_count[k]),
                    memoryview(self.tok_start[k]),
                    memoryview(self.tok_count[k]),
                    memoryview(self.run_start[k]),
                    memoryview(self.run_end[k]),
                    memoryview(np.ascontiguousarray(self.below[k]).reshape(-1)),
                    memoryview(self.utf8_below[k].astype(np.uint8)),
                )
                for k in range(self.depth)
            ]
            object.__setattr__(self, "_views", cached)
        return cached

    _FIELDS = (
        "level_byte",
        "child_start",
        "child_count",
        "tok_start",
        "tok_count",
        "run_start",
        "run_end",
        "below",
        "utf8_below",
    )

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat arrays (one per field, levels concatenated) for the on-disk cache."""
        sizes = np.asarray([lv.size for lv in self.level_byte], dtype=np.int64)
        out: dict[str, np.ndarray] = {
            "n_tokens": np.array([self.n_tokens]),
            "sorted_ids": self.sorted_ids,
            "level_sizes": sizes,
        }
        for name in self._FIELDS:
            parts = getattr(self, name)
            out[name] = np.concatenate(parts) if parts else np.zeros(0)
        return out

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray]) -> TokenTrie:
        bounds = np.concatenate([[0], np.cumsum(a["level_sizes"])]).tolist()
        levels = range(len(bounds) - 1)
        fields = {name: tuple(a[name][bounds[k] : bounds[k + 1]] for k in levels) for name in cls._FIELDS}
        return cls(int(a["n_tokens"][0]), sorted_ids=a["sorted_ids"], **fields)


#: The fixed-width sort pads every token to the longest: above this many bytes (a vocabulary
#: with a few very long tokens) Python's sort of the byte strings is used instead.
MAX_PADDED_BYTES = 1 << 26


def build_token_trie(
    tokens: Sequence[bytes | None], is_text: np.ndarray, *, max_padded_bytes: int = MAX_PADDED_BYTES
) -> TokenTrie:
    """Build the trie of the text tokens (``is_text[i]`` and non-empty ``tokens[i]``)."""
    lengths = np.asarray([len(t) if t else 0 for t in tokens], dtype=np.int64)
    offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    buffer = np.frombuffer(b"".join(t or b"" for t in tokens), dtype=np.uint8)
    return build_token_trie_from_buffer(
        buffer, offsets, np.asarray(is_text, dtype=bool), max_padded_bytes=max_padded_bytes
    )


def build_token_trie_from_buffer(
    buffer: np.ndarray, offsets: np.ndarray, is_text: np.ndarray, *, max_padded_bytes: int = MAX_PADDED_BYTES
) -> TokenTrie:
    """Build the trie from a vocabulary's concatenated token bytes and their offsets
    (``max_padded_bytes``: the padding budget of the byte sort, :data:`MAX_PADDED_BYTES`; the
    trie is the same whatever it is).

    Everything is read from the flat buffer (no padded token-by-byte matrix: 128k tokens of up
    to 256 bytes would be tens of MB to fill, compare and reorder): a node's byte is one gather
    per level, and the two per-token facts the levels need come from short passes over the bytes
    (:func:`_adjacent_lcp`, :func:`_well_formed_from`)."""
    buffer = np.asarray(buffer, dtype=np.uint8)
    offsets = np.asarray(offsets, dtype=np.int64)
    all_lengths = np.diff(offsets)
    n_all = all_lengths.size
    candidates = np.flatnonzero(is_text[:n_all] & (all_lengths > 0))
    sorted_ids = _byte_order(buffer, offsets, candidates, max_padded_bytes).astype(np.int32)
    n = sorted_ids.size
    if n == 0:
        return TokenTrie(n_all, (), (), (), (), (), (), (), (), (), sorted_ids)
    lengths = all_lengths[sorted_ids]
    starts = offsets[sorted_ids]  # where each sorted token's bytes start in ``buffer``
    width = int(lengths.max())
    # lcp[i] = longest common prefix of token i-1 and token i (0 for i == 0)
    lcp = _adjacent_lcp(buffer, starts, lengths)
    # wf[p]: the bytes of p's token from p on are well-formed UTF-8 (one extra True at the end)
    wf = _well_formed_from(buffer, offsets)
    level_byte, child_start, child_count, tok_start, tok_count = [], [], [], [], []
    run_start, run_end, utf8_below = [], [], []
    node_prev = np.zeros(n, dtype=np.int64)  # each token's node at the previous level
    prev_n_nodes = 1
    alive = np.arange(n)  # tokens longer than k, in sorted order
    for k in range(width):
        alive = alive[lengths[alive] > k]
        # tokens sharing a (k+1)-byte prefix are contiguous: a node starts where the prefix changes
        starts_node = lcp[alive] <= k
        node_of_alive = np.cumsum(starts_node) - 1
        first_tokens = alive[starts_node]
        n_nodes = first_tokens.size
        level_byte.append(buffer[starts[first_tokens] + k])
        # children of the previous level's nodes
        parents = node_prev[first_tokens] if k else np.zeros(n_nodes, dtype=np.int64)
        counts = np.bincount(parents, minlength=prev_n_nodes).astype(np.int32)
        cstart = np.zeros(prev_n_nodes, dtype=np.int64)
        np.cumsum(counts[:-1], out=cstart[1:])
        if k > 0:
            child_start.append(cstart)
            child_count.append(counts)
        # tokens ending at each node of this level (contiguous in sorted order)
        ending = lengths[alive] == k + 1
        end_nodes = node_of_alive[ending]
        tc = np.bincount(end_nodes, minlength=n_nodes).astype(np.int32)
        ts = np.zeros(n_nodes, dtype=np.int64)
        if end_nodes.size:
            uniq, idx = np.unique(end_nodes, return_index=True)
            ts[uniq] = alive[ending][idx]
        tok_start.append(ts)
        tok_count.append(tc)
        # each node's subtree is a contiguous run of sorted tokens
        last = np.r_[np.flatnonzero(np.diff(node_of_alive)), node_of_alive.size - 1]
        run_start.append(first_tokens.astype(np.int64))
        run_end.append(alive[last].astype(np.int64) + 1)
        group_starts = np.r_[0, last[:-1] + 1]
        # a token ending at the node has nothing below it: well-formed
        below_ok = wf[starts[alive] + k + 1] | ending
        utf8_below.append(np.minimum.reduceat(below_ok, group_starts).astype(bool))
        node_prev[alive] = node_of_alive
        prev_n_nodes = n_nodes
    # the last level has no children
    child_start.append(np.zeros(prev_n_nodes, dtype=np.int64))
    child_count.append(np.zeros(prev_n_nodes, dtype=np.int32))
    # bottom-up: the bytes below a node are its children's bytes and what is below them
    below: list[np.ndarray] = [np.zeros((0, 4), np.uint64)] * width
    below[width - 1] = np.zeros((level_byte[width - 1].size, 4), dtype=np.uint64)
    for k in range(width - 2, -1, -1):
        child_bytes = level_byte[k + 1]
        own = below[k + 1].copy()
        own[np.arange(child_bytes.size), child_bytes >> 6] |= np.left_shift(
            np.uint64(1), (child_bytes & 63).astype(np.uint64)
        )
        out = np.zeros((level_byte[k].size, 4), dtype=np.uint64)
        has = child_count[k] > 0
        if has.any():
            out[has] = np.bitwise_or.reduceat(own, child_start[k][has], axis=0)
        below[k] = out
    return TokenTrie(
        n_all,
        tuple(level_byte),
        tuple(child_start),
        tuple(child_count),
        tuple(tok_start),
        tuple(tok_count),
        tuple(run_start),
        tuple(run_end),
        tuple(below),
        tuple(utf8_below),
        sorted_ids,
    )


def _byte_order(buffer: np.ndarray, offsets: np.ndarray, ids: np.ndarray, max_padded_bytes: int) -> np.ndarray:
    """``ids`` (ascending) sorted by their tokens' bytes, equal tokens by id: numpy's stable
    sort of the tokens as fixed-width strings, zero-padded (half the time of Python's sort of
    128k byte strings). Such strings compare equal when they differ only in trailing zero bytes
    (``b"a"`` and ``b"a\\x00"``), whose true order is by length: where that happens, Python's
    sort of the bytes decides."""
    if ids.size == 0:
        return ids
    lengths = np.diff(offsets)[ids]
    width = int(lengths.max())
    if ids.size * width > max_padded_bytes:
        return _python_byte_order(buffer, offsets, ids)  # a few very long tokens: no padding
    padded = np.zeros(ids.size * width, dtype=np.uint8)
    padded[ranges(np.arange(ids.size, dtype=np.int64) * width, lengths)] = buffer[ranges(offsets[ids], lengths)]
    strings = padded.view(f"S{width}")
    order = np.argsort(strings, kind="stable")
    ranked = strings[order]
    tied = np.flatnonzero(ranked[1:] == ranked[:-1])
    if tied.size and np.any(lengths[order[tied]] != lengths[order[tied + 1]]):
        return _python_byte_order(buffer, offsets, ids)
    return ids[order]


def _python_byte_order(buffer: np.ndarray, offsets: np.ndarray, ids: np.ndarray) -> np.ndarray:
    raw = buffer.tobytes()
    starts = offsets.tolist()
    return np.asarray(sorted(ids.tolist(), key=lambda i: raw[starts[i] : starts[i + 1]]), dtype=np.int64)


def _adjacent_lcp(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """For tokens in byte order, the length of the common prefix of each with the one before
    (0 for the first): column by column over the pairs still equal, which most pairs leave
    after a byte or two."""
    n = lengths.size
    lcp = np.zeros(n, dtype=np.int64)
    pair = np.arange(1, n)  # the pairs (i - 1, i) equal on the first j bytes
    j = 0
    while pair.size:
        both = (lengths[pair - 1] > j) & (lengths[pair] > j)
        at = np.flatnonzero(both)
        same = np.zeros(pair.size, dtype=bool)
        same[at] = buffer[starts[pair[at] - 1] + j] == buffer[starts[pair[at]] + j]
        lcp[pair[~same]] = j
        pair = pair[same]
        j += 1
    return lcp


def _well_formed_from(buffer: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``wf[p]``: the bytes from ``p`` to the end of its token (tokens are ``buffer[offsets[i]:
    offsets[i + 1]]``) are well-formed UTF-8, the last character possibly cut short; one more
    entry for the position after the buffer. The empty suffix of a token is the next token's
    first position here: the caller treats a token that ends there as well-formed itself.

    UTF-8 synchronises itself: characters start exactly at the bytes that are not continuation
    bytes, whichever position a suffix starts from. So a suffix is well-formed when it does not
    start with a continuation byte and no position in it is *bad*: a byte that never starts a
    character (``C0``, ``C1``, ``F5``-``FF``), a lead byte whose character breaks inside the
    token, or a continuation byte that no valid character prefix before it covers. One pass per
    continuation position (at most three) over the lead bytes, and a cumulative count per
    token."""
    b = np.asarray(buffer, dtype=np.uint8)
    size = int(offsets[-1]) if offsets.size else 0
    b = b[:size]
    first = int(offsets[0]) if offsets.size else 0
    # per position: its token's end (bytes before the first token: one more token)
    token_end = np.concatenate([np.full(first, first, dtype=np.int64), np.repeat(offsets[1:], np.diff(offsets))])
    cont = (b & 0xC0) == 0x80
    need = _SEQ_LEN[b]
    bad = (need == 0) & ~cont
    covered = np.zeros(size, dtype=bool)
    leads = np.flatnonzero(need >= 2)
    intact = np.ones(leads.size, dtype=bool)  # the character so far is a valid prefix
    for t in (1, 2, 3):
        pos = leads + t
        inside = np.flatnonzero((need[leads] > t) & (pos < token_end[leads]))
        got = b[pos[inside]]
        if t == 1:
            lead = b[leads[inside]]
            good = (got >= _SECOND_LO[lead]) & (got <= _SECOND_HI[lead])
        else:
            good = (got >= 0x80) & (got <= 0xBF)
        bad[leads[inside[~good]]] = True
        intact[inside] &= good
        covered[pos[inside[intact[inside]]]] = True
    bad |= cont & ~covered
    count = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(bad, out=count[1:])
    wf = np.ones(size + 1, dtype=bool)
    wf[:size] = ~cont & (count[token_end] == count[:size])
    return wf


# (first byte range, sequence length, allowed range of the second byte)
_LEADS = (
    (0xC2, 0xDF, 2, 0x80, 0xBF),
    (0xE0, 0xE0, 3, 0xA0, 0xBF),
    (0xE1, 0xEC, 3, 0x80, 0xBF),
    (0xED, 0xED, 3, 0x80, 0x9F),
    (0xEE, 0xEF, 3, 0x80, 0xBF),
    (0xF0, 0xF0, 4, 0x90, 0xBF),
    (0xF1, 0xF3, 4, 0x80, 0xBF),
    (0xF4, 0xF4, 4, 0x80, 0x8F),
)


def _lead_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per byte: the length of the character it starts (1 for ASCII, 0 for continuation and
    invalid bytes), and the range allowed for the character's second byte."""
    seq_len = np.zeros(256, dtype=np.int8)
    seq_len[:0x80] = 1
    lo = np.zeros(256, dtype=np.uint8)
    hi = np.zeros(256, dtype=np.uint8)
    for first_lo, first_hi, length, s_lo, s_hi in _LEADS:
        seq_len[first_lo : first_hi + 1] = length
        lo[first_lo : first_hi + 1] = s_lo
        hi[first_lo : first_hi + 1] = s_hi
    return seq_len, lo, hi


_SEQ_LEN, _SECOND_LO, _SECOND_HI = _lead_tables()
