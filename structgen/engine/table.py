"""The engine's automaton as a numpy transition table, filled on demand, and the token walk.

Rows are configurations of :class:`~.configs.ConfigSystem`, columns are bytes; ``-1`` marks a
transition not computed yet and ``0`` the dead configuration. A vectorised walk of the
:class:`~.token_trie.TokenTrie` from one configuration gathers a whole trie level per numpy call
and asks the configuration system (in Python) only for the transitions no walk needed before;
filling a transition fills its whole byte class at once. Over a generation the table converges and
walks become pure numpy.
"""

from __future__ import annotations

import numpy as np

from ..grammar.utf8 import utf8_sequences
from .arrays import mask_to_bools, ranges
from .configs import DEAD, ConfigSystem
from .token_trie import TokenTrie

UNKNOWN = -1
_MULTIBYTE_SEQUENCES = utf8_sequences(0x80, 0xD7FF) + utf8_sequences(0xE000, 0x10FFFF)


class TransitionTable:
    """Lazily computed byte transitions between configurations."""

    def __init__(self, system: ConfigSystem, capacity: int = 1024) -> None:
        self.system = system
        self.rows = np.full((max(capacity, 16), 256), UNKNOWN, dtype=np.int32)
        self.rows[DEAD, :] = DEAD
        self._classes: dict[int, list[np.ndarray] | None] = {}
        self.filled = 0  # transitions computed by the configuration system (a cost measure)
        self._loops: dict[int, np.ndarray] = {}
        self._utf8: dict[int, bool] = {}

    def _grow(self) -> None:
        need = len(self.system.configs)
        if need <= self.rows.shape[0]:
            return
        cap = self.rows.shape[0]
        while cap < need:
            cap *= 2
        new = np.full((cap, 256), UNKNOWN, dtype=np.int32)
        new[: self.rows.shape[0]] = self.rows
        self.rows = new

    def step(self, cid: int, byte: int) -> int:
        r = int(self.rows[cid, byte]) if cid < self.rows.shape[0] else UNKNOWN
        if r == UNKNOWN:
            self._fill(cid, byte)
            r = int(self.rows[cid, byte])
        return r

    def _fill(self, cid: int, byte: int) -> None:
        target = self.system.step(cid, byte)
        self._grow()
        self.filled += 1
        for cls in self._class_masks(cid):
            if cls[byte]:
                self.rows[cid, cls] = target
                return
        self.rows[cid, byte] = target

    def _class_masks(self, cid: int) -> list[np.ndarray]:
        masks = self._classes.get(cid)
        if masks is None:
            parts = self.system.byte_classes(cid)
            masks = [mask_to_bools(p) for p in parts] if parts is not None else []
            self._classes[cid] = masks
        return masks

    def gather(self, configs: np.ndarray, byts: np.ndarray) -> np.ndarray:
        """``rows[configs, byts]`` with unknown transitions computed first."""
        out = self.rows[configs, byts]
        unknown = out == UNKNOWN
        if unknown.any():
            keys = np.unique(configs[unknown].astype(np.int64) * 256 + byts[unknown])
            for key in keys.tolist():
                cid, b = divmod(key, 256)
                if self.rows[cid, b] == UNKNOWN:
                    self._fill(cid, b)
            out = self.rows[configs, byts]
        return out

    def loop_sets(self, configs: np.ndarray) -> np.ndarray:
        """For each configuration, the bytes that lead back to it, as (n, 4) uint64 bit sets."""
        out = np.zeros((configs.size, 4), dtype=np.uint64)
        for i, cid in enumerate(configs.tolist()):
            bits = self._loops.get(cid)
            if bits is None:
                row = self.rows[cid]
                if (row == UNKNOWN).any():
                    self._fill_row(cid)
                    row = self.rows[cid]
                bits = np.packbits(row == cid, bitorder="little").view(np.uint64)
                self._loops[cid] = bits
            out[i] = bits
        return out

    def utf8_loop(self, cid: int) -> bool:
        """Whether every multi-byte UTF-8 character read from ``cid`` leads back to ``cid``
        (and every part of one to a live configuration)."""
        r = self._utf8.get(cid)
        if r is None:
            r = True
            for seq in _MULTIBYTE_SEQUENCES:
                frontier = {cid}
                for lo, hi in seq:
                    nxt: set[int] = set()
                    for st in frontier:
                        row = self.rows[st]
                        if (row[lo : hi + 1] == UNKNOWN).any():
                            self._fill_row(st)
                            row = self.rows[st]
                        nxt.update(np.unique(row[lo : hi + 1]).tolist())
                    if DEAD in nxt:
                        r = False
                        break
                    frontier = nxt
                if not r or frontier != {cid}:
                    r = False
                    break
            self._utf8[cid] = r
        return r

    def _fill_row(self, cid: int) -> None:
        masks = self._class_masks(cid)
        if masks:
            for cls in masks:
                b = int(np.argmax(cls))
                if self.rows[cid, b] == UNKNOWN:
                    self._fill(cid, b)
        for b in np.nonzero(self.rows[cid] == UNKNOWN)[0].tolist():
            if self.rows[cid, b] == UNKNOWN:
                self._fill(cid, b)

    def walk(self, cid: int, trie: TokenTrie) -> np.ndarray:
        """Ids of the text tokens whose bytes lead from configuration ``cid`` to a live one.

        A node whose configuration loops on every byte below it accepts its whole subtree at
        once (string bodies, digit runs): the walk never descends into it.
        """
        return self.walk_ends(cid, trie, with_ends=False)[0]

    def walk_ends(
        self, cid: int, trie: TokenTrie, *, with_ends: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Like :meth:`walk`, also giving each token's end configuration and a slack in bytes:
        tokens accepted in bulk under a multi-byte-character loop may end inside a character,
        up to 3 bytes short of the loop configuration they are reported with."""
        empty = np.zeros(0, dtype=np.int32)
        if trie.depth == 0 or cid == DEAD:
            return empty, empty, empty
        pieces: list[np.ndarray] = []
        end_pieces: list[np.ndarray] = []
        slack_pieces: list[np.ndarray] = []
        nodes = np.arange(trie.level_byte[0].size, dtype=np.int64)
        parent_states = np.full(nodes.size, cid, dtype=np.int32)
        states = self.gather(parent_states, trie.level_byte[0])
        for k in range(trie.depth):
            alive = states != DEAD
            nodes = nodes[alive]
            looped = states[alive] == parent_states[alive]
            states = states[alive]
            if nodes.size == 0:
                break
            # a state that just looped, or is back at the start, may loop on everything below
            bulk = np.zeros(nodes.size, dtype=bool)
            if k:
                looped |= states == cid
            if looped.any():
                cand = np.flatnonzero(looped)
                uniq, inverse = np.unique(states[cand], return_inverse=True)
                loops = self.loop_sets(uniq)
                below = trie.below[k][nodes[cand]]
                outside = below & ~loops[inverse]
                bulk[cand] = ~outside.any(axis=1)
                # or: loops on the ASCII bytes below and on every multi-byte character
                utf8 = np.asarray([self.utf8_loop(int(u)) for u in uniq])[inverse]
                more = ~bulk[cand] & utf8 & trie.utf8_below[k][nodes[cand]] & ~outside[:, :2].any(axis=1)
                bulk[cand] |= more
                if with_ends:
                    slack = np.zeros(nodes.size, dtype=np.int32)
                    slack[cand[more]] = 3
            if bulk.any():
                starts = trie.run_start[k][nodes[bulk]]
                counts = trie.run_end[k][nodes[bulk]] - starts
                pieces.append(ranges(starts, counts))
                if with_ends:
                    end_pieces.append(np.repeat(states[bulk], counts))
                    slack_pieces.append(np.repeat(slack[bulk], counts))
                keep = ~bulk
                nodes = nodes[keep]
                states = states[keep]
                if nodes.size == 0:
                    break
            tc = trie.tok_count[k][nodes]
            ends = tc > 0
            if ends.any():
                pieces.append(ranges(trie.tok_start[k][nodes[ends]], tc[ends]))
                if with_ends:
                    end_pieces.append(np.repeat(states[ends], tc[ends]))
                    slack_pieces.append(np.zeros(int(tc[ends].sum()), dtype=np.int32))
            if k + 1 == trie.depth:
                break
            counts = trie.child_count[k][nodes]
            has = counts > 0
            if not has.any():
                break
            counts = counts[has]
            starts = trie.child_start[k][nodes[has]]
            nodes = ranges(starts, counts)
            parent_states = np.repeat(states[has], counts)
            states = self.gather(parent_states, trie.level_byte[k + 1][nodes])
        if not pieces:
            return empty, empty, empty
        ids = trie.sorted_ids[np.concatenate(pieces)]
        if not with_ends:
            return ids, empty, empty
        return ids, np.concatenate(end_pieces), np.concatenate(slack_pieces)
