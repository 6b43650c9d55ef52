"""The engine's automaton as a numpy transition table, filled on demand, and the token walk.

Rows are configurations of :class:`~.configs.ConfigSystem`, columns are bytes; ``-1`` marks a
transition not computed yet and ``0`` the dead configuration. A vectorised walk of the
:class:`~.token_trie.TokenTrie` from one configuration gathers a whole trie level per numpy call
and asks the configuration system (in Python) only for the transitions no walk needed before;
filling a transition fills its whole byte class at once. Over a generation the table converges and
walks become pure numpy.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Callable

import numpy as np

from .. import caches
from ..grammar.utf8 import utf8_sequences
from .arrays import mask_to_bools, ranges, unique, unique_inverse
from .configs import DEAD, ConfigSystem
from .loop_regions import MULTIBYTE_SLACK, LoopRegion, loop_region, run_region
from .machines import is_call
from .terms import BYTES_K, HAS_SYM, NOTHING, REPEAT_K, SEQ_K
from .token_trie import LevelViews, TokenTrie
from .tuning import DEFAULT_ENGINE_TUNING, EngineTuning

UNKNOWN = -1
#: the exits of a walk over the hole: per trie level, the nodes whose byte returned into the hole
#: and those bytes
Exits = dict[int, tuple[np.ndarray, np.ndarray]]
#: Class masks whose byte arrays are kept, shared by every table in the process (each at most
#: 256 one-byte entries): every new constraint meets the same classes (``[^"\\]``, all bytes
#: but one literal byte...), and building an array costs a few numpy calls. Registered in
#: ``structgen.caches`` as ``engine.class_bytes``.
MAX_CLASS_ARRAYS = 1 << 14
_CLASS_BYTES: dict[int, np.ndarray] = {}
caches.register_dict(
    "engine.class_bytes", _CLASS_BYTES, estimate="deep_bytes: at most 256 bytes each, so the count bounds the bytes"
)
#: Byte partitions' byte -> class index arrays (256 entries each), shared the same way; registered
#: as ``engine.class_index``.
_CLASS_INDEX: dict[tuple[int, ...], np.ndarray] = {}
caches.register_dict(
    "engine.class_index", _CLASS_INDEX, estimate="deep_bytes: 2 KB each, so the count bounds the bytes"
)
ASCII_BITS = (1 << 128) - 1
#: the slack of positions a walk without end configurations adds (never read there)
_NO_SLACK = np.zeros(0, dtype=np.int32)
_MULTIBYTE_SEQUENCES = utf8_sequences(0x80, 0xD7FF) + utf8_sequences(0xE000, 0x10FFFF)


class TransitionTable:
    """Lazily computed byte transitions between configurations."""

    def __init__(
        self,
        system: ConfigSystem,
        capacity: int = 1024,
        tail_missing: Callable[[], np.ndarray] | None = None,
        tuning: EngineTuning = DEFAULT_ENGINE_TUNING,
    ) -> None:
        self.system = system
        self.tuning = tuning
        # the walk's thresholds and switches as attributes: read in its inner loops
        self._narrow = tuning.narrow
        self._narrow_children = tuning.narrow_children
        self._sparse_live = tuning.sparse_live
        self._literal_runs = tuning.literal_runs
        self._run_regions = tuning.run_regions
        self._run_exit_filter = tuning.run_exit_filter
        self._max_run_bytes = tuning.max_run_bytes
        self._choice_walks = tuning.choice_walks
        self._choice_live = tuning.choice_live
        self._choice_class = tuning.choice_class
        self._choice_excludes = tuning.choice_excludes
        self._loop_min = tuning.loop_region_min_bytes
        self._small_class = tuning.small_class
        #: per token id, the bytes its last character lacks (``Vocab.utf8_tail_missing``, asked
        #: for by the first walk with ends): the exact slack of tokens accepted in bulk that end
        #: inside a multi-byte character
        self._tail_missing = tail_missing
        self.rows = np.full((max(capacity, 16), 256), UNKNOWN, dtype=np.int32)
        self.rows[DEAD, :] = DEAD
        self._flat = memoryview(self.rows.reshape(-1))  # element access without numpy scalars
        self._loop_bits: dict[int, int] = {}
        self._live: dict[int, int] = {}
        self._before_loop: dict[int, tuple[int, int] | None] = {}
        self._classes: dict[int, tuple[int, ...] | None] = {}
        self.filled = 0  # transitions computed by the configuration system (a cost measure)
        self._loops: dict[int, np.ndarray] = {}
        self._utf8: dict[int, bool] = {}
        self._sparse: dict[int, tuple[int, ...] | None] = {}
        self._runs: dict[int, tuple[int, int | None, int] | None] = {}
        #: during a relative walk (:meth:`walk_relative`): ``(level, node)`` pairs where a return
        #: into the hole happened, a node an int (a Python level) or an array of them (a numpy
        #: level: the children of ``"`` after a key's quote are hundreds); None otherwise
        self._exits_met: list[tuple[int, int | np.ndarray]] | None = None
        #: configuration -> the same without the exit mark (itself where it has none)
        self._unmarked: dict[int, int] = {}
        self._literal: dict[int, tuple[bytes, tuple[int, ...], int] | None] = {}
        self._choice: dict[int, tuple[int, int] | None] = {}
        self._choosable: dict[tuple[int, int], bool] = {}
        self._term_rows: dict[int, tuple[int, ...]] = {}
        self._shared_loop_exits = tuning.shared_loop_exits
        #: (loop configuration, relative walk) -> what its walk finds beyond its loop region
        #: (:meth:`_beyond_loop`), and the bytes those arrays hold
        self._beyond: dict[tuple[int, bool], tuple[np.ndarray, dict[int, np.ndarray]]] = {}
        self._beyond_bytes = 0
        self._beyond_max = tuning.loop_exit_memo_bytes

    @property
    def memo_bytes(self) -> int:
        """Bytes the kept walks beyond loop regions hold (``tuning.loop_exit_memo_bytes`` bounds
        them)."""
        return self._beyond_bytes

    def _grow(self) -> None:
        need = len(self.system.configs)
        if need <= self.rows.shape[0]:
            return
        cap = self.rows.shape[0]
        while cap < need:
            # by half, not double: a row is 1 KB, and the capacity (what ``memory_bytes`` counts
            # and RSS holds: the new rows are written) is at most 1.5 times the configurations
            cap += cap // 2
        new = np.full((cap, 256), UNKNOWN, dtype=np.int32)
        new[: self.rows.shape[0]] = self.rows
        self.rows = new
        self._flat = memoryview(self.rows.reshape(-1))

    def restore_rows(self, rows: np.ndarray) -> None:
        """Take saved rows for the first configurations (a loaded constraint's, checked by the
        caller: targets within the configuration system)."""
        self._grow()
        self.rows[: rows.shape[0]] = rows

    def step(self, cid: int, byte: int) -> int:
        """One transition (computed if new); Python-speed, for commits and narrow walks."""
        key = cid * 256 + byte
        if key < len(self._flat):
            r = self._flat[key]
            if r != UNKNOWN:
                return r
        self._fill(cid, byte)
        return self._flat[key]

    def _fill(self, cid: int, byte: int) -> None:
        lit = self._literal_of(cid)
        if lit is not None:
            # the one live byte of a literal run is its first: the row needs no byte classes
            target = self.system.after_literal(lit, 1)
            self._grow()
            self.filled += 1
            self.rows[cid] = DEAD
            self._flat[cid * 256 + lit[0][0]] = target
            return
        parts = self._class_parts(cid)
        if parts is not None:
            for part in parts:
                if part >> byte & 1:
                    self._fill_part(cid, part, byte)
                    return
        target = self.system.step(cid, byte)
        self._grow()
        self.filled += 1
        self._flat[cid * 256 + byte] = target

    def _fill_part(self, cid: int, part: int, byte: int) -> None:
        """Fill the byte class ``part`` of ``cid`` (``byte`` one of its bytes)."""
        target = self.system.step(cid, byte)
        self._grow()
        self.filled += 1
        if part.bit_count() <= self._small_class:
            # a few bytes (a literal's next byte): set them without numpy
            flat, base = self._flat, cid * 256
            while part:
                low = part & -part
                flat[base + low.bit_length() - 1] = target
                part ^= low
        else:
            self.rows[cid, self._bytes_of(part)] = target

    def _class_parts(self, cid: int) -> tuple[int, ...] | None:
        """The byte classes of ``cid`` as bit masks (None: unknown, fill byte by byte)."""
        r = self._classes.get(cid, False)
        if r is False:
            r = self._classes[cid] = self.system.byte_classes(cid)
        return r

    def _bytes_of(self, part: int) -> np.ndarray:
        """The bytes of a class mask as an index array (shared: configurations repeat classes)."""
        r = _CLASS_BYTES.get(part)
        if r is None:
            if len(_CLASS_BYTES) >= MAX_CLASS_ARRAYS:
                _CLASS_BYTES.clear()
            r = np.flatnonzero(mask_to_bools(part)).astype(np.uint8)
            r.flags.writeable = False
            _CLASS_BYTES[part] = r
        return r

    def _class_index(self, parts: tuple[int, ...]) -> np.ndarray:
        """Per byte, the index of its class in the partition ``parts`` (shared: configurations
        repeat partitions, ``TermStore.shared_partition``)."""
        r = _CLASS_INDEX.get(parts)
        if r is None:
            if len(_CLASS_INDEX) >= MAX_CLASS_ARRAYS:
                _CLASS_INDEX.clear()
            r = np.empty(256, dtype=np.intp)
            for i, part in enumerate(parts):
                r[self._bytes_of(part)] = i
            r.flags.writeable = False
            _CLASS_INDEX[parts] = r
        return r

    def gather(self, configs: np.ndarray, byts: np.ndarray) -> np.ndarray:
        """``rows[configs, byts]`` with unknown transitions computed first."""
        out = self.rows[configs, byts]
        unknown = out == UNKNOWN
        if unknown.any():
            keys = unique(configs[unknown].astype(np.int64) * 256 + byts[unknown])
            for key in keys.tolist():
                if self._flat[key] == UNKNOWN:  # a class filled before may cover it
                    self._fill(key >> 8, key & 255)
            out = self.rows[configs, byts]
        return out

    def full_row(self, cid: int) -> np.ndarray:
        """The byte row of ``cid`` with every transition computed (a view into the table: the
        next configuration made may move it). Unlike :meth:`loop_sets`, no loop bits are made
        and kept: a compile ahead asks for the row of every position to find its successors."""
        self._grow()
        row = self.rows[cid]
        if (row == UNKNOWN).any():
            self._fill_row(cid)
            row = self.rows[cid]
        return row

    def loop_sets(self, configs: np.ndarray) -> np.ndarray:
        """For each configuration, the bytes that lead back to it, as (n, 4) uint64 bit sets."""
        out = np.zeros((configs.size, 4), dtype=np.uint64)
        self._grow()
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
            # from the terms when the configuration is a plain loop (once per unit: no row of a
            # partial character is filled), else character by character through the table
            r = self.system.characters_loop(cid)
            if r is None:
                r = self.utf8_loop_stepped(cid)
            self._utf8[cid] = r
        return r

    def utf8_loop_stepped(self, cid: int) -> bool:
        """:meth:`utf8_loop` through the table's rows (filling those of partial characters)."""
        for seq in _MULTIBYTE_SEQUENCES:
            frontier = {cid}
            for lo, hi in seq:
                nxt: set[int] = set()
                for st in frontier:
                    row = self.rows[st]
                    if (row[lo : hi + 1] == UNKNOWN).any():
                        self._fill_row(st)
                        row = self.rows[st]
                    nxt.update(unique(row[lo : hi + 1]).tolist())
                if DEAD in nxt:
                    return False
                frontier = nxt
            if frontier != {cid}:
                return False
        return True

    def loop_bits(self, cid: int) -> int:
        """The bytes leading from ``cid`` back to it, as a 256-bit Python int."""
        r = self._loop_bits.get(cid)
        if r is None:
            live = self.sparse_row(cid)
            if live is not None:
                r = 0
                for i in range(0, len(live), 2):
                    if live[i + 1] == cid:
                        r |= 1 << live[i]
                self._loop_bits[cid] = r
                return r
            words = self.loop_sets(np.asarray([cid]))[0].tolist()
            r = self._loop_bits[cid] = words[0] | words[1] << 64 | words[2] << 128 | words[3] << 192
        return r

    def sparse_row(self, cid: int) -> tuple[int, ...] | None:
        """The live transitions of ``cid`` as a flat tuple ``(byte, target, byte, target, ...)``
        in byte order when there are at most ``tuning.sparse_live`` of them, else None (fills the row)."""
        r = self._sparse.get(cid, False)
        if r is False:
            self._grow()
            row = self.rows[cid]
            if (row == UNKNOWN).any():
                self._fill_row(cid)
                row = self.rows[cid]
            live = np.flatnonzero(row != DEAD)
            r = None
            if live.size <= self._sparse_live:
                pairs = np.empty(2 * live.size, dtype=np.int64)
                pairs[0::2] = live
                pairs[1::2] = row[live]
                r = tuple(pairs.tolist())
            self._sparse[cid] = r
        return r

    def _fill_row(self, cid: int) -> None:
        """Compute every unknown transition of ``cid``. With byte classes, the classes not
        filled yet are stepped in one call (``ConfigSystem.step_bytes_each``: one stack is
        stepped by its top's derivatives without a memo entry per byte) and the row is written
        with one numpy call, gathering a target per class through the partition's byte -> class
        index (one write per class cost a numpy call each: rows have 3-4 classes)."""
        if cid not in self._classes:
            # no class of the row filled yet: the whole row in one pass over the frames
            groups = self.system.row_groups(cid)
            if groups is not None:
                self._grow()
                self.filled += len(groups)
                parts = self.system.store.shared_partition(tuple(g for g, _ in groups))
                targets = np.asarray([t for _, t in groups], dtype=np.int32)
                self.rows[cid] = targets[self._class_index(parts)]
                return
        parts = self._class_parts(cid)
        if parts is not None:
            self._grow()
            flat, base = self._flat, cid * 256
            targets: list[int] = []
            missing: list[int] = []  # classes not filled yet (a walk fills classes one by one)
            firsts: list[int] = []
            for i, part in enumerate(parts):  # a partition of the bytes: the row is complete after it
                b = (part & -part).bit_length() - 1
                t = flat[base + b]
                if t == UNKNOWN:
                    missing.append(i)
                    firsts.append(b)
                targets.append(t)
            if missing:
                for i, t in zip(missing, self.system.step_bytes_each(cid, firsts)):
                    targets[i] = t
                self._grow()  # the steps may have made configurations
                self.filled += len(missing)
                self.rows[cid] = np.asarray(targets, dtype=np.int32)[self._class_index(parts)]
            return
        for b in np.nonzero(self.rows[cid] == UNKNOWN)[0].tolist():
            if self.rows[cid, b] == UNKNOWN:
                self._fill(cid, b)

    def walk_parts(self, cid: int, trie: TokenTrie) -> tuple[LoopRegion | None, np.ndarray]:
        """The text tokens whose bytes lead from configuration ``cid`` to a live one, in two
        parts: the loop region the walk started from (None: it started at the root), whose
        tokens it accepts as they are, and the ids of the tokens it found beyond them. Masks
        built on a region reuse what was built for it once (its packed mask, its counted-mask
        base) instead of handling its tokens again. A node whose configuration loops on every
        byte below it accepts its whole subtree at once (string bodies, digit runs): the walk
        never descends into it."""
        region, ids, _, _ = self._walk(cid, trie, with_ends=False, split=True)
        return region, ids

    def walk_ends(
        self, cid: int, trie: TokenTrie, *, with_ends: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Like :meth:`walk_parts`, also giving each token's end configuration and a slack in bytes:
        tokens accepted in bulk under a multi-byte-character loop may end inside a character,
        up to 3 bytes short of the loop configuration they are reported with.

        The walk is level by level. Each level is handled in numpy when it has many live nodes
        and in Python when it has few (a numpy call costs microseconds whatever its size, a
        Python step a fraction of one); separately, the children of a level are stepped with one
        numpy gather when there are many and one by one in Python when there are few, so that a
        narrow level with a wide fan-out (the one node ``"`` and its hundreds of children) costs
        one gather, not hundreds of Python steps.
        """
        _, ids, ends, slack = self._walk(cid, trie, with_ends=with_ends, split=False)
        return ids, ends, slack

    def walk_relative(
        self, cid: int, trie: TokenTrie
    ) -> tuple[LoopRegion | None, np.ndarray, dict[int, tuple[np.ndarray, np.ndarray]]]:
        """:meth:`walk_parts` from a relative configuration (``ConfigSystem.relative``), and its
        *exits*: per level, the nodes whose byte returned into the hole, with those bytes. A
        token is allowed from the real configuration (the same top over caller ``P``) exactly
        when the relative walk accepts it or a walk from the exits, each stepped from ``P``,
        does (a configuration's step is the union of its stacks' steps, and the stacks above
        the hole are the real ones with the caller left out)."""
        self._exits_met = met = []
        try:
            region, ids, _, _ = self._walk(cid, trie, with_ends=False, split=True)
        finally:
            self._exits_met = None
        return region, ids, self._exits_of(met, trie)

    def walk_from_relative(
        self, cid: int, trie: TokenTrie, entries: dict[int, tuple[np.ndarray, np.ndarray]]
    ) -> tuple[np.ndarray, dict[int, tuple[np.ndarray, np.ndarray]]]:
        """:meth:`walk_from` from a relative configuration, and the exits of that walk (as
        :meth:`walk_relative`'s): the tokens that cross one more frame go on from those."""
        self._exits_met = met = []
        try:
            ids = self.walk_from(cid, trie, entries)
        finally:
            self._exits_met = None
        return ids, self._exits_of(met, trie)

    @staticmethod
    def _exits_of(met: list[tuple[int, int | np.ndarray]], trie: TokenTrie) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """The exits a walk met, per level: nodes and their bytes."""
        by_level: dict[int, list[np.ndarray]] = {}
        singles: dict[int, list[int]] = {}
        for k, node in met:
            if isinstance(node, np.ndarray):
                by_level.setdefault(k, []).append(node)
            else:
                singles.setdefault(k, []).append(node)
        for k, nodes in singles.items():
            by_level.setdefault(k, []).append(np.asarray(nodes, dtype=np.int64))
        exits = {}
        for k, parts in sorted(by_level.items()):
            arr = parts[0].astype(np.int64, copy=False) if len(parts) == 1 else np.concatenate(parts).astype(np.int64)
            exits[k] = (arr, trie.level_byte[k][arr])
        return exits

    def walk_from(self, cid: int, trie: TokenTrie, entries: dict[int, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """The tokens accepted below ``entries`` (per level, nodes and their bytes), each node
        entered with its byte stepped from ``cid``: the rest of a walk from exits."""
        if trie.depth == 0 or cid == DEAD:
            return np.zeros(0, dtype=np.int32)
        pending = {k: [(nodes, byts, cid)] for k, (nodes, byts) in entries.items()}
        _, ids, _, _ = self._walk(cid, trie, with_ends=False, split=False, entries=pending)
        return ids

    def _unmark(self, state: int) -> int:
        r = self._unmarked.get(state)
        if r is None:
            r = self._unmarked[state] = self.system.without_exit(state)
            self._grow()
        return r

    def _walk(
        self,
        cid: int,
        trie: TokenTrie,
        *,
        with_ends: bool,
        split: bool,
        entries: dict[int, list[tuple[np.ndarray, np.ndarray, int]]] | None = None,
        raw: bool = False,
    ) -> tuple[LoopRegion | None, np.ndarray, np.ndarray, np.ndarray]:
        """The walk of every public walk method. ``raw``: the accepted tokens as positions in
        ``trie.sorted_ids`` instead of ids (with ``with_ends`` off)."""
        empty = np.zeros(0, dtype=np.int32)
        if trie.depth == 0 or cid == DEAD:
            return None, empty, empty, empty
        self._grow()  # configurations made outside the table (counted bases, token atoms) need rows
        out = _Pieces(with_ends, self._tail_missing() if with_ends and self._tail_missing else None, tuning=self.tuning)
        views = trie.views()
        # where the walk enters the trie: the root's children, or the exits of a loop region
        # a literal run never loops: its row and a region check would be work for nothing
        literal = None if entries is not None or with_ends else self._literal_of(cid)
        choice = None if entries is not None or with_ends or literal is not None else self._choice_of(cid)
        known = entries is not None or literal is not None or choice is not None
        region, loop = (None, cid) if known else self._entry_region(cid, trie)
        frontier: list[tuple[int, int, int]] | None = []  # (node, state, parent) in Python mode
        nodes = states = parents = np.zeros(0, dtype=np.int64)
        pending = out.pending  # exits of regions: nodes to enter at deeper levels
        narrow = self._narrow
        if entries is not None:
            pending.update({k: list(v) for k, v in entries.items()})
        elif literal is not None:
            self._follow_literal(trie, views, -1, 0, literal, out)
        elif choice is not None:
            self._choice_walk(trie, views, -1, 0, choice, out)
        elif region is None:
            # the root's children, like any node's: by binary search when few bytes are live
            frontier, wide = self._step_children(trie, views, 0, [(0, trie.level_byte[0].size, cid)])
            if wide is not None:
                nodes, states, parents = wide
                frontier = None
        else:
            if not split:
                out.add_positions(region.positions, loop, region.slack)
            live_exits = self._live_exits(region, cid, loop)
            differ = self._shared_differ(cid, loop, with_ends)
            if differ is not None and self._take_beyond_loop(trie, loop, differ, out):
                # below the root children ``cid`` steps as ``loop`` does, ``loop``'s own walk
                # gave the tokens and exits: only the children whose byte differs are walked
                level0 = live_exits.get(0)
                if level0 is not None and differ:
                    keep = mask_to_bools(differ)[level0[1]]
                    if keep.any():
                        rest = self._descend_root(trie, views, cid, loop, level0[0][keep], level0[1][keep], out)
                        if rest is not None:
                            pending[0] = [(rest[0], rest[1], cid)]
            else:
                for k, (e_nodes, e_byts) in live_exits.items():
                    # an exit's path so far looped: below the root that is the loop configuration
                    pending[k] = [(e_nodes, e_byts, cid if k == 0 else loop)]
        k = -1
        while k + 1 < trie.depth:
            k += 1
            if frontier is not None and not frontier:
                # nothing live at this level: on to the next level where a region has exits
                if not pending and not out.direct:
                    break
                k = max(k, min(list(pending) + list(out.direct)))
            direct = out.direct.pop(k, None)
            if direct is not None:
                if frontier is not None:
                    frontier = frontier + direct
                else:
                    nodes = np.concatenate([nodes, np.asarray([d[0] for d in direct], dtype=np.int64)])
                    states = np.concatenate([states, np.asarray([d[1] for d in direct], dtype=np.int32)])
                    parents = np.concatenate([parents, np.asarray([d[2] for d in direct], dtype=np.int32)])
            batch = pending.pop(k, None)
            if batch is not None and frontier is not None and sum(b[0].size for b in batch) + len(frontier) <= narrow:
                # a few exits (a run region's newline-and-spaces tokens, a string's quotes) join
                # a Python level: stepped one by one, not through the arrays
                frontier = frontier + self._exits_python(batch)
                batch = None
            if batch is not None:
                entry = (
                    np.concatenate([b[0] for b in batch]) if len(batch) > 1 else batch[0][0],
                    np.concatenate([b[1] for b in batch]) if len(batch) > 1 else batch[0][1],
                )
                e_parents = np.concatenate([np.full(b[0].size, b[2], dtype=np.int32) for b in batch])
                e_states = self.gather(e_parents, entry[1])
                if frontier is not None:
                    nodes = np.asarray([f[0] for f in frontier], dtype=np.int64)
                    states = np.asarray([f[1] for f in frontier], dtype=np.int32)
                    parents = np.asarray([f[2] for f in frontier], dtype=np.int32)
                    frontier = None
                nodes = np.concatenate([nodes, entry[0]])
                states = np.concatenate([states, e_states])
                parents = np.concatenate([parents, e_parents])
            if frontier is None:
                alive = states != DEAD
                nodes, states, parents = nodes[alive], states[alive], parents[alive]
                if nodes.size <= narrow:
                    frontier = list(zip(nodes.tolist(), states.tolist(), parents.tolist()))
            if frontier is not None:
                if not frontier:
                    continue
                expand = self._nodes_python(cid, trie, views, k, frontier, out)
                frontier, wide = self._step_children(trie, views, k + 1, expand) if expand else ([], None)
                if wide is not None:
                    nodes, states, parents = wide
                    frontier = None
                continue
            found = self._nodes_numpy(cid, trie, k, nodes, states, parents, out)
            if found is None:
                frontier = []
                continue
            starts, counts, expanded = found
            if int(counts.sum()) <= self._narrow_children:
                expand = list(zip(starts.tolist(), counts.tolist(), expanded.tolist()))
                frontier = self._children_python(views[k + 1], expand)
                continue
            nodes = ranges(starts, counts)
            parents = np.repeat(expanded, counts)
            states = self.gather(parents, trie.level_byte[k + 1][nodes])
        return (region if split else None, *out.result(trie, raw=raw))

    def _shared_differ(self, cid: int, loop: int, with_ends: bool) -> int | None:
        """The root bytes ``cid`` steps otherwise than ``loop`` (0 where ``cid`` is the loop),
        where the walk from ``cid`` may take the rest from ``loop``'s kept walk
        (:meth:`_take_beyond_loop`); None where it walks every exit itself."""
        if with_ends or not self._shared_loop_exits:
            return None
        if loop == cid:
            # a loop's own walk takes a kept walk only where a walk one byte before it made one
            return 0 if (loop, self._exits_met is not None) in self._beyond else None
        found = self._before_loop.get(cid)
        return None if not found else found[1]

    def _take_beyond_loop(self, trie: TokenTrie, loop: int, differ: int, out: _Pieces) -> bool:
        """Add to ``out`` (and to the exits met, in a relative walk) the tokens and exits that the
        walk from ``loop`` finds beyond its loop region, less those under the root children
        whose bytes are in ``differ``; False where that walk is not kept (over the bound).

        Exact: the tokens (and returns into the hole) below a root child depend only on the
        configuration its byte leads to, and below every child outside ``differ`` that is the
        one ``loop`` leads to. The walk beyond the region of ``loop`` is the walk from its live
        exits (level 0 stepped from ``loop`` itself, deeper ones from ``loop`` too: their path
        looped), kept per loop configuration and walk kind (relative walks record exits)."""
        found = self._beyond_loop(trie, loop)
        if found is None:
            return False
        positions, exits = found
        if differ:
            root = trie.level_byte[0]
            drop = np.flatnonzero(mask_to_bools(differ)[root])
            starts, ends = trie.run_start[0][drop], trie.run_end[0][drop]
            positions = positions[~_inside(positions, starts, ends)]
            exits = {k: nodes[~_inside(trie.run_start[k][nodes], starts, ends)] for k, nodes in exits.items()}
        if positions.size:
            out.add_positions(positions, loop, _NO_SLACK)
        met = self._exits_met
        if met is not None:
            met.extend((k, nodes) for k, nodes in exits.items() if nodes.size)
        return True

    def _descend_root(
        self,
        trie: TokenTrie,
        views: list[LevelViews],
        cid: int,
        loop: int,
        nodes: np.ndarray,
        byts: np.ndarray,
        out: _Pieces,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The root children ``nodes`` (bytes ``byts``) that ``cid`` steps otherwise than
        ``loop``: each whose byte loops in ``loop`` is descended (:meth:`_descend`); returns the
        others, for the walk to step from ``cid`` (None: none left)."""
        region = self._loop_region(loop, trie)
        found = self._beyond.get((loop, self._exits_met is not None))
        if region is None or found is None:  # pragma: no cover - kept by the walk at the root
            return nodes, byts
        rest = []
        base = cid * 256
        for i, (node, byte) in enumerate(zip(nodes.tolist(), byts.tolist())):
            state = self._flat[base + byte]  # the row of ``cid`` is complete (its region's check)
            if not self._descend(trie, views, (region.positions, *found), 0, node, byte, state, loop, out):
                rest.append(i)
        if not rest:
            return None
        return nodes[rest], byts[rest]

    def _descend(
        self,
        trie: TokenTrie,
        views: list[LevelViews],
        kept: tuple[np.ndarray, np.ndarray, dict[int, np.ndarray]],
        k: int,
        node: int,
        byte: int,
        state: int,
        loop: int,
        out: _Pieces,
    ) -> bool:
        """Below ``node`` (level ``k``, reached by bytes that all loop in ``loop``, with its own
        last byte ``byte``) the walk is in ``state``, where ``loop``'s walk is in ``loop``: add
        what ``loop``'s kept walk found under the children that ``state`` steps as ``loop`` does
        (the region's tokens and the kept tokens and exits beyond it), descend into the
        differing children whose byte loops too, and leave the rest to the walk at level
        ``k + 1`` with their configurations (``out.direct``). False (nothing added) where
        ``byte`` does not loop in ``loop``, ``state`` is dead or a return into the hole, or
        steps more than ``tuning.sparse_live`` bytes otherwise than ``loop``: the walk steps
        ``node`` itself.

        Exact for the reason a kept walk is (what lies below a node depends only on the
        configuration there): the node's own tokens are accepted from both (both are live),
        and below every child outside the differing bytes both walks are in one configuration."""
        if state == DEAD or self._flat[loop * 256 + byte] != loop or self._unmark(state) != state:
            return False
        differ = self._differ_bytes(state, loop)
        if len(differ) > self._sparse_live:
            return False
        cut_starts: list[int] = []
        cut_ends: list[int] = []
        if k + 1 < len(views):
            v, nxt = views[k], views[k + 1]
            first = v.child_start[node]
            end = first + v.child_count[node]
            base = state * 256
            lo = first
            for b in differ:
                lo = bisect_left(nxt.byte, b, lo, end)
                if lo == end:
                    break
                if nxt.byte[lo] != b:
                    continue
                cut_starts.append(nxt.run_start[lo])
                cut_ends.append(nxt.run_end[lo])
                after = self._flat[base + b]
                if after != DEAD and not self._descend(trie, views, kept, k + 1, lo, b, after, loop, out):
                    out.direct.setdefault(k + 1, []).append((lo, after, state))
        keep_starts = [views[k].run_start[node]] + cut_ends
        keep_ends = cut_starts + [views[k].run_end[node]]
        in_region, positions, exits = kept
        bounds = np.asarray(keep_starts + keep_ends)
        n = len(keep_starts)
        for part in (in_region, positions):
            at = np.searchsorted(part, bounds).tolist()
            for i, j in zip(at[:n], at[n:]):
                if j > i:
                    out.add_positions(part[i:j], loop, _NO_SLACK)
        met = self._exits_met
        if met is not None and exits:
            starts, ends = np.asarray(keep_starts), np.asarray(keep_ends)
            for level, nodes in exits.items():
                if level > k:
                    inside = nodes[_inside(trie.run_start[level][nodes], starts, ends)]
                    if inside.size:
                        met.append((level, inside))
        return True

    def _differ_bytes(self, state: int, loop: int) -> list[int]:
        """The bytes ``state`` steps otherwise than ``loop``, ascending (``state``'s row filled;
        ``loop``'s is, by its region)."""
        self._grow()
        row = self.rows[state]
        if (row == UNKNOWN).any():
            self._fill_row(state)
            row = self.rows[state]
        return np.flatnonzero(row != self.rows[loop]).tolist()  # type: ignore[no-any-return]

    def _beyond_loop(self, trie: TokenTrie, loop: int) -> tuple[np.ndarray, dict[int, np.ndarray]] | None:
        """The positions (in ``trie.sorted_ids``) of the tokens the walk from ``loop`` accepts
        beyond its loop region, and the exits that walk met per level (in a relative walk;
        none otherwise), kept within ``tuning.loop_exit_memo_bytes``; None past the bound."""
        relative = self._exits_met is not None
        key = (loop, relative)
        found = self._beyond.get(key)
        if found is not None:
            return found
        if self._beyond_bytes >= self._beyond_max:
            return None
        region = self._loop_region(loop, trie)
        if region is None:  # pragma: no cover - the region the walk was entering
            return None
        entries = {k: [(nodes, byts, loop)] for k, (nodes, byts) in self._live_exits(region, loop, loop).items()}
        outer = self._exits_met
        self._exits_met = met = [] if relative else None
        try:
            _, positions, _, _ = self._walk(loop, trie, with_ends=False, split=False, entries=entries, raw=True)
        finally:
            self._exits_met = outer
        exits = {k: nodes for k, (nodes, _) in self._exits_of(met, trie).items()} if met else {}
        # ascending: a descent below a root child (:meth:`_descend`) takes slices of them
        found = (np.sort(positions).astype(np.int32), exits)
        self._beyond[key] = found
        self._beyond_bytes += found[0].nbytes + sum(nodes.nbytes for nodes in exits.values()) + 64
        return found

    def _exits_python(self, batch: list[tuple[np.ndarray, np.ndarray, int]]) -> list[tuple[int, int, int]]:
        """The live ones of a few region exits as ``(node, state, parent)``, stepped in Python."""
        out: list[tuple[int, int, int]] = []
        flat = self._flat
        for e_nodes, e_byts, parent in batch:
            base = parent * 256
            for node, byte in zip(e_nodes.tolist(), e_byts.tolist()):
                key = base + byte
                state = flat[key] if key < len(flat) else UNKNOWN
                if state == UNKNOWN:
                    state = self.step(parent, byte)
                    flat = self._flat
                if state != DEAD:
                    out.append((node, state, parent))
        return out

    def _entry_region(self, cid: int, trie: TokenTrie) -> tuple[LoopRegion | None, int]:
        """Where a walk from ``cid`` may start from a loop region: ``cid``'s own, or, when
        ``cid`` is one byte before a loop (a string of ``minLength`` 1, a pattern's ``x+``, a
        key that is not one of the listed names), the region of the loop configuration ``L``
        that most of its bytes lead to. Every root child whose transition from ``cid`` equals
        ``L``'s behaves below it exactly as in a walk from ``L``; the region's tokens and exits
        under the other root children are dropped, and those children become exits at level 0,
        stepped from ``cid``. Returns the region (None: walk from the root) and the loop
        configuration its accepted tokens end in. A token the region accepts inside a multi-byte
        character is reported with the loop configuration and the bytes its character lacks
        (exact where completing the character is the shortest way on, as in JSON strings; never
        less than the root walk's figure)."""
        region = self._loop_region(cid, trie)
        if region is not None or trie.level_byte[0].size < 256:
            return region, cid
        found = self._before_loop.get(cid, False)
        if found is False:
            found = self._before_loop[cid] = self._find_before_loop(cid)
        if found is None:
            return None, cid
        loop, differ = found
        region = self._loop_region(loop, trie)
        if region is None:  # pragma: no cover - checked when found
            return None, cid
        if differ:
            region = region.without_children(trie, differ)
        return region, loop

    def _live_exits(self, region: LoopRegion, cid: int, loop: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """The region's exits whose byte is live from their parent (``cid`` at level 0, ``loop``
        below; both rows are complete): dead exits need no gather, and levels left without
        exits none of the walk's per-level work."""
        live_root = self._live_bits(cid)
        live_loop = live_root if loop == cid else self._live_bits(loop)
        entries: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for k, (nodes, byts) in region.exits.items():
            live = live_root if k == 0 else live_loop
            present = region.exit_bytes[k]
            if not present & live:
                continue
            if present & ~live:
                keep = self.rows[cid if k == 0 else loop][byts] != DEAD
                nodes, byts = nodes[keep], byts[keep]
            entries[k] = (nodes, byts)
        return entries

    def _live_bits(self, cid: int) -> int:
        """The bytes with a live transition from ``cid`` (its row complete), as a 256-bit int."""
        r = self._live.get(cid)
        if r is None:
            words = np.packbits(self.rows[cid] != DEAD, bitorder="little").view(np.uint64).tolist()
            r = self._live[cid] = words[0] | words[1] << 64 | words[2] << 128 | words[3] << 192
        return r

    def _find_before_loop(self, cid: int) -> tuple[int, int] | None:
        row = self.rows[cid]
        live = row[row != DEAD]
        if live.size < self._loop_min:
            return None
        targets, inverse = unique_inverse(live)
        loop = int(targets[np.argmax(np.bincount(inverse))])
        if loop == cid or self.loop_bits(loop).bit_count() < self._loop_min:
            return None
        self._grow()
        if (self.rows[loop] == UNKNOWN).any():
            self._fill_row(loop)
        differ_bytes = np.flatnonzero(self.rows[cid] != self.rows[loop])
        if 256 - differ_bytes.size < self._loop_min:
            return None
        differ = 0
        for b in differ_bytes.tolist():
            differ |= 1 << b
        return loop, differ

    def _loop_region(self, cid: int, trie: TokenTrie) -> LoopRegion | None:
        """The loop region of ``cid`` when it loops on enough bytes to be worth one (through
        whole multi-byte characters where they loop, see loop_regions.py)."""
        if trie.level_byte[0].size < 256:
            return None  # the root row is not filled by the walk anyway: do not force it
        if (self.rows[cid] == UNKNOWN).any():
            self._fill_row(cid)  # the walk's first level needs (nearly) all of it
        live = self.sparse_row(cid)
        if live is not None and len(live) // 2 < self._loop_min:
            return None  # too few live bytes to loop on enough of them
        loops = self.loop_bits(cid)
        if loops.bit_count() < self._loop_min:
            return None
        return loop_region(trie, loops, self.utf8_loop(cid), chars=True, tuning=self.tuning)

    def _nodes_numpy(
        self,
        cid: int,
        trie: TokenTrie,
        k: int,
        nodes: np.ndarray,
        states: np.ndarray,
        parents: np.ndarray,
        out: _Pieces,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """One trie level in numpy (the live nodes, their configurations and their parents'):
        bulk acceptance, tokens ending here; returns the children to visit as (first child,
        count, configuration) arrays, or None."""
        if self._exits_met is not None:
            marked = [u for u in unique(states).tolist() if self._unmark(u) != u]
            if marked:
                at = np.isin(states, marked)
                self._exits_met.append((k, nodes[at]))
                states = states.copy()
                for u in marked:
                    states[states == u] = self._unmark(u)
                alive = states != DEAD
                nodes, states, parents = nodes[alive], states[alive], parents[alive]
                if nodes.size == 0:
                    return None
        # a state that just looped, or is back at the start, may loop on everything below
        looped = (states == parents) | (states == cid)
        bulk = None
        if looped.any():
            cand = np.flatnonzero(looped)
            uniq, inverse = unique_inverse(states[cand])
            loops = self.loop_sets(uniq)
            below = trie.below[k][nodes[cand]]
            outside = below & ~loops[inverse]
            whole = ~outside.any(axis=1)
            # or: loops on the ASCII bytes below and on every multi-byte character
            utf8 = np.asarray([self.utf8_loop(int(u)) for u in uniq])[inverse]
            more = ~whole & utf8 & trie.utf8_below[k][nodes[cand]] & ~outside[:, :2].any(axis=1)
            accepted = whole | more
            if accepted.any():
                bulk = cand[accepted]
                starts = trie.run_start[k][nodes[bulk]]
                slack = None
                if out.with_ends:
                    slack = np.where(more[accepted], MULTIBYTE_SLACK, 0).astype(np.int32)
                out.add(starts, trie.run_end[k][nodes[bulk]] - starts, states[bulk], slack)
                keep = np.ones(nodes.size, dtype=bool)
                keep[bulk] = False
                nodes, states = nodes[keep], states[keep]
                if nodes.size == 0:
                    return None
        tc = trie.tok_count[k][nodes]
        ends = tc > 0
        if ends.any():
            out.add(trie.tok_start[k][nodes[ends]], tc[ends], states[ends], None)
        if k + 1 == trie.depth:
            return None
        counts = trie.child_count[k][nodes]
        has = counts > 0
        if not has.any():
            return None
        for state in unique(states[has]).tolist():
            if self._exits_met is not None and state == self.system.at_hole:
                # every byte returns into the hole: each child is an exit, none is stepped
                at = has & (states == state)
                self._exits_met.append((k + 1, ranges(trie.child_start[k][nodes[at]], counts[at].astype(np.int64))))
                has &= ~at
                continue
            run = self._runs.get(state, False)
            if run is False:
                run = self._run_of(state)
            if run is not None:
                at = has & (states == state)
                for node in nodes[at].tolist():
                    self._enter_run(trie, k, node, run, out)
                has &= ~at
                continue
            lit = None if out.with_ends else self._literal_of(state)
            if lit is not None:
                at = has & (states == state)
                views = trie.views()
                for node in nodes[at].tolist():
                    self._follow_literal(trie, views, k, node, lit, out)
                has &= ~at
        if not has.any():
            return None
        return trie.child_start[k][nodes[has]], counts[has].astype(np.int64), states[has]

    def _nodes_python(
        self,
        cid: int,
        trie: TokenTrie,
        views: list[LevelViews],
        k: int,
        frontier: list[tuple[int, int, int]],
        out: _Pieces,
    ) -> list[tuple[int, int, int]]:
        """One trie level in Python for a few live nodes: bulk acceptance of looping subtrees,
        tokens ending here; returns ``(first child, child count, state)`` of the nodes whose
        children must be visited."""
        v = views[k]
        expand: list[tuple[int, int, int]] = []
        last = k + 1 == len(views)
        met = self._exits_met
        for node, state, parent in frontier:
            if met is not None:
                bare = self._unmarked.get(state)
                if bare is None:
                    bare = self._unmark(state)
                if bare != state:
                    met.append((k, node))
                    if bare == DEAD:
                        continue
                    state = bare
            if state == parent or state == cid:
                loops = self.loop_bits(state)
                b = 4 * node
                below = v.below[b] | v.below[b + 1] << 64 | v.below[b + 2] << 128 | v.below[b + 3] << 192
                outside = below & ~loops
                slack = -1
                if not outside:
                    slack = 0
                elif not outside & ASCII_BITS and v.utf8_below[node] and self.utf8_loop(state):
                    slack = MULTIBYTE_SLACK
                if slack >= 0:
                    lo = v.run_start[node]
                    out.add_py(lo, v.run_end[node] - lo, state, slack)
                    continue
            tc = v.tok_count[node]
            if tc:
                out.add_py(v.tok_start[node], tc, state, 0)
            cc = v.child_count[node]
            if cc and not last:
                if met is not None and state == self.system.at_hole:
                    # every byte returns into the hole: each child is an exit, none is stepped
                    first = v.child_start[node]
                    met.append((k + 1, np.arange(first, first + cc, dtype=np.int64)))
                    continue
                run = self._runs.get(state, False)
                if run is False:
                    run = self._run_of(state)
                if run is not None:
                    self._enter_run(trie, k, node, run, out)
                    continue
                if not out.with_ends:
                    lit = self._literal.get(state, False)
                    if lit is False:
                        lit = self._literal_of(state)
                    if lit is not None:
                        self._follow_literal(trie, views, k, node, lit, out)
                        continue
                expand.append((v.child_start[node], cc, state))
        return expand

    def _run_of(self, cid: int) -> tuple[int, int | None, int] | None:
        """If ``cid`` is a run of a few bytes, ``u{0,m} t`` with ``u`` a byte set that the
        configuration ``T`` of ``t`` alone cannot read (a whitespace gap after a newline, before
        a key): ``(u, m, T)``. Every count of the run steps any other byte as ``T`` does (the
        run may end there), and a byte of ``u`` only to the next count: the walk below a node
        in that state is a :class:`~.loop_regions.RunRegion`, its exits stepped from ``T``.
        None otherwise (remembered per configuration)."""
        found: tuple[int, int | None, int] | None = None
        stacks = self.system.configs[cid]
        if len(stacks) == 1 and self._run_regions:
            system, store = self.system, self.system.store
            top = system.stack_top[stacks[0]]
            if store.kind[top] == SEQ_K:
                head, tail = store.a[top], store.b[top]
                if store.kind[head] == REPEAT_K and store.b[head][0] == 0:  # type: ignore[index]
                    unit = store.a[head]
                    if store.kind[unit] == BYTES_K and store.b[unit].bit_count() <= self._max_run_bytes:  # type: ignore[union-attr]
                        after = system.config([system.stack(system.stack_parent[stacks[0]], tail)])  # type: ignore[arg-type]
                        self._grow()
                        mask = store.b[unit]
                        # only the unit's bytes ``after`` may read need a step: the bound from its
                        # terms leaves out the rest without a derivative (a key's quote after a gap)
                        maybe = mask & system.first_bytes_bound(after)  # type: ignore[operator]
                        unit_bytes = np.flatnonzero(mask_to_bools(maybe)).tolist() if maybe else []
                        if all(self.step(after, b) == DEAD for b in unit_bytes):
                            found = (mask, store.b[head][1], after)  # type: ignore[assignment,index]
        self._runs[cid] = found
        return found

    def _enter_run(self, trie: TokenTrie, k: int, node: int, run: tuple[int, int | None, int], out: _Pieces) -> None:
        """Take the run region below ``node`` (level ``k``): its tokens, with the configuration
        after the run as their end (the same shortest completion: the run may stop anywhere),
        and its exits for the levels below."""
        unit, most, after = run
        region = run_region(trie, k, node, unit, most, tuning=self.tuning)
        if region.positions.size:
            out.add_positions(region.positions, after, np.zeros(region.positions.size, dtype=np.int32))
        exits = region.exits_within(self.system.first_bytes_bound(after)) if self._run_exit_filter else region.exits
        for level, (e_nodes, e_byts) in exits.items():
            out.pending.setdefault(level, []).append((e_nodes, e_byts, after))

    def _literal_of(self, state: int) -> tuple[bytes, tuple[int, ...], int] | None:
        r = self._literal.get(state, False)
        if r is False:
            r = self._literal[state] = self.system.literal_run(state) if self._literal_runs else None
        return r

    def _choice_of(self, state: int) -> tuple[int, int] | None:
        """``(parent, top)`` where ``state`` is one stack that :meth:`_choice_walk` may step."""
        r = self._choice.get(state, False)
        if r is False:
            r = None
            stacks = self.system.configs[state]
            if self._choice_walks and len(stacks) == 1:
                sid = stacks[0]
                parent, top = self.system.stack_parent[sid], self.system.stack_top[sid]
                if self._choosable_stack(parent, top):
                    r = (parent, top)
            self._choice[state] = r
        return r

    def _choosable_stack(self, parent: int, top: int) -> bool:
        """Whether the one stack ``(parent, top)`` is a choice among fixed bytes that steps by
        ``top``'s derivative alone: no greedy lexeme (``tuning.choice_excludes``), no call that can
        come first (the configuration system's step would push it), no return into the
        caller, at most ``tuning.choice_live`` possible next bytes, each a byte class of its own (a
        digit class, a string body or a run is the other walks' business, and a lazy rule not
        built yet counts as every byte). With no call first and no return, the
        configuration system steps the stack by ``TermStore.deriv`` of its top alone
        (``ConfigSystem._step_stack``, ``_advance``), which makes a semantically empty
        derivative NOTHING, so a set operation in the term needs nothing more; a call further
        on counts as a completion, as there (machines that produce nothing are removed)."""
        key = (parent, top)
        r = self._choosable.get(key)
        if r is None:
            store = self.system.store
            live = store.first_bytes(top)
            r = (
                not store.flags[top] & self._choice_excludes
                and not (store.flags[top] & HAS_SYM and any(is_call(s) for s in store.first_syms(top)))
                and not (parent >= 0 and store.nullable[top])
                and live.bit_count() <= self._choice_live
                and self._choice_classes(top, live)
            )
            self._choosable[key] = r
        return r

    def _choice_classes(self, top: int, live: int) -> bool:
        """Whether the live bytes of ``top`` fall in byte classes a choice walk steps: one byte
        each, or up to ``tuning.choice_class`` where no repetition comes first (``[1-2] [0-9]`` in a
        date, not the ``[\t ]{0,32}`` of an indent, which is a run)."""
        store = self.system.store
        widest = max((part & live).bit_count() for part in store.classes(top))
        if widest <= 1:
            return True
        head = store.a[top] if store.kind[top] == SEQ_K else top
        return widest <= self._choice_class and store.kind[head] != REPEAT_K

    def _term_row(self, t: int) -> tuple[int, ...]:
        """The live steps of term ``t`` as ``(byte, derivative, byte, derivative, ...)`` in byte
        order (one derivative per live byte class)."""
        store = self.system.store
        live = store.first_bytes(t)
        out: list[tuple[int, int]] = []
        for part in store.classes(t):
            part &= live
            if not part:
                continue
            d = store.deriv(t, (part & -part).bit_length() - 1)
            if d == NOTHING:
                continue
            while part:
                low = part & -part
                out.append((low.bit_length() - 1, d))
                part ^= low
        out.sort()
        r = self._term_rows[t] = tuple(x for pair in out for x in pair)
        return r

    def _choice_walk(
        self, trie: TokenTrie, views: list[LevelViews], k: int, node: int, stack: tuple[int, int], out: _Pieces
    ) -> None:
        """Below ``node`` (level ``k``; -1: the root) in the one-stack state ``stack``, a choice
        among fixed bytes: visit the trie by the top term's derivatives, without configurations
        or table rows. Each live byte's child is found by binary search, and a token ending
        where the derivative is not ``NOTHING`` is accepted (without calls, lexemes or set
        operations such a term has a sentence, and the caller goes on after it). A derivative
        that is a literal run is followed as one; where the derivative is no longer a choice
        (or the mask's budget of nodes is spent), the node joins the walk at its level with
        the configuration there, the only one made. Masks only: no end configurations."""
        parent = stack[0]
        system = self.system
        depth = len(views)
        todo = [(k, node, stack[1])]
        budget = out.choice_budget
        while todo:
            k, node, t = todo.pop()
            if k + 1 >= depth:
                continue
            if k < 0:
                first, count = 0, trie.level_byte[0].size
            else:
                first, count = views[k].child_start[node], views[k].child_count[node]
            if not count:
                continue
            v = views[k + 1]
            byte = v.byte
            end = first + count
            lo = first
            steps = self._term_rows.get(t)
            if steps is None:
                steps = self._term_row(t)
            for i in range(0, len(steps), 2):
                b = steps[i]
                lo = bisect_left(byte, b, lo, end)
                if lo == end:
                    break
                if byte[lo] != b:
                    continue
                d = steps[i + 1]
                if budget > 0:
                    lit = system.literal_run_of(parent, d)
                    choosable = lit is not None or self._choosable.get((parent, d))
                    if choosable is None:
                        choosable = self._choosable_stack(parent, d)
                    if choosable:
                        budget -= 1
                        tc = v.tok_count[lo]
                        if tc:
                            out.add_py(v.tok_start[lo], tc, DEAD, 0)
                        if lit is not None:
                            self._follow_literal(trie, views, k + 1, lo, lit, out)
                        else:
                            todo.append((k + 1, lo, d))
                        continue
                cfg = system.config([system.stack(parent, d)])
                self._grow()
                out.direct.setdefault(k + 1, []).append((lo, cfg, -1))
        out.choice_budget = budget

    def _follow_literal(
        self,
        trie: TokenTrie,
        views: list[LevelViews],
        k: int,
        node: int,
        run: tuple[bytes, tuple[int, ...], int],
        out: _Pieces,
    ) -> None:
        """Below ``node`` (level ``k``; -1: the root) in a state that reads the fixed bytes of
        ``run`` one after another: follow them by binary search, accept the tokens that end on
        the way (each leaves a live configuration, the rest of the literal), and enter the node
        after the last byte with the configuration there, made only if something lies there.
        Every other child is dead. Masks only: no end configurations are reported."""
        if k < 0:
            first, count = 0, trie.level_byte[0].size
        else:
            first, count = views[k].child_start[node], views[k].child_count[node]
        lit = run[0]
        last = len(lit) - 1
        for j, b in enumerate(lit):
            level = k + 1 + j
            if count == 0 or level >= len(views):
                return
            v = views[level]
            i = bisect_left(v.byte, b, first, first + count)
            if i == first + count or v.byte[i] != b:
                return
            if j < last:
                tc = v.tok_count[i]
                if tc:
                    out.add_py(v.tok_start[i], tc, DEAD, 0)
                first, count = v.child_start[i], v.child_count[i]
            elif v.tok_count[i] or v.child_count[i]:
                end = self.system.after_literal(run, len(lit))
                self._grow()
                out.direct.setdefault(level, []).append((i, end, -1))

    def _step_children(
        self, trie: TokenTrie, views: list[LevelViews], k: int, expand: list[tuple[int, int, int]]
    ) -> tuple[list[tuple[int, int, int]], tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
        """The live children (at level ``k``) of the nodes in ``expand`` (first child, child
        count, state): as a Python frontier, and, when too many must be stepped one by one, as
        numpy ``(nodes, states, parents)`` arrays (not yet filtered for dead states) too.

        A node with many children whose state has few live bytes finds them by binary search
        on the children's (sorted) bytes, one per live byte: a walk inside a literal touches the
        nodes that match it, not the hundreds of children of ``"``."""
        found: list[tuple[int, int, int]] = []
        rest: list[tuple[int, int, int]] = []
        byte = views[k].byte
        for first, count, state in expand:
            if count > self._narrow_children:
                live = self.sparse_row(state)
                if live is not None:
                    end = first + count
                    lo = first
                    for i in range(0, len(live), 2):
                        b = live[i]
                        lo = bisect_left(byte, b, lo, end)
                        if lo == end:
                            break
                        if byte[lo] == b:
                            found.append((lo, live[i + 1], state))
                    continue
            rest.append((first, count, state))
        if sum(e[1] for e in rest) <= self._narrow_children:
            if rest:
                found.extend(self._children_python(views[k], rest))
            return found, None
        starts = np.asarray([e[0] for e in rest], dtype=np.int64)
        counts = np.asarray([e[1] for e in rest], dtype=np.int64)
        expanded = np.asarray([e[2] for e in rest], dtype=np.int32)
        nodes = ranges(starts, counts)
        parents = np.repeat(expanded, counts)
        states = self.gather(parents, trie.level_byte[k][nodes])
        if found:
            nodes = np.concatenate([nodes, np.asarray([f[0] for f in found], dtype=np.int64)])
            states = np.concatenate([states, np.asarray([f[1] for f in found], dtype=np.int32)])
            parents = np.concatenate([parents, np.asarray([f[2] for f in found], dtype=np.int32)])
        return [], (nodes, states, parents)

    def _children_python(self, nxt: LevelViews, expand: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
        """Step the children of ``expand`` one by one (few of them): the live ones."""
        flat = self._flat
        size = len(flat)
        byte = nxt.byte
        frontier: list[tuple[int, int, int]] = []
        for first, count, state in expand:
            base = state * 256
            for child in range(first, first + count):
                key = base + byte[child]
                s2 = flat[key] if key < size else UNKNOWN
                if s2 == UNKNOWN:
                    s2 = self.step(state, byte[child])
                    flat = self._flat
                    size = len(flat)
                if s2 != DEAD:
                    frontier.append((child, s2, state))
        return frontier


class _Pieces:
    """What a walk accepts: runs of ``sorted_ids`` positions, each with its end configuration
    and slack, gathered from numpy levels (arrays) and Python levels (scalars)."""

    def __init__(
        self, with_ends: bool, tail_missing: np.ndarray | None = None, *, tuning: EngineTuning = DEFAULT_ENGINE_TUNING
    ) -> None:
        self.with_ends = with_ends
        self.small_result = tuning.small_result
        self.tail_missing = tail_missing
        self.runs: list[np.ndarray] = []
        self.ends: list[np.ndarray] = []
        self.slacks: list[np.ndarray] = []
        self.py_starts: list[int] = []
        self.py_counts: list[int] = []
        self.py_ends: list[int] = []
        self.py_slacks: list[int] = []
        #: level -> exits of regions met on the way, with the configuration each is stepped from
        self.pending: dict[int, list[tuple[np.ndarray, np.ndarray, int]]] = {}
        #: level -> ``(node, state, parent)`` entered with a known state (the end of a literal)
        self.direct: dict[int, list[tuple[int, int, int]]] = {}
        #: trie nodes the walk may still visit by choice walks (``TransitionTable._choice_walk``)
        self.choice_budget = tuning.choice_nodes

    def add(self, starts: np.ndarray, counts: np.ndarray, states: np.ndarray, slack: np.ndarray | None) -> None:
        self.runs.append(ranges(starts, counts))
        if self.with_ends:
            self.ends.append(np.repeat(states, counts))
            self.slacks.append(
                np.zeros(int(counts.sum()), dtype=np.int32) if slack is None else np.repeat(slack, counts)
            )

    def add_positions(self, positions: np.ndarray, state: int, slack: np.ndarray) -> None:
        self.runs.append(positions)
        if self.with_ends:
            self.ends.append(np.full(positions.size, state, dtype=np.int32))
            self.slacks.append(slack)

    def add_py(self, start: int, count: int, state: int, slack: int) -> None:
        self.py_starts.append(start)
        self.py_counts.append(count)
        self.py_ends.append(state)
        self.py_slacks.append(slack)

    def _add_py_runs(self) -> None:
        positions: list[int] = []
        ends: list[int] = []
        slacks: list[int] = []
        for start, count, state, slack in zip(self.py_starts, self.py_counts, self.py_ends, self.py_slacks):
            positions.extend(range(start, start + count))
            if self.with_ends:
                ends.extend([state] * count)
                slacks.extend([slack] * count)
        self.runs.append(np.asarray(positions, dtype=np.int64))
        if self.with_ends:
            self.ends.append(np.asarray(ends, dtype=np.int32))
            self.slacks.append(np.asarray(slacks, dtype=np.int32))

    def result(self, trie: TokenTrie, *, raw: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The accepted tokens' ids (with ``raw``: their positions in ``trie.sorted_ids``), end
        configurations and slacks (empty without ``with_ends``)."""
        if self.py_starts:
            if sum(self.py_counts) <= self.small_result:
                self._add_py_runs()
            else:
                self.add(
                    np.asarray(self.py_starts, dtype=np.int64),
                    np.asarray(self.py_counts, dtype=np.int64),
                    np.asarray(self.py_ends, dtype=np.int32),
                    np.asarray(self.py_slacks, dtype=np.int32),
                )
        empty = np.zeros(0, dtype=np.int32)
        if not self.runs:
            return empty, empty, empty
        positions = self.runs[0] if len(self.runs) == 1 else np.concatenate(self.runs)
        if raw:
            return positions, empty, empty
        ids = trie.sorted_ids[positions]
        if ids.size == 0 or not self.with_ends:
            return ids, empty, empty
        ends = self.ends[0] if len(self.ends) == 1 else np.concatenate(self.ends)
        slack = self.slacks[0] if len(self.slacks) == 1 else np.concatenate(self.slacks)
        if self.tail_missing is not None:
            # "up to 3 bytes short" made exact: the bytes the token's last character lacks
            short = slack == MULTIBYTE_SLACK
            if short.any():
                slack = slack.copy()
                slack[short] = self.tail_missing[ids[short]]
        return ids, ends, slack


def _inside(values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Whether each of ``values`` lies in one of the ranges ``[starts[i], ends[i])`` (disjoint,
    ascending)."""
    at = np.searchsorted(starts, values, side="right") - 1
    return (at >= 0) & (values < ends[np.maximum(at, 0)])
