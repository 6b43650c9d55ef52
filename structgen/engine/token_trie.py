"""The vocabulary as a byte trie laid out level by level, for vectorised walks.

Text tokens are sorted by their bytes; the trie node at depth ``k`` is a distinct prefix of length
``k + 1``. Each level is a set of flat numpy arrays: the byte of each node, where its children
start in the next level (children of one node are contiguous, because all tokens sharing a
prefix are contiguous in sorted order) and how many there are, and which tokens end at the node.
A walk from an automaton state then advances all live nodes of a level with one gather, and
never visits the subtree of a dead node. The trie knows nothing about grammars.

Built once per vocabulary (about a second for 128k tokens, measured in docs/engine.md) and cached
on disk by the vocabulary's fingerprint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


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


def build_token_trie(tokens: Sequence[bytes | None], is_text: np.ndarray) -> TokenTrie:
    """Build the trie of the text tokens (``is_text[i]`` and non-empty ``tokens[i]``)."""
    lengths = np.asarray([len(t) if t else 0 for t in tokens], dtype=np.int64)
    offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    buffer = np.frombuffer(b"".join(t or b"" for t in tokens), dtype=np.uint8)
    return build_token_trie_from_buffer(buffer, offsets, np.asarray(is_text, dtype=bool))


def build_token_trie_from_buffer(buffer: np.ndarray, offsets: np.ndarray, is_text: np.ndarray) -> TokenTrie:
    """Build the trie from a vocabulary's concatenated token bytes and their offsets."""
    all_lengths = np.diff(offsets)
    n_all = all_lengths.size
    candidates = np.flatnonzero(is_text[:n_all] & (all_lengths > 0))
    raw = buffer.tobytes()
    starts_all = offsets.tolist()
    ids = sorted(candidates.tolist(), key=lambda i: raw[starts_all[i] : starts_all[i + 1]])
    n = len(ids)
    sorted_ids = np.asarray(ids, dtype=np.int32)
    if n == 0:
        return TokenTrie(n_all, (), (), (), (), (), (), (), (), (), sorted_ids)
    lengths = all_lengths[sorted_ids]
    width = int(lengths.max())
    # padded byte matrix, one row per sorted token, -1 past the end
    padded = np.full((n, width), -1, dtype=np.int16)
    row = np.repeat(np.arange(n), lengths)
    col = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    padded[row, col] = buffer[np.repeat(offsets[sorted_ids], lengths) + col]
    # lcp[i] = longest common prefix of token i-1 and token i (0 for i == 0)
    lcp = np.zeros(n, dtype=np.int64)
    if n > 1:
        differ = padded[1:] != padded[:-1]
        differ |= padded[1:] < 0
        lcp[1:] = np.argmax(np.concatenate([differ, np.ones((n - 1, 1), dtype=bool)], axis=1), axis=1)

    wf = _well_formed_suffixes(padded, lengths)
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
        level_byte.append(padded[first_tokens, k].astype(np.uint8))
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
        utf8_below.append(np.minimum.reduceat(wf[alive, k + 1], group_starts).astype(bool))
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


def _well_formed_suffixes(padded: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``wf[i, j]``: bytes ``j..`` of token ``i`` are well-formed UTF-8 (complete characters, the
    last possibly cut short); one column per position plus one for the empty suffix."""
    n, width = padded.shape
    # work in order of decreasing length, so that column j concerns a prefix of the rows
    order = np.argsort(-lengths, kind="stable")
    longer = n - np.cumsum(np.bincount(lengths, minlength=width + 1))  # tokens longer than j
    b = padded[order]
    ws = np.ones((n, width + 1), dtype=bool)
    for j in range(width - 1, -1, -1):
        m = int(longer[j])
        if m == 0:
            continue
        c = b[:m, j]
        res = (c < 0x80) & ws[:m, j + 1]
        high = np.flatnonzero(c >= 0xC2)
        if high.size:
            ch = c[high]
            for lo, hi, length, s_lo, s_hi in _LEADS:
                sel = (ch >= lo) & (ch <= hi)
                if not sel.any():
                    continue
                rows = high[sel]
                good = np.ones(rows.size, dtype=bool)
                ended = np.zeros(rows.size, dtype=bool)
                for t in range(1, length):
                    if j + t >= width:
                        ended[:] = True
                        break
                    bt = b[rows, j + t]
                    ended |= bt < 0
                    lo_t, hi_t = (s_lo, s_hi) if t == 1 else (0x80, 0xBF)
                    good &= ended | ((bt >= lo_t) & (bt <= hi_t))
                tail = ws[rows, j + length] if j + length <= width else True
                res[rows] = good & (ended | tail)
        ws[:m, j] = res
    wf = np.empty_like(ws)
    wf[order] = ws
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
