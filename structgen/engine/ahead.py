"""Ahead-of-time compilation per grammar position: the parts masks are assembled from, not
whole configurations.

A configuration is a set of stacks of terms; the ones a stream of requests meets (each with its
own strings, array lengths and optional keys) are too many to enumerate. What a mask is assembled
from is smaller. :meth:`Constraint._compute_mask` builds the mask of a one-stack configuration
``(P, t)`` from

* the *relative part* of its top: the packed mask and exits of the walk of ``t`` over an unknown
  caller, the hole (``ConfigSystem.relative``), the same for every caller ``P``. A top
  ``x* b R`` (a string's body and its closing quote) is walked as ``x* b`` over a frame holding
  ``R`` (``RelativeMasks.loop_split``), so the part is shared by every rest ``R`` too;
* the *crossings*: the tokens that leave the top through its exits, walked over the next frame's
  top (``RelativeMasks.crossing``, per relative part and tops crossed), frame by frame, and from the
  real caller only at the bottom;

and, at the bottom, where the configuration is the top alone, from the position's own mask.
Count twins (count_clamp.py) share the parts of their clamped top; the counts of a repetition are
filtered from its sorted walk (counters.py).

:func:`compile_ahead` enumerates *positions* (a top term, and whether it sits at the bottom)
reachable from the start and computes their parts with the constraint's own methods, on the keys
the constraint looks them up by. Relative parts and the masks of bottom positions go into a
:class:`PositionMasks` (compact, outside the constraint's bounded caches, which would drop them),
crossings into ``RelativeMasks.crossings``, unit counts into ``CountedMasks.units``. Positions are
found by stepping each position's own configuration (the relative one, or the bottom one) over
every byte and taking every frame of every stack it reaches, counts clamped as the masks clamp
them; the frame below a returning call is a position of its own, so the exploration never builds
a stack of two callers, and recursion at any depth adds no position. Positions over a caller are
visited before bottom ones (each serves every caller; both breadth first), then the one-frame
crossings of the frame pairs met. ``Constraint.compile`` then explores whole configurations in
what is left of the budget (``Constraint.precompute``), whose masks are lookups. A save
(artifact.py) keeps the position masks, relative parts, crossings and the report; unit counts are
computed again at first use (two int32 arrays per token each, remembered for the process).

Invariant: every part is computed by the lazy engine's own code on the same key, so a mask
assembled from a precomputed part is the mask the lazy engine computes, bit for bit; a part not
precomputed is computed at first use, as in ``mode="lazy"``. Where it applies: every grammar;
what it covers is bounded by ``EngineLimits.aot_max_positions``, ``aot_budget_ms`` and
``aot_max_bytes``. What stays lazy, and why, is in the :class:`CompileReport`:

* a counted repetition above a caller (a ``maxLength`` string inside an array item): its mask is
  filtered from the walk of its unbounded repetition over that caller (``counted``; its unit
  counts are precomputed, and where the caller is the bottom frame, the whole mask of the
  two-frame configuration, its *caller mask*, first of all: a value called from an object,
  ``EngineTuning.shared_calls``, meets one per set of keys left);
* the other counts of a repetition that may stop at once are not visited: at the bottom their
  masks are filtered from the sorted walk the first count's mask built (no trie walk; counted in
  ``filtered_counts``, not as lazy). Those inside a begun unit have sorted walks of their own,
  and short repetitions a filter per count: prepared last, in what is left of the budget
  (:class:`_CountedParts`; ``counted_bases``, ``counted_filters``);
* a configuration of several stacks (an ambiguous prefix: a key that is a listed name and a free
  string at once): its mask is the union of its stacks' at first use (``ambiguous``;
  ``StackUnion`` in mask_sources.py); its stacks' positions are explored;
* a top that may end at once, where the constraint walks such tops with their callers
  (``EngineTuning.relative_nullable`` off): ``caller-dependent`` (caller masks too);
* positions past the limits: ``limit``.

Cost: one relative walk per reachable top (a trie walk) and one byte row per position.
Memory: a sparse mask as its nonzero words, a dense one once per distinct mask, in the pool the
constraint's caches share (mask_store.py). Measured on
Llama 3 (2 shared cores, load 3-5): the schemas of ``schemas/`` compile in 0.4-1.6 s; objects with
keys in any order multiply positions by the sets of keys left, and there the budget ends first.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..deadline import check_deadline
from ..errors import ConstraintError, LimitError
from .configs import DEAD
from .counters import CountedHead, counted_head
from .mask_store import MaskPool
from .table import Exits

if TYPE_CHECKING:
    from .constraint import Constraint

#: the kinds of part :func:`compile_ahead` leaves lazy, with why (the report's wording)
LAZY_REASONS = {
    "caller-dependent": "a top that may end at once reads its caller's bytes: walked with its callers at first use",
    "counted": "a counted repetition above a caller is filtered from that caller's walk: computed at first use",
    "ambiguous": "a configuration of several stacks is walked whole at first use",
    "limit": "past EngineLimits.aot_max_positions, aot_budget_ms or aot_max_bytes: computed at first use",
}


class PositionMasks:
    """Masks of bottom positions and relative parts, kept compact (outside the constraint's
    bounded caches, which would drop them): a sparse mask as its nonzero words (most positions
    inside a literal or a key allow a few tokens), a dense one interned in the constraint's
    ``pool`` (mask_store.py), so that it is held once for every position and cache entry of the
    same mask (the string bodies of different values). A sparse mask is rebuilt into a fresh
    packed array at first use, then cached by the constraint as any other. ``nbytes`` counts
    the sparse words, the exits and the entries; the dense masks are the pool's bytes."""

    def __init__(self, words: int, pool: MaskPool) -> None:
        self._words = words
        self._pool = pool
        self._sparse: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._dense: dict[int, np.ndarray] = {}
        #: relative configuration -> its exits (its mask is kept as a position's)
        self._exits: dict[int, Exits] = {}
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self._sparse) + len(self._dense)

    def has_relative(self, rel: int) -> bool:
        return rel in self._exits

    def add_relative(self, rel: int, part: tuple[np.ndarray, Exits]) -> None:
        words, exits = part
        self.add(rel, words)
        self.add_exits(rel, exits)

    def add_exits(self, rel: int, exits: Exits) -> None:
        """The exits of relative configuration ``rel``, whose mask is kept (``add``)."""
        self._exits[rel] = exits
        self.nbytes += sum(nodes.nbytes + byts.nbytes for nodes, byts in exits.values())

    def entries(self) -> list[tuple[int, tuple[np.ndarray, np.ndarray] | np.ndarray, Exits | None]]:
        """Every mask kept, as ``(cid, mask, exits)``: ``mask`` the (index, values) of a sparse
        one or the packed words of a dense one, ``exits`` those of a relative part (None for a
        bottom position). What a save writes (the arrays are never written after ``add``)."""
        out: list[tuple[int, tuple[np.ndarray, np.ndarray] | np.ndarray, Exits | None]] = []
        out += [(cid, sparse, self._exits.get(cid)) for cid, sparse in self._sparse.items()]
        out += [(cid, dense, self._exits.get(cid)) for cid, dense in self._dense.items()]
        return out

    def relative(self, rel: int) -> tuple[np.ndarray, Exits] | None:
        """The packed mask and exits of relative configuration ``rel``, or None if not kept."""
        exits = self._exits.get(rel)
        if exits is None:
            return None
        return self.words(rel), exits  # type: ignore[return-value]

    def __contains__(self, cid: int) -> bool:
        return cid in self._sparse or cid in self._dense

    def add(self, cid: int, words: np.ndarray) -> None:
        nz = np.flatnonzero(words)
        if nz.size * 8 <= words.nbytes // 4:
            self.add_sparse(cid, nz.astype(np.int32), words[nz].copy())
            return
        self.add_dense(cid, words)

    def add_sparse(self, cid: int, index: np.ndarray, values: np.ndarray) -> None:
        """Keep the mask of ``cid`` as the int32 ``values`` of its words at ``index`` (the other
        words are zero)."""
        self._sparse[cid] = (index, values)
        self.nbytes += index.size * 8 + 64

    def add_dense(self, cid: int, words: np.ndarray) -> None:
        """Keep the packed mask ``words`` of ``cid`` (read-only), shared with every equal mask
        the constraint holds (its pool)."""
        if cid in self._dense:
            self._pool.release(self._dense[cid])
        self._dense[cid] = self._pool.intern(words)
        self.nbytes += 64

    def is_dense(self, cid: int) -> bool:
        """Whether the mask of ``cid`` is kept whole (interned in the pool), not as sparse words."""
        return cid in self._dense

    def dense(self) -> list[tuple[int, np.ndarray]]:
        """Every whole mask of a bottom position kept whole, as ``(cid, words)`` (not the
        packed words of a relative part, which are no configuration's whole mask)."""
        return [(cid, words) for cid, words in self._dense.items() if cid not in self._exits]

    def words(self, cid: int) -> np.ndarray | None:
        """The packed mask of bottom configuration ``cid`` (read-only), or None if not kept."""
        found = self._dense.get(cid)
        if found is not None:
            return found
        sparse = self._sparse.get(cid)
        if sparse is None:
            return None
        out = np.zeros(self._words, dtype=np.int32)
        out[sparse[0]] = sparse[1]
        out.flags.writeable = False
        return out


@dataclass
class CompileReport:
    """What :func:`compile_ahead` precomputed and what it left to be computed at first use."""

    #: positions (top terms, at the bottom or over a caller) reached from the start
    positions: int = 0
    #: relative parts (a top's walk over the hole) computed
    relative_parts: int = 0
    #: masks of bottom positions computed (configurations of one stack at the bottom)
    bottom_masks: int = 0
    #: unit counts of counted repetitions computed
    unit_counts: int = 0
    #: walks of the tokens that cross from a top into the frame below it (one frame deep)
    crossings: int = 0
    #: whole masks of a top that stays lazy over a caller (``counted``, ``caller-dependent``)
    #: with each bottom frame met below it: a called value over the object that called it
    caller_masks: int = 0
    #: counts of a repetition that may stop at once not visited: their masks are filtered from
    #: the repetition's sorted walk, which the first count's mask built (no trie walk)
    filtered_counts: int = 0
    #: sorted walks of such counts inside a begun unit (after a ``\\`` or a character's lead
    #: byte: a walk of their own), at the bottom and over each bottom caller of the repetition
    counted_bases: int = 0
    #: filtered masks of counts computed: of each such begun count, and of every count of a
    #: short repetition (near its end a filter of up to the whole vocabulary:
    #: ``EngineTuning.aot_counted_filters``)
    counted_filters: int = 0
    #: kind of lazy part -> how many positions or configurations of that kind were met
    lazy: dict[str, int] = field(default_factory=dict)
    #: whether the exploration stopped at a limit (some positions were not visited), and which
    truncated: bool = False
    stopped_by: str | None = None
    #: seconds from the start the budget is counted from (the compile's) to the positions' end
    seconds: float = 0.0
    #: ``Constraint.memory_bytes`` after the compile
    memory_bytes: int = 0

    @property
    def complete(self) -> bool:
        """Whether every mask along the grammar is assembled from precomputed parts."""
        return not self.truncated and not any(self.lazy.values())

    def to_data(self) -> dict[str, object]:
        """The report as JSON data (what a save writes in its header)."""
        return {name: getattr(self, name) for name in _REPORT_FIELDS}

    @classmethod
    def from_data(cls, data: object) -> CompileReport:
        """The report ``to_data`` wrote; ConstraintError where a field is missing or of the
        wrong type or range (a saved blob is not trusted)."""
        if not isinstance(data, dict) or set(data) - _OPTIONAL_FIELDS != set(_REPORT_FIELDS) - _OPTIONAL_FIELDS:
            raise ConstraintError("saved constraint is corrupt (compile report fields)")
        data = {**{name: 0 for name in _OPTIONAL_FIELDS}, **data}
        counts = [data[name] for name in _REPORT_COUNTS]
        lazy, stopped_by, seconds = data["lazy"], data["stopped_by"], data["seconds"]
        if (
            not all(_count(v) for v in counts)
            or not isinstance(lazy, dict)
            or not all(k in LAZY_REASONS and _count(v) for k, v in lazy.items())
            or not isinstance(data["truncated"], bool)
            or stopped_by not in _STOPPED_BY
            or isinstance(seconds, bool)
            or not isinstance(seconds, (int, float))
            or not 0 <= seconds < float("inf")
        ):
            raise ConstraintError("saved constraint is corrupt (compile report)")
        return cls(
            **{name: data[name] for name in _REPORT_COUNTS},
            lazy=dict(lazy),
            truncated=data["truncated"],
            stopped_by=stopped_by,
            seconds=float(seconds),
        )

    def describe(self) -> str:
        parts = [
            f"{self.positions} positions, {self.relative_parts} relative parts, {self.bottom_masks} bottom masks, "
            f"{self.unit_counts} unit counts, {self.crossings} crossings, {self.caller_masks} caller masks, "
            f"{self.filtered_counts} counts filtered at first use, {self.counted_bases} counted bases, "
            f"{self.counted_filters} counted filters, "
            f"in {self.seconds:.3f} s ({self.memory_bytes} bytes)"
        ]
        for kind, n in sorted(self.lazy.items()):
            if n:
                parts.append(f"lazy: {n} {kind} ({LAZY_REASONS[kind]})")
        return "; ".join(parts)


#: the report's counts (non-negative integers), and every field a saved report holds
_REPORT_COUNTS = (
    "positions",
    "relative_parts",
    "bottom_masks",
    "unit_counts",
    "crossings",
    "caller_masks",
    "filtered_counts",
    "counted_bases",
    "counted_filters",
    "memory_bytes",
)
_REPORT_FIELDS = _REPORT_COUNTS + ("lazy", "truncated", "stopped_by", "seconds")
#: counts a blob saved before they were reported may lack (read as 0)
_OPTIONAL_FIELDS = frozenset(("counted_bases", "counted_filters"))
#: the limits an exploration may stop at (``CompileReport.stopped_by``)
_STOPPED_BY = (None, "aot_max_positions", "aot_budget_ms", "aot_max_bytes")


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 62


def compile_ahead(
    c: Constraint,
    *,
    max_positions: int,
    budget_ms: int,
    max_bytes: int,
    nullable_over_hole: bool = True,
    complete: bool = False,
    started: float | None = None,
) -> CompileReport:
    """Precompute the parts of every position reachable from the start (see the module
    docstring), up to ``max_positions`` positions, ``budget_ms`` milliseconds and ``max_bytes``
    of estimated memory. ``nullable_over_hole``: whether the constraint walks a top that may end
    at once over the hole (``EngineTuning.relative_nullable``). ``started``: the
    ``time.perf_counter()`` the budget is counted from (the compile's start, so that it covers
    building the machines too; now where not given). With
    ``complete``, a LimitError where a limit stopped the exploration and a ConstraintError
    where some part can only be computed at first use, both naming what stays lazy."""
    if started is None:
        started = time.perf_counter()
    report = CompileReport()
    with c._lock:
        _explore(c, report, max_positions, started + budget_ms / 1000, max_bytes, nullable_over_hole)
    report.seconds = time.perf_counter() - started
    report.memory_bytes = c.memory_bytes()
    if complete and not report.complete:
        text = f"the constraint cannot be compiled completely ahead of time: {report.describe()}"
        if report.truncated:
            limit = report.stopped_by or "aot_max_positions"
            value = {"aot_budget_ms": budget_ms, "aot_max_bytes": max_bytes}.get(limit, max_positions)
            raise LimitError(text, limit=limit, value=value)
        raise ConstraintError(text)
    return report


#: positions explored between two looks at the constraint's estimated memory
MEMORY_LOOK_EVERY = 64


def _explore(
    c: Constraint, report: CompileReport, max_positions: int, stop_at: float, max_bytes: int, nullable_over_hole: bool
) -> None:
    system, store = c._system, c._machines.store
    clamp = c._clamp
    lazy = report.lazy
    seen: set[tuple[int, bool]] = set()
    queue: deque[tuple[int, bool]] = deque()
    # configurations of several stacks already counted as ambiguous
    ambiguous: set[int] = set()
    positions = c._positions
    relative = c._relative_masks

    def push(top: int, bottom: bool) -> None:
        key = (clamp.term(top), bottom)
        if key not in seen:
            if len(seen) >= max_positions:
                report.truncated, report.stopped_by = True, "aot_max_positions"
                lazy["limit"] = lazy.get("limit", 0) + 1
                return
            seen.add(key)
            (queue if bottom else shared).append(key)

    # positions over a caller first: each one's part serves every caller, where a bottom
    # position serves one configuration (each queue breadth first)
    shared: deque[tuple[int, bool]] = deque()
    push(system.stack_top[system.configs[system.start][0]], True)
    pairs: set[tuple[int, int]] = set()
    # (top, caller) pairs whose caller is the bottom frame and whose top stays lazy over a
    # caller: the whole two-frame configuration is one mask, computed before any position (a
    # first use costs several walks' worth: the counted walk of a string over its caller)
    bottom_pairs: set[tuple[int, int]] = set()
    callers: deque[tuple[int, int]] = deque()
    # what a compile prepares of counted repetitions beyond their first count (last)
    plan = _CountedParts(c)

    def pair(top: int, caller: int) -> None:
        if (top, caller) not in bottom_pairs:
            bottom_pairs.add((top, caller))
            if _lazy_over_caller(c, top, nullable_over_hole):
                callers.append((top, caller))
            plan.caller(top, caller)

    visited = 0
    while queue or shared or callers:
        check_deadline()
        visited += 1
        stop = "aot_budget_ms" if time.perf_counter() > stop_at else None
        if stop is None and visited % MEMORY_LOOK_EVERY == 0 and c.memory_bytes() > max_bytes:
            stop = "aot_max_bytes"
        if stop is not None:
            report.truncated, report.stopped_by = True, stop
            lazy["limit"] = lazy.get("limit", 0) + len(queue) + len(shared) + len(callers)
            break
        if callers:
            cid = _caller_mask(c, report, *callers.popleft())
            if cid is not None:
                plan.filters.append(cid)
            continue
        top, bottom = shared.popleft() if shared else queue.popleft()
        head = counted_head(store, top)
        # the other counts of a repetition that may stop at once are filtered from one sorted
        # walk at first use (counters.py): the exploration leaves them out, not what follows
        repetition = None
        if head is not None and head.lo == 0 and head.other is None and _counted(c, head):
            repetition = (head.unit, head.rest)
        if bottom:
            cid = system.config([system.stack(-1, top)])
            if cid not in positions:
                _keep_position(c, cid)
                report.bottom_masks += 1
            if repetition is not None:
                plan.filters.append(cid)
        else:
            cid = system.relative(top)
            if head is not None:
                lazy["counted"] = lazy.get("counted", 0) + 1
                if (head.unit, head.partial) not in c._counted_masks.units:
                    c._counted_masks.unit_counts(head.unit, head.partial)
                    report.unit_counts += 1
            elif (loop := relative.loop_split(top)) is not None and loop[0] not in relative.spine_refused:
                # the constraint walks ``x* b`` over a frame holding the rest: that part is
                # shared by every rest (``RelativeMasks.loop_split``)
                part = system.relative(loop[0])
                if part not in relative.relative and not positions.has_relative(part):
                    positions.add_relative(part, relative.walk(part))
                    report.relative_parts += 1
                pairs.add((loop[0], clamp.term(loop[1])))
            elif store.nullable[top] and not nullable_over_hole:
                lazy["caller-dependent"] = lazy.get("caller-dependent", 0) + 1
            elif cid not in relative.relative and not positions.has_relative(cid):
                positions.add_relative(cid, relative.walk(cid))
                report.relative_parts += 1
        for target in _targets(c, cid):
            stacks = system.configs[target]
            if len(stacks) > 1 and target not in ambiguous:
                ambiguous.add(target)
                lazy["ambiguous"] = lazy.get("ambiguous", 0) + 1
            for sid in stacks:
                if repetition is not None and _same_repetition(c, system.stack_top[sid], repetition):
                    if bottom:
                        report.filtered_counts += 1
                        if len(stacks) == 1 and system.stack_parent[sid] < 0:
                            plan.count(sid, target, repetition)
                    else:
                        lazy["counted"] = lazy.get("counted", 0) + 1
                        if system.stack_parent[sid] == system.hole:
                            plan.count(sid, None, repetition)
                    continue
                _push_frames(c, sid, push, pairs, pair)
    report.positions = len(seen)
    if not report.truncated:
        _crossings(c, report, pairs, stop_at)
    if not report.truncated:
        # last, in what is left of the budget: a count inside a begun unit is met less often
        # than any position or crossing, a count near the end of a repetition less often than
        # its first
        plan.run(report, stop_at, max_bytes)


class _CountedParts:
    """What a compile prepares of the counts of a repetition that ``_explore`` leaves out, with
    the lazy engine's own code on its keys (``CountedMasks.prepare``, ``prepare_counts``).

    A count of ``x{lo,hi} rest`` inside a begun unit (after a ``\\``, inside ``\\u00``, after a
    character's lead byte) is filtered from a sorted walk of its own, of ``partial x* rest``,
    one per begun state and caller frames: at first use a trie walk (1-4 ms on Llama 3). The
    states are found by stepping the first begun ones met (one byte into the unit) byte by byte,
    following counted tops only; each is prepared at the bottom, or over each bottom caller of
    its repetition (the frames of a caller mask). Then the filtered masks of every count of a
    short repetition, from its first count. A repetition inside a unit (the hex digits of a
    surrogate's ``\\u``) holds the outer count in its rest, a walk per outer count: left to
    first use."""

    def __init__(self, c: Constraint) -> None:
        self._c = c
        #: configurations whose sorted walk to prepare (with the filter of their own count)
        self.counted: deque[int] = deque()
        #: first counts whose every count to filter: a begun unit's base holds the few tokens
        #: that go on with its bytes, a first count's up to the whole vocabulary (a filter of
        #: 0.3-7 ms near its end, where a begun one's costs tens of µs)
        self.filters: deque[int] = deque()
        #: configurations (at the bottom, or relative) whose next byte's counted tops to follow
        self._inside: deque[tuple[int, tuple[int, int], bool]] = deque()
        self._seen: set[tuple[bool, tuple[int, int], int, int, int | None, int | None]] = set()
        #: per repetition ``(unit, rest)`` over a caller: its bottom callers, its begun tops
        self._callers: dict[tuple[int, int], set[int]] = {}
        self._begun: dict[tuple[int, int], list[int]] = {}

    def _over(self, caller: int, top: int) -> int:
        system = self._c._system
        return system.config([system.stack(system.stack(-1, caller), top)])

    def caller(self, top: int, caller: int) -> None:
        """``top`` met over the bottom frame ``caller``: where it is a counted repetition, the
        begun tops of it met so far are prepared over ``caller`` too."""
        head = counted_head(self._c._machines.store, top)
        if head is not None:
            met = self._callers.setdefault((head.unit, head.rest), set())
            if caller not in met:
                met.add(caller)
                self.counted.extend(self._over(caller, t) for t in self._begun.get((head.unit, head.rest), ()))

    def count(self, sid: int, cid: int | None, owner: tuple[int, int]) -> None:
        """Stack ``sid``, a count of the repetition ``owner`` (or a counted top inside one of its
        units) left out: at the bottom of configuration ``cid``, or over the hole (``cid``
        None). Queued once per key of its sorted walk, less the caller."""
        c = self._c
        top = c._system.stack_top[sid]
        head = counted_head(c._machines.store, top)
        if head is None:
            return
        key = (cid is not None, owner, head.unit, head.rest, head.other, head.partial)
        if key in self._seen:
            return
        self._seen.add(key)
        own = (head.unit, head.rest) == owner
        if cid is not None:
            if own:
                self.counted.append(cid)
            self._inside.append((cid, owner, True))
            return
        top = c._clamp.term(top)
        if own:
            self._begun.setdefault(owner, []).append(top)
            self.counted.extend(self._over(caller, top) for caller in self._callers.get(owner, ()))
        self._inside.append((c._system.relative(top), owner, False))

    def _deeper(self, here: int, owner: tuple[int, int], bottom: bool) -> None:
        """The counted tops one byte further than configuration ``here``."""
        system = self._c._system
        for target in _targets(self._c, here):
            stacks = system.configs[target]
            for sid in stacks:
                if bottom and len(stacks) == 1 and system.stack_parent[sid] < 0:
                    self.count(sid, target, owner)
                elif not bottom and system.stack_parent[sid] == system.hole:
                    self.count(sid, None, owner)

    def run(self, report: CompileReport, stop_at: float, max_bytes: int) -> None:
        """Prepare what is queued until ``stop_at`` or ``max_bytes`` (what is left is computed at
        first use, as in ``mode="lazy"``)."""
        c, masks = self._c, self._c._counted_masks
        done = 0
        while self.counted or self._inside or self.filters:
            check_deadline()
            done += 1
            if time.perf_counter() > stop_at or (done % MEMORY_LOOK_EVERY == 0 and c.memory_bytes() > max_bytes):
                return
            if self.counted:
                base, words = masks.prepare(c._clamp.config(self.counted.popleft()))
                report.counted_bases += base
                report.counted_filters += words
            elif self._inside:
                self._deeper(*self._inside.popleft())
            else:
                report.counted_filters += masks.prepare_counts(c._clamp.config(self.filters.popleft()))


def _counted(c: Constraint, head: CountedHead) -> bool:
    """Whether the constraint masks ``head`` by filtering counts: its unit has per-token counts
    from where it is (a prefix ``counted_head`` reads as a begun unit may be no state of the
    unit's automaton: the rest of a key before a counted string)."""
    return c._counted_masks.unit_counts(head.unit, head.partial) is not None


def _same_repetition(c: Constraint, top: int, repetition: tuple[int, int]) -> bool:
    """Whether ``top`` is another count of the repetition ``(unit, rest)``, masked by filtering."""
    head = counted_head(c._machines.store, top)
    return head is not None and (head.unit, head.rest) == repetition and _counted(c, head)


def _targets(c: Constraint, cid: int) -> set[int]:
    """The live configurations one byte or one token atom leads to from ``cid``."""
    targets = set(c.row(cid).tolist())
    targets.update(c._atom_step(cid, k) for k in range(len(c._atom_ids)))
    targets.discard(DEAD)
    return targets


def _push_frames(c: Constraint, sid: int, push: object, pairs: set[tuple[int, int]], bottom_pair: object) -> None:
    """Every frame of stack ``sid`` as a position (the frames above the hole of a relative
    stack; the mark a return into the hole leaves is none), each frame over a caller frame
    into ``pairs`` (clamped tops: where tokens cross from one into the other), and to
    ``bottom_pair`` where that caller is the bottom frame."""
    system = c._system
    hole, mark = system.hole, system.exit_mark
    clamp = c._clamp
    below = -1
    while sid >= 0 and sid != hole and sid != mark:
        parent = system.stack_parent[sid]
        top = system.stack_top[sid]
        push(top, parent < 0)  # type: ignore[operator]
        if below >= 0:
            pairs.add((below, clamp.term(top)))
            if parent < 0:
                bottom_pair(below, clamp.term(top))  # type: ignore[operator]
        below = clamp.term(top) if parent >= 0 else -1
        sid = parent


def _crossings(c: Constraint, report: CompileReport, pairs: set[tuple[int, int]], stop_at: float) -> None:
    """The crossings (``RelativeMasks.crossing``) of tokens from each top of ``pairs`` whose
    relative part is known into the frame below it, one frame deep: what a mask over a caller
    adds to its relative part. Deeper crossings are computed at first use."""
    system = c._system
    for top, caller in sorted(pairs):
        if time.perf_counter() > stop_at:
            report.truncated, report.stopped_by = True, "aot_budget_ms"
            return
        rel = system.relative(top)
        part = c._relative_masks.relative.get(rel) or c._positions.relative(rel)
        if part is None or not part[1]:
            continue
        # the caller's first bytes depend on its top alone (it is over a caller of its own)
        tail = system.relative(caller)
        exits = c._relative_masks.exits_into(part[1], tail)
        if exits and (rel, caller) not in c._relative_masks.crossings:
            c._relative_masks.crossing(tail, exits, (rel,))
            report.crossings += 1


def _lazy_over_caller(c: Constraint, top: int, nullable_over_hole: bool) -> bool:
    """Whether the mask of ``top`` over a caller stays lazy (``_explore``'s cases: a counted
    repetition, or a top that may end at once where such tops are walked with their callers)."""
    if counted_head(c._machines.store, top) is not None:
        return True
    relative = c._relative_masks
    loop = relative.loop_split(top)
    if loop is not None and loop[0] not in relative.spine_refused:
        return False
    return c._machines.store.nullable[top] and not nullable_over_hole


def _caller_mask(c: Constraint, report: CompileReport, top: int, caller: int) -> int | None:
    """The whole mask of configuration ``[caller, top]`` (``caller`` at the bottom, ``top`` a
    top that stays lazy over a caller), kept as a bottom position's. A value called from an
    object at the bottom (a rule made a machine by ``EngineTuning.shared_calls``) meets one
    such configuration per set of keys left; for a counted repetition, the first count's mask
    builds the sorted walk its other counts are filtered from at first use (counters.py).
    Deeper callers are computed at first use."""
    system, positions = c._system, c._positions
    cid = system.config([system.stack(system.stack(-1, caller), top)])
    if cid in positions:
        return None
    _keep_position(c, cid)
    report.caller_masks += 1
    return cid


def _keep_position(c: Constraint, cid: int) -> None:
    """Compute the mask of ``cid`` and keep it in the position masks. A dense mask also stays in
    the constraint's mask cache: the pool holds it once for both, so the entry costs a dict slot,
    and a request's first visit is a cache hit instead of a trip through the mask sources (which
    costs tens of µs: the count twins' lookup, the pool's interning). A sparse one leaves the
    cache (it would hold 16 KB for a few nonzero words on Llama 3) and is rebuilt at first use."""
    known = cid in c._masks
    c._positions.add(cid, c._compute_mask(cid))
    if not known and not c._positions.is_dense(cid):
        c._masks.pop(cid, None)
