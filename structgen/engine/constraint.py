"""`Constraint` (a grammar compiled for one vocabulary) and `State` (one request's position in it).

Lifetimes follow the serving engines: a :class:`~structgen.vocab.Vocab` lives per model (its
token trie is built once and cached on disk), a :class:`Constraint` per (grammar, vocabulary) and
is shared by every request, and a :class:`State` per request. A state is a list of configuration
ids (one per committed token, for rollback); everything it computes - transitions, masks - is
stored in the constraint, so the next request that reaches the same configuration gets its mask
from a dictionary.
"""

from __future__ import annotations

import itertools
import operator
import threading
import time
from typing import Iterable, NamedTuple, Sequence

import numpy as np

from ..deadline import check_deadline, deadline_scope
from ..errors import ConstraintError, GrammarError, LimitError
from ..grammar import ir
from ..grammar.grammar import Grammar
from ..vocab import Vocab
from .ahead import CompileReport, PositionMasks, compile_ahead
from .arrays import fifo_put, unique_inverse
from .budget_bound import CompletionBound
from .configs import DEAD, ConfigSystem
from .count_clamp import CountClamp, byte_limits_for
from .count_offsets import CONFIG_MASK, CountOffsets
from .counted_masks import CountedMasks
from .deep import deep_recursion
from .lexeme_frames import for_machines
from .limits import DEFAULT_ENGINE_LIMITS, EngineLimits
from .machines import Machines, build_machines, token_symbol
from .mask_sources import Answer, CountTwins, MaskSource, Partial, PrecomputedPositions, StackUnion, Walks
from .mask_store import MASK_ENTRY_BYTES, MaskPool, SharedMasks
from .masks import pack_ids, pack_ids_onto, unpack, words_for
from .relative_masks import RelativeMasks
from .table import Exits, TransitionTable
from .token_budget import DEFAULT_TOKEN_BUDGET_TUNING, TokenCounter, multibyte_ends
from .trie_cache import token_trie_for
from .tuning import DEFAULT_ENGINE_TUNING, EngineTuning

#: Bytes one configuration, stack or term costs with everything remembered about it (memos,
#: indexes, derivatives), beside the table row and masks counted as allocated. Fitted to
#: tracemalloc (``benchmarks/memory_per_token.py``, Llama 3): a token inside ``maxLength:
#: 1000000`` with ``count_offsets`` off (a configuration, a stack, two terms: 1,457 B), any JSON
#: nested a level a token (a configuration, two stacks: 1,070 B), ``(a|b)*a(a|b){24}`` (11.2 of
#: each a token: 2.2 KB each beside the rows), so that the estimate is within 1.5x of each; and
#: not below what a constraint allocates over the walks of each schema of ``schemas/`` (the
#: tightest, ``constrained``: 641 configurations, 717 stacks, 2,145 terms). 2,048 / 600 / 800
#: before: about 3x the first two.
MEMORY_PER_CONFIG = 650
MEMORY_PER_STACK = 350
MEMORY_PER_TERM = 540


class Constraint:
    """A grammar compiled for a vocabulary: the shared, reusable part of constrained decoding."""

    def __init__(
        self,
        grammar: Grammar,
        vocab: Vocab,
        machines: Machines,
        system: ConfigSystem,
        limits: EngineLimits,
        tuning: EngineTuning = DEFAULT_ENGINE_TUNING,
    ) -> None:
        self.grammar = grammar
        self.vocab = vocab
        self.limits = limits
        #: the switches and thresholds of the walks (masks are the same under every tuning)
        self.tuning = tuning
        self._machines = machines
        self._system = system
        self._table = TransitionTable(system, tail_missing=lambda: vocab.utf8_tail_missing, tuning=tuning)
        self._trie = token_trie_for(vocab)
        self._width = vocab.logit_width
        self._words = words_for(self._width)
        self._row_shape = (self._words,)
        self._eos = np.asarray([e for e in vocab.eos_token_ids if e < self._width], dtype=np.int64)
        self._eos_set = frozenset(self._eos.tolist())
        self._atom_ids = self._resolve_atoms(machines.token_atoms)
        #: decides configurations the steps cannot (a greedy lexeme ending into another machine)
        self._liveness = for_machines(machines, system, limits.max_liveness_states)
        #: every cached mask below is held once per distinct content (mask_store.py)
        self._mask_pool = MaskPool()
        self._masks: dict[int, np.ndarray] = SharedMasks(self._mask_pool)
        self._commits: dict[tuple[int, int], int] = {}
        self._atom_steps: dict[tuple[int, int], int] = {}
        self._text_index: dict[bytes, int] | None = None
        # requests may share a constraint across threads: computing (not reading) takes the lock
        self._lock = threading.RLock()
        #: per configuration, the budget figures in bytes (see ``_figures``) and in tokens
        self._after_cache: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        self._token_after: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._top_need: dict[int, int] = {}  # the largest byte figure, per configuration
        self._top_tokens: dict[int, int] = {}  # the largest token figure, per configuration
        self._clamp = CountClamp(system, lambda: byte_limits_for(vocab), tuning=tuning)
        self._budget_clamp = CountClamp(system, lambda: byte_limits_for(vocab), keep_lengths=True, tuning=tuning)
        #: masks of bottom positions precomputed by ``mode="aot"`` (ahead.py), kept compact
        self._positions = PositionMasks(self._words, self._mask_pool)
        walks = Walks(system, machines.store, self._table, self._trie, self._width)
        self._relative_masks = RelativeMasks(
            walks, self._positions, tuning, limits.max_cached_masks, self._mask_pool, self._compute_mask
        )
        self._counted_masks = CountedMasks(walks, tuning, limits.max_cached_masks, self._mask_pool)
        #: the mask sources in pipeline order (mask_sources.py): each answers for some configurations
        self.mask_sources: tuple[MaskSource, ...] = (
            # a dictionary lookup first: a position's first visit needs no twin computed
            PrecomputedPositions(self._positions),
            CountTwins(self._clamp, self._compute_mask),
            self._counted_masks,
            self._relative_masks,
            StackUnion(system, self._compute_mask, enabled=tuning.stack_union and self._liveness is None),
        )
        self._bound = CompletionBound(system, machines.rule_bound)
        #: states inside long counted repetitions hold the count aside (count_offsets.py); not
        #: where a commit reads more than the bytes' steps (token atoms, frame liveness)
        self._offsets = CountOffsets(
            system,
            int(np.asarray(vocab.lengths).max(initial=1)),
            enabled=tuning.count_offsets and self._liveness is None and not self._atom_ids,
            tuning=tuning,
        )
        self._token_counter: TokenCounter | None = None
        self._bytes_bound: bool | None = None
        self._memory_checked_at = -1  # configurations when memory_bytes was last compared
        #: what ``mode="aot"`` precomputed and left lazy (None for a lazy compile)
        self.report: CompileReport | None = None

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def compile(
        cls,
        grammar: Grammar,
        vocab: Vocab,
        *,
        mode: str = "lazy",
        limits: EngineLimits = DEFAULT_ENGINE_LIMITS,
        complete: bool = False,
        tuning: EngineTuning = DEFAULT_ENGINE_TUNING,
    ) -> Constraint:
        """Compile ``grammar`` for ``vocab``.

        ``mode="lazy"`` (default) does the least work up front: automata states and masks are
        built the first time a request reaches them. ``mode="aot"`` explores reachable
        positions ahead of time (ahead.py: the parts masks are assembled from, per grammar
        position, up to ``limits.aot_max_positions``), then configurations breadth first (up to
        ``limits.aot_max_configs``) with their masks; ``report`` says what stays lazy, and with
        ``complete`` a LimitError or ConstraintError names it. Both modes give identical masks.
        ``tuning``: the walks' switches and thresholds
        (:class:`~structgen.engine.tuning.EngineTuning`; every tuning gives the same masks).
        """
        if not isinstance(grammar, Grammar):
            raise ConstraintError(f"compile takes a Grammar, not {type(grammar).__name__}")
        if not isinstance(vocab, Vocab):
            raise ConstraintError(f"compile takes a Vocab, not {type(vocab).__name__}")
        if issubclass(cls, DynamicConstraint) and mode != "lazy":
            raise ConstraintError(f"a DynamicConstraint compiles lazily; for mode={mode!r} use Constraint.compile")
        if not isinstance(mode, str) or mode not in ("lazy", "aot"):
            raise ConstraintError(f"mode must be 'lazy' or 'aot', not {mode!r}")
        if not isinstance(limits, EngineLimits):
            raise ConstraintError(f"limits must be an EngineLimits, not {type(limits).__name__}")
        if not isinstance(complete, bool) or (complete and mode != "aot"):
            raise ConstraintError(f"complete must be a bool and needs mode='aot', not {complete!r} with {mode!r}")
        check_tuning(tuning)
        with deadline_scope(limits.deadline_s, limit="deadline_s"):
            started = time.perf_counter()  # the budget of a compile ahead covers the machines too
            # on a compile ahead, rules followed by many continuations are machines of their own,
            # so that their positions are not multiplied (EngineTuning.shared_calls)
            machines = build_machines(grammar, shared_calls=tuning.shared_calls if mode == "aot" else 0)
            system = ConfigSystem(
                machines,
                max_stacks_per_config=limits.max_stacks_per_config,
                max_configs=limits.max_configs,
            )
            # a lazy compile is a dynamic constraint whichever class was asked
            kind = DynamicConstraint if mode == "lazy" and cls is Constraint else cls
            c = kind(grammar, vocab, machines, system, limits, tuning)
            if mode == "aot":
                until = started + limits.aot_budget_ms / 1000
                c.report = compile_ahead(
                    c,
                    max_positions=limits.aot_max_positions,
                    budget_ms=limits.aot_budget_ms,
                    max_bytes=limits.aot_max_bytes,
                    nullable_over_hole=tuning.relative_nullable,
                    complete=complete,
                    started=started,
                )
                # whole configurations in what is left of the budget: lookups, not assemblies
                c.precompute(limits.aot_max_configs, until=until, max_bytes=limits.aot_max_bytes)
        return c

    def _resolve_atoms(self, atoms: Sequence[ir.Token]) -> list[tuple[np.ndarray, bool]]:
        out = []
        for atom in atoms:
            ids = list(atom.ids)
            if not ids and atom.name is not None:
                ids = self.vocab.lookup_text(atom.name)
                if not ids:
                    raise GrammarError(f"token {atom.name!r} is not in the vocabulary")
            bad = [i for i in ids if i >= self._width]
            if bad:
                raise GrammarError(f"token ids {bad} are outside the model's {self._width} logits")
            out.append((np.asarray(sorted(ids), dtype=np.int64), atom.negated))
        return out

    # -- configurations -------------------------------------------------------------------------

    @property
    def start_config(self) -> int:
        return self._system.start

    def start(self) -> State:
        """A fresh request state at the start of the grammar."""
        return State(self, [self.position(self._system.start)])

    def accepting(self, cid: int) -> bool:
        return self._system.accepting(cid)

    def _atom_step(self, cid: int, k: int) -> int:
        key = (cid, k)
        r = self._atom_steps.get(key)
        if r is None:
            with self._lock:  # a step may intern configurations: the same lock as every computation
                r = self._atom_steps[key] = self._system.step(cid, token_symbol(k))
        return r

    def mask_words(self, cid: int) -> np.ndarray:
        """The packed mask of configuration ``cid`` (read-only, cached)."""
        m = self._masks.get(cid)
        if m is not None:
            return m
        with self._lock:
            return self._compute_mask(cid)

    def _live_words(self, cid: int, words: np.ndarray) -> np.ndarray:
        """``words`` without the tokens after which no sentence exists (lexeme_frames.py): text
        tokens by their end configurations in a walk, end-of-sequence and token atoms by commits."""
        ids = np.flatnonzero(unpack(words, self._width))
        eos = self._eos_set if self._system.accepting(cid) else frozenset()
        if any(negated for _, negated in self._atom_ids):  # every token may read an atom
            none = np.zeros(0, dtype=np.int64)
            walk, by_commit = (none, none, none), ids
        else:
            walk = self._table.walk_ends(cid, self._trie)
            by_commit = np.concatenate([self._eos, *(aids for aids, _ in self._atom_ids)])
        keep = self._liveness.live_tokens(ids, walk, by_commit, lambda t: t in eos or self.commit(cid, t) != DEAD)
        if len(keep) != len(ids):
            words = pack_ids(keep, self._width)
            words.flags.writeable = False
        return words

    @deep_recursion
    def _compute_mask(self, cid: int) -> np.ndarray:
        """The pipeline (mask_sources.py): the cache, the sources in order, the plain walk, then
        the special tokens on a part."""
        m = self._masks.get(cid)
        if m is not None:
            return m
        for source in self.mask_sources:
            found = source.answer(cid)
            if found is not None:
                break
        else:
            region, ids = self._table.walk_parts(cid, self._trie)
            found = Partial(None if region is None else region.words(self._trie, self._width), ids)
        words = self._finish(cid, found)
        if self._liveness is not None:
            # filtered before it is cached: a reader outside the lock never sees the unfiltered mask
            words = self._live_words(cid, words)
        fifo_put(self._masks, cid, words, self.limits.max_cached_masks)
        return words

    def _finish(self, cid: int, found: Answer) -> np.ndarray:
        """The mask of ``cid`` from a source's answer: a whole mask as it is, a part packed with
        the special tokens (read-only)."""
        if not isinstance(found, Partial):
            return found
        ids = found.ids
        extra = self._special_ids(cid)
        if extra:
            ids = np.concatenate([ids.astype(np.int64)] + extra)
        words = pack_ids(ids, self._width) if found.words is None else pack_ids_onto(found.words, ids)
        words.flags.writeable = False
        return words

    def _special_ids(self, cid: int) -> list[np.ndarray]:
        """The end-of-sequence ids where ``cid`` accepts, and the ids of each token atom it may read."""
        extra = []
        if len(self._eos) and self._system.accepting(cid):
            extra.append(self._eos)
        for k, (aids, negated) in enumerate(self._atom_ids):
            if self._atom_step(cid, k) != DEAD:
                if negated:
                    everything = np.arange(self.vocab.n_tokens, dtype=np.int64)
                    keep = np.isin(everything, aids, invert=True) & np.isin(everything, self._eos, invert=True)
                    extra.append(everything[keep])
                else:
                    extra.append(aids)
        return extra

    def shortest(self, cid: int) -> int | None:
        """Bytes in the shortest completion from ``cid``, a token atom counted as one (None if
        there is none)."""
        return self._system.shortest(cid)

    def shortest_tokens(self, cid: int) -> int | None:
        """Tokens of this vocabulary in the shortest completion from ``cid`` that budget masks
        count (None if there is none): a canonical shortest byte completion spelled in the
        fewest tokens (token_budget.py), which a model can always write. For a grammar with token
        atoms, the bytes (the figures its budget masks keep), each atom counted as one."""
        if self._atom_ids:
            return self._system.shortest(cid)
        with self._lock:
            return self._counter().tokens(cid)

    def _counter(self) -> TokenCounter:
        counter = self._token_counter
        if counter is None:
            vocab = self.vocab
            usable = np.zeros(max(self._trie.n_tokens, vocab.n_tokens), dtype=bool)
            usable[: min(self._width, usable.size)] = True
            usable[[e for e in vocab.eos_token_ids if e < usable.size]] = False
            counter = self._token_counter = TokenCounter(
                self._system,
                self._table.step,
                self._trie,
                usable,
                max_cached=self.limits.max_cached_masks,
                tuning=DEFAULT_TOKEN_BUDGET_TUNING,
            )
        return counter

    def _after(self, cid: int) -> tuple[np.ndarray, np.ndarray]:
        """Allowed token ids of ``cid`` and, for each, the tokens its shortest completion needs
        (:meth:`shortest_tokens` of the configuration after it; the bytes where the grammar has
        token atoms)."""
        r = self._token_after.get(cid)
        if r is not None:
            return r
        with self._lock:
            return self._compute_token_after(cid)

    @deep_recursion
    def _compute_token_after(self, cid: int) -> tuple[np.ndarray, np.ndarray]:
        r = self._token_after.get(cid)
        if r is None:
            ids, need, ends, slack = self._figures(cid)
            if not self._atom_ids:
                # counts in tokens need each token's own end: the configuration inside the character
                ends = multibyte_ends(ids, ends, slack, self.vocab.token_bytes, self._step_bytes)
                uniq, inverse = unique_inverse(ends)
                counter = self._counter()
                short = np.asarray([_or_big(counter.tokens(int(u))) for u in uniq], dtype=np.int64)
                need = short[inverse] if ids.size else np.zeros(0, dtype=np.int64)
            r = (ids, need)
            fifo_put(self._token_after, cid, r, self.limits.max_cached_masks)
        return r

    def _figures(self, cid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Allowed token ids of ``cid``, for each the bytes its shortest completion needs, and
        (where the grammar has no token atoms) the configuration the walk reported after it and
        the bytes its last character lacks there (``TransitionTable.walk_ends``). The
        configuration may be one the engine treats as equal for budgets (a count twin's, the
        unbounded repetition's of a counted string): its shortest completions, and so its count
        in tokens, are the same."""
        r = self._after_cache.get(cid)
        if r is not None:
            return r
        with self._lock:
            return self._compute_figures(cid)

    @deep_recursion
    def _compute_figures(self, cid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        r = self._after_cache.get(cid)
        if r is None:
            twin = self._budget_clamp.config(cid)
            r = self._compute_figures(twin) if twin != cid else self._walk_figures(cid)
            fifo_put(self._after_cache, cid, r, self.limits.max_cached_masks)
        return r

    def _walk_figures(self, cid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_figures` computed by a walk from ``cid`` itself. A twin whose upper counts are
        clamped has the same tokens and the same shortest completions after each of them
        (count_clamp.py), so the caller asks for the twin's instead where there is one."""
        counted = self._counted_figures(cid)
        if counted is not None:
            return counted
        ids, ends, slack = self._table.walk_ends(cid, self._trie)
        # a token ending inside a character is reported with the loop configuration, up to 3
        # bytes short: its bytes are the loop's plus those
        uniq, inverse = unique_inverse(ends)
        short = np.asarray([self._shortest_or_big(int(u)) for u in uniq], dtype=np.int64)
        need = short[inverse] + slack if ids.size else np.zeros(0, dtype=np.int64)
        if self._atom_ids:
            extra_ids, extra_need = [], []
            for k, (aids, negated) in enumerate(self._atom_ids):
                nxt = self._atom_step(cid, k)
                if nxt != DEAD and not negated:
                    extra_ids.append(aids)
                    extra_need.append(np.full(aids.size, self._shortest_or_big(nxt)))
            if extra_ids:
                ids = np.concatenate([ids.astype(np.int64)] + extra_ids)
                need = np.concatenate([need] + extra_need)
            empty = np.zeros(0, dtype=np.int64)
            return ids.astype(np.int64), need, empty, empty
        return ids.astype(np.int64), need, ends, slack

    def _counted_figures(self, cid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """:meth:`_figures` inside a counted repetition with no units still required (a string
        under ``maxLength``): every token's shortest completion is the one it has in the
        unbounded repetition (the repetition may stop at once either way), so the figures are the
        unbounded configuration's, restricted to the tokens this count allows (its mask). Each
        count was a walk that could not loop before: 10-15 ms inside a long string."""
        if self._atom_ids or self._counted_masks.base(cid) is None:
            return None
        head, _, base = self._counted_masks.entries[cid]  # type: ignore[misc]
        if head.lo > 0 or base == cid:
            # units still required: the shortest completion depends on the count; or the
            # configuration is its own unbounded one (a pattern with a length bound, lifted)
            return None
        ids, need, ends, slack = self._figures(base)
        allowed = unpack(self.mask_words(cid), self._width)
        keep = allowed[ids]
        return ids[keep], need[keep], ends[keep], slack[keep]

    def _shortest_or_big(self, cid: int) -> int:
        return _or_big(self._system.shortest(cid))

    def mask_words_within(self, cid: int, budget: int) -> np.ndarray:
        """The mask of ``cid`` keeping only tokens after which the grammar can still close within
        ``budget`` tokens in all (the token itself and the final end-of-sequence included),
        counted in tokens of this vocabulary (:meth:`shortest_tokens`; bytes for a grammar with
        token atoms). A model that follows these masks always ends validly: each allowed token
        leaves a canonical completion whose first token is allowed at the next budget
        (token_budget.py).

        Where every byte is a token, a completion's bytes bound its tokens, so while the budget
        is plentiful in bytes it is the plain mask, found without counting tokens: by the bound
        on every configuration's completion (budget_bound.py), or by this configuration's
        largest byte figure. Tokens are counted only once the budget is tight in bytes."""
        bytes_bound = bool(self._atom_ids) or self._bytes_bound_tokens()
        if not self._atom_ids and bytes_bound and self._bounded(cid, budget):
            return self.mask_words(cid)
        if bytes_bound:
            ids, need, _, _ = self._figures(cid)
            top = self._largest(self._top_need, cid, need)
            if top <= budget - 2 and not self._atom_ids:
                return self.mask_words(cid)  # every token fits: the cached plain mask, not a new pack
        if not self._atom_ids:
            ids, need = self._after(cid)
            if self._largest(self._top_tokens, cid, need) <= budget - 2:
                return self.mask_words(cid)
        keep = ids[need <= budget - 2]
        if budget >= 1 and self._system.accepting(cid) and len(self._eos):
            keep = np.concatenate([keep, self._eos])
        return pack_ids(keep, self._width)

    def _largest(self, memo: dict[int, int], cid: int, need: np.ndarray) -> int:
        """The largest figure of ``cid`` (-1 where no token is allowed), remembered in ``memo``."""
        top = memo.get(cid)
        if top is None:
            top = int(need.max(initial=-1))
            fifo_put(memo, cid, top, self.limits.max_cached_masks)
        return top

    def _bytes_bound_tokens(self) -> bool:
        """Whether a completion's bytes bound its tokens (``TokenCounter.bytes_bound_tokens``)."""
        bound = self._bytes_bound
        if bound is None:
            with self._lock:
                bound = self._bytes_bound = self._counter().bytes_bound_tokens
        return bound

    def _bounded(self, cid: int, budget: int) -> bool:
        if self._bound.known(cid):
            return self._bound.plentiful(cid, budget)
        with self._lock:
            return self._bounded_locked(cid, budget)

    @deep_recursion
    def _bounded_locked(self, cid: int, budget: int) -> bool:
        return self._bound.plentiful(cid, budget)

    def commit(self, cid: int, token_id: int) -> int:
        """The configuration after ``token_id`` (DEAD if the token is not allowed)."""
        key = (cid, token_id)
        r = self._commits.get(key)
        if r is not None:
            return r
        with self._lock:
            return self._compute_commit(cid, token_id)

    @deep_recursion
    def _compute_commit(self, cid: int, token_id: int) -> int:
        key = (cid, token_id)
        vocab = self.vocab
        target = DEAD
        if token_id < vocab.n_tokens and vocab.is_text[token_id]:
            target = self._step_bytes(cid, vocab.token_bytes(token_id))
        for k, (aids, negated) in enumerate(self._atom_ids):
            hit = bool(np.any(aids == token_id))
            if hit != negated and not (negated and token_id in self._eos_set):
                nxt = self._atom_step(cid, k)
                target = self._system.union(target, nxt)
        if target != DEAD and self._liveness is not None and not self._liveness.live(target):
            target = DEAD
        self._commits[key] = target
        return target

    def position(self, cid: int) -> int:
        """What a state holds at configuration ``cid``: ``cid`` itself, or inside a long
        counted repetition a representative with the count lowered and the rest of the count
        beside it (count_offsets.py; ``position & CONFIG_MASK`` is the configuration whose
        masks, acceptance and completions are ``cid``'s)."""
        found = self._offsets.positions.get(cid)
        if found is None:
            with self._lock:
                found = self._offsets.position(cid)
        return found

    def advance(self, position: int, token_id: int) -> int:
        """The position after ``token_id`` from ``position`` (:meth:`position`), DEAD if the
        token is not allowed: :meth:`commit` of its configuration, the count held aside where
        there is one."""
        if position <= CONFIG_MASK:
            nxt = self.commit(position, token_id)
            if nxt == DEAD:
                return DEAD
            found = self._offsets.positions.get(nxt)
            if found is None:
                with self._lock:
                    found = self._offsets.position(nxt)
            return found
        with self._lock:
            return self._offsets.advance(position, token_id, self.commit)

    def _step_bytes(self, cid: int, data: bytes) -> int:
        """The configuration after ``data`` from ``cid``; only the one at the end is interned
        (``ConfigSystem.step_bytes``), and a configuration's fixed bytes are read at once."""
        return self._system.step_bytes(cid, data)

    def row(self, cid: int) -> np.ndarray:
        """The full byte-transition row of ``cid`` (computed where missing)."""
        with self._lock:
            return self._table.full_row(cid).copy()

    def precompute(self, max_configs: int, *, until: float | None = None, max_bytes: int | None = None) -> int:
        """Explore configurations reachable from the start (breadth first, up to ``max_configs``,
        until ``time.perf_counter()`` passes ``until`` and while :meth:`memory_bytes` stays
        within ``max_bytes``, where given) and build their masks; returns how many were explored."""
        seen = {self._system.start}
        frontier = [self._system.start]
        visited = 0
        while frontier and len(seen) < max_configs:
            nxt = []
            for cid in frontier:
                check_deadline()
                visited += 1
                if until is not None and time.perf_counter() > until:
                    return len(seen)
                if max_bytes is not None and visited % 64 == 0 and self.memory_bytes() > max_bytes:
                    return len(seen)
                self.mask_words(cid)
                targets = set(self.row(cid).tolist())
                targets |= {self._atom_step(cid, k) for k in range(len(self._atom_ids))}
                for t in targets:
                    if t != DEAD and t not in seen and len(seen) < max_configs:
                        seen.add(t)
                        nxt.append(t)
            frontier = nxt
        for cid in frontier:
            check_deadline()
            if until is not None and time.perf_counter() > until:
                break
            self.mask_words(cid)
        return len(seen)

    # -- saving ---------------------------------------------------------------------------------

    @property
    def machines(self) -> Machines:
        """The grammar as machines (its term store holds every term made so far)."""
        return self._machines

    @property
    def system(self) -> ConfigSystem:
        """The configuration system: stacks and configurations interned so far."""
        return self._system

    @property
    def mask_words_per_row(self) -> int:
        """Packed int32 words in one mask of this vocabulary."""
        return self._words

    def snapshot(self) -> ConstraintSnapshot:
        """What a save holds, taken at one moment: every computation that grows these tables
        holds the lock, so nothing changes while their sizes are read and the table (written in
        place) and the mask cache are copied (a table row copied after a configuration was
        added would name one the sizes do not hold). Terms, stacks and configurations are only
        ever appended: a saver encodes them after the lock is released, up to these sizes."""
        store, system = self._machines.store, self._system
        with self._lock:
            # the least of the term lists' lengths: a term is appended to each in turn
            n_terms = min(len(store.kind), len(store.a), len(store.b), len(store.nullable), len(store.flags))
            n_stacks = min(len(system.stack_parent), len(system.stack_top))
            n_configs = len(system.configs)
            rows = np.array(self._table.rows[: min(n_configs, self._table.rows.shape[0])], dtype="<i4")
            # a mask kept whole as a position's is saved with the parts, not twice
            masks = sorted((cid, m) for cid, m in self._masks.items() if not self._positions.is_dense(cid))
            parts = ConstraintParts(
                self._positions.entries(),
                list(self._relative_masks.relative.items()),
                list(self._relative_masks.crossings.items()),
                sorted(self._relative_masks.spine_refused),
            )
        return ConstraintSnapshot(n_terms, n_stacks, n_configs, rows, masks, parts)

    def restore(self, rows: np.ndarray, masks: Iterable[tuple[int, np.ndarray]]) -> None:
        """Take a saved transition table (its first rows) and saved masks (the first
        ``limits.max_cached_masks`` of them: the bound holds from the start), both checked by
        the caller against this constraint's configurations; LimitError past
        ``limits.max_memory_bytes``."""
        with self._lock:
            self._table.restore_rows(rows)
            for cid, row in itertools.islice(masks, self.limits.max_cached_masks):
                w = np.array(row, dtype=np.int32)
                w.flags.writeable = False
                self._masks[cid] = w
            self._check_memory()

    def restore_parts(self, parts: ConstraintParts, report: CompileReport | None) -> None:
        """Take the saved parts of a compile ahead of time (``ConstraintParts``, checked by the
        caller against this constraint's configurations, terms and trie) and its ``report``:
        masks and relative parts into the compact position masks, crossings up to
        ``limits.max_cached_masks``. LimitError past ``limits.max_memory_bytes``."""
        with self._lock:
            for cid, mask, exits in parts.positions:
                if isinstance(mask, tuple):
                    self._positions.add_sparse(cid, *mask)
                else:
                    self._positions.add_dense(cid, mask)
                if exits is not None:
                    self._positions.add_exits(cid, exits)
            # as after a compile, the whole masks are cache entries too (the pool holds each once)
            room = max(self.limits.max_cached_masks - len(self._masks), 0)
            for cid, words in itertools.islice(self._positions.dense(), room):
                self._masks.setdefault(cid, words)
            for key, found in itertools.islice(parts.crossings, self.limits.max_cached_masks):
                self._relative_masks.crossings.put(key, found)
            self._relative_masks.spine_refused.update(parts.spine_refused)
            self.report = report
            self._memory_checked_at = -1  # the parts count: look again
            self._check_memory()

    def save(self, *, key: bytes | None = None) -> bytes:
        """A versioned, pickle-free blob of this constraint and everything computed so far.

        Safe while other threads compute masks: the snapshot is taken under the lock every
        computation holds. With ``key``, the blob is sealed with HMAC-SHA256 under that key
        (``load`` then needs the same key); without, with a plain SHA-256 digest, which finds
        corruption but not a deliberate forgery."""
        from .artifact import save_constraint

        return save_constraint(self, key=key)

    @classmethod
    def load(
        cls,
        blob: bytes,
        vocab: Vocab,
        *,
        limits: EngineLimits = DEFAULT_ENGINE_LIMITS,
        key: bytes | None = None,
        tuning: EngineTuning = DEFAULT_ENGINE_TUNING,
    ) -> Constraint:
        """A constraint saved with :meth:`save`, under the caller's ``limits`` (the blob's own
        are not read) and ``tuning`` (not saved: masks are the same under every tuning). Raises
        VocabError for another vocabulary, ConstraintError for a blob that is malformed or fails
        its digest, LimitError for one past ``limits``."""
        from .artifact import load_constraint

        check_tuning(tuning)
        return load_constraint(blob, vocab, limits=limits, key=key, tuning=tuning)

    # -- statistics -----------------------------------------------------------------------------

    def memory_bytes(self) -> int:
        """Estimated bytes this constraint holds: its transition table as allocated, its cached
        masks once per distinct mask (mask_store.py) with a cost per entry, and its interned
        parse state (configurations, stacks, terms, with what is remembered about each) at a
        cost per item measured with tracemalloc (``MEMORY_PER_*``).
        Counted from sizes alone, so cheap enough to check after every step."""
        system = self._system
        return (
            self._table.rows.nbytes
            + self._table.memo_bytes
            + self._mask_pool.nbytes
            + len(self._masks) * MASK_ENTRY_BYTES
            + sum(source.nbytes() for source in self.mask_sources)
            + self._offsets.nbytes()
            + len(system.configs) * MEMORY_PER_CONFIG
            + len(system.stack_top) * MEMORY_PER_STACK
            + len(self._machines.store) * MEMORY_PER_TERM
        )

    def _check_memory(self) -> None:
        """LimitError past ``limits.max_memory_bytes``; looked at only when configurations were
        added since the last look (what grows without them, masks, is bounded by a count)."""
        n = len(self._system.configs)
        if n == self._memory_checked_at:
            return
        limit = self.limits.max_memory_bytes
        held = self.memory_bytes()
        if held > limit:
            raise LimitError(f"the constraint holds about {held} bytes", limit="max_memory_bytes", value=limit)
        self._memory_checked_at = n  # within the bound: not looked at again until it grows

    def stats(self) -> dict[str, int]:
        return {
            "terms": len(self._machines.store),
            "configs": len(self._system.configs),
            "stacks": len(self._system.stack_top),
            "masks": len(self._masks),
            "transitions_computed": self._table.filled,
            # how often the walks' mechanisms were used (tests count them instead of patching)
            "relative_walks": self._relative_masks.relative_walks,
            "crossing_walks": self._relative_masks.crossing_walks,
        }


class ConstraintSnapshot(NamedTuple):
    """A constraint's tables at one moment (:meth:`Constraint.snapshot`)."""

    n_terms: int
    n_stacks: int
    n_configs: int
    #: the transition table's rows of those configurations (little-endian int32)
    rows: np.ndarray
    #: cached masks as (configuration, packed words), by configuration
    masks: list[tuple[int, np.ndarray]]
    #: what a compile ahead of time (or use) computed per position
    parts: ConstraintParts


class ConstraintParts(NamedTuple):
    """The per-position parts a constraint holds beside its table and masks (ahead.py)."""

    #: the compact position masks (``PositionMasks.entries``): (configuration, (index, values)
    #: of a sparse mask or a dense one's words, exits of a relative part or None)
    positions: list[tuple[int, tuple[np.ndarray, np.ndarray] | np.ndarray, Exits | None]]
    #: relative configuration -> (packed mask, exits) of relative walks made at first use
    relative: list[tuple[int, tuple[np.ndarray, Exits]]]
    #: (relative configuration, tops crossed...) -> (token ids, exits) (``RelativeMasks.crossing``)
    crossings: list[tuple[tuple[int, ...], tuple[np.ndarray, Exits]]]
    #: heads whose split the constraint refused (``RelativeMasks.spine_refused``)
    spine_refused: list[int]


class DynamicConstraint(Constraint):
    """A constraint that starts at once: automata states, walks and masks are built the first
    time a request reaches them (``Constraint.compile(..., mode="lazy")`` gives one too). The
    same :class:`State` API and the same masks as a compiled :class:`Constraint`; for a schema
    used once, or until a compile ahead of time has finished (see
    :mod:`structgen.constraint_cache`). Its ``compile`` is :meth:`Constraint.compile`, which
    refuses any ``mode`` but ``"lazy"`` for this class."""


class State:
    """One request's position in a :class:`Constraint`; cheap to fork, rolls back any number of tokens.

    Its history holds one position per token (:meth:`Constraint.position`): a configuration id,
    with a count held aside inside a long counted repetition."""

    __slots__ = ("_c", "_history", "_terminated")

    def __init__(self, constraint: Constraint, history: list[int], terminated: list[bool] | None = None) -> None:
        self._c = constraint
        self._history = history
        self._terminated = terminated if terminated is not None else [False] * len(history)

    @property
    def constraint(self) -> Constraint:
        return self._c

    @property
    def config(self) -> int:
        """The configuration whose masks, acceptance and completions are this state's (inside a
        long counted repetition, the representative at a lowered count: count_offsets.py)."""
        return self._history[-1] & CONFIG_MASK

    @property
    def num_tokens(self) -> int:
        """Tokens committed so far."""
        return len(self._history) - 1

    def is_accepting(self) -> bool:
        """Whether the text so far is a complete sentence (an end-of-sequence token may follow)."""
        return not self._terminated[-1] and self._c.accepting(self.config)

    def is_terminated(self) -> bool:
        """True after an end-of-sequence token was committed, or where no token can follow."""
        if self._terminated[-1]:
            return True
        return not self._c.mask_words(self.config).any()

    def mask_words(self, budget: int | None = None) -> np.ndarray:
        """The packed int32 mask (read-only; see :meth:`fill_bitmask` to write into a batch).

        With ``budget`` (tokens that may still be generated, the end-of-sequence token included),
        only tokens after which the grammar can still be closed within the budget are allowed,
        so that generation always ends with a complete sentence.
        """
        if budget is not None:
            if type(budget) is not int:
                budget = _integer(budget, "the token budget")
            if budget < 1:
                raise ConstraintError("the token budget must be at least 1 (the end-of-sequence token)")
        if self._terminated[-1]:
            return np.zeros(self._c._words, dtype=np.int32)
        words = (
            self._c.mask_words_within(self.config, budget) if budget is not None else self._c.mask_words(self.config)
        )
        if budget is not None and self._c._liveness is not None:
            words = words & self._c.mask_words(self.config)
        self._c._check_memory()
        return words

    def mask(self, budget: int | None = None) -> np.ndarray:
        """A fresh bool array of the model's logit width: True where the token is allowed."""
        return unpack(self.mask_words(budget), self._c._width)

    def shortest_completion(self) -> int | None:
        """Tokens of this vocabulary needed to finish the sentence from here, the end-of-sequence
        token not counted (None if it cannot be finished): what budget masks count, so a budget
        of this plus one (:meth:`mask_words`) always closes. It is the fewest tokens spelling a
        canonical shortest byte completion (token_budget.py): at most
        :meth:`shortest_completion_bytes` where every byte is a token, at least the true fewest.
        For a grammar with token atoms it is the bytes, each atom counted as one."""
        if self._terminated[-1]:
            return 0
        return self._c.shortest_tokens(self.config)

    def shortest_completion_bytes(self) -> int | None:
        """Bytes in the shortest way to finish the sentence from here, a token atom counted as
        one (None if there is none)."""
        if self._terminated[-1]:
            return 0
        return self._c.shortest(self.config)

    def allowed_token_ids(self) -> np.ndarray:
        return np.flatnonzero(self.mask())

    def fill_bitmask(self, out: np.ndarray, row: int = 0, budget: int | None = None) -> None:
        """Write the packed mask into ``out[row]``: ``out`` is a writable int32 or uint32 array,
        ``(batch, words)`` or ``(words,)`` (then ``row`` is 0), with at least this vocabulary's
        words per row. The whole row is written: words past this vocabulary's width (a batch
        sized for a wider model) are set to 0, so no id beyond it stays allowed."""
        c = self._c
        # The common call (an int32 row of this width, no budget, a mask met before, nothing
        # added since the memory was last checked) with as few lookups as it takes: a server
        # calls this between forward passes, which leave the caches cold, and every object
        # touched then costs a miss (benchmarks/cold_fill.py).
        if budget is None and type(out) is np.ndarray and out.dtype is _INT32 and not self._terminated[-1]:
            words = c._masks.get(self._history[-1] & CONFIG_MASK)
            if words is not None and type(row) is int and len(c._system.configs) == c._memory_checked_at:
                shape = out.shape
                try:
                    if shape == c._row_shape and row == 0:
                        out[:] = words
                        return
                    if len(shape) == 2 and shape[1] == c._words and 0 <= row < shape[0]:
                        out[row] = words
                        return
                except ValueError:
                    pass  # a read-only array: refused below with its own message
        _check_bitmask(out)
        if type(row) is not int:
            row = _integer(row, "bitmask row")
        n = self._c._words
        shape = out.shape
        if shape[-1] < n:
            raise ConstraintError(f"bitmask row has {shape[-1]} words, {n} needed")
        if len(shape) == 1:
            if row != 0:
                raise ConstraintError(f"row {row} of a one-dimensional bitmask (only row 0 exists)")
        elif not 0 <= row < shape[0]:
            raise ConstraintError(f"row {row} is outside a bitmask of {shape[0]} rows")
        words = self.mask_words(budget)
        if out.dtype is not _INT32:
            words = words.view(np.uint32)
        try:
            if len(shape) == 1:
                out[:n] = words
                if shape[0] > n:
                    out[n:] = 0
            else:
                out[row, :n] = words
                if shape[1] > n:
                    out[row, n:] = 0
        except ValueError:
            # numpy refuses a read-only destination: found here, not by a flags lookup per call
            if not out.flags.writeable:
                raise ConstraintError("the bitmask array is read-only") from None
            raise

    def is_allowed(self, token_id: int) -> bool:
        token_id = _integer(token_id, "token id")
        self._check_id(token_id)
        w = self.mask_words()
        return bool((int(w[token_id >> 5]) >> (token_id & 31)) & 1)

    def _check_id(self, token_id: int) -> None:
        if not 0 <= token_id < self._c._width:
            raise ConstraintError(f"token id {token_id} is out of range (logit width {self._c._width})")

    def commit_token(self, token_id: int) -> bool:
        """Advance by one token. Returns False, leaving the state unchanged, if it is not allowed.
        ``token_id`` must be an integer (``operator.index``; not a float, a string or a bool)."""
        token_id = _integer(token_id, "token id")
        if not self.is_allowed(token_id):
            return False
        c = self._c
        position = self._history[-1]
        if token_id in c._eos_set and c.accepting(position & CONFIG_MASK):
            self._history.append(position)
            self._terminated.append(True)
            return True
        if position <= CONFIG_MASK:  # Constraint.advance without its call, on the common path
            nxt = c.commit(position, token_id)
            if nxt != DEAD:
                held = c._offsets.positions.get(nxt)
                nxt = c.position(nxt) if held is None else held
        else:
            nxt = c.advance(position, token_id)
        if nxt == DEAD:  # pragma: no cover - the mask said it was allowed
            return False
        self._c._check_memory()  # before the state moves: a refused step leaves it where it was
        self._history.append(nxt)
        self._terminated.append(False)
        return True

    def commit_tokens(self, token_ids: Iterable[int]) -> bool:
        """Commit tokens in order; on the first disallowed one, undo them all and return False."""
        if isinstance(token_ids, (str, bytes)) or not isinstance(token_ids, Iterable):
            raise ConstraintError(f"commit_tokens takes an iterable of token ids, not {type(token_ids).__name__}")
        done = 0
        for t in token_ids:
            if not self.commit_token(t):
                self.rollback(done)
                return False
            done += 1
        return True

    def rollback(self, n: int = 1) -> None:
        """Undo the last ``n`` committed tokens."""
        n = _integer(n, "rollback count")
        if n < 0 or n > self.num_tokens:
            raise ConstraintError(f"cannot roll back {n} tokens; {self.num_tokens} committed")
        if n:
            del self._history[-n:]
            del self._terminated[-n:]

    def fork(self) -> State:
        """An independent copy (for beam search or speculative branches)."""
        return State(self._c, list(self._history), list(self._terminated))

    def forced_bytes(self, limit: int = 256) -> bytes:
        """Bytes every valid continuation starts with (empty where there is a choice)."""
        limit = _integer(limit, "forced bytes limit")
        c = self._c
        out = bytearray()
        cid = self.config
        if self._terminated[-1]:
            return b""
        while len(out) < limit:
            if c.accepting(cid) or any(c._atom_step(cid, k) != DEAD for k in range(len(c._atom_ids))):
                break
            row = c.row(cid)
            live = np.flatnonzero(row != DEAD)
            if live.size != 1:
                break
            b = int(live[0])
            out.append(b)
            cid = int(row[b])
        return bytes(out)

    def forced_tokens(self) -> list[int]:
        """Tokens for :meth:`forced_bytes` that are safe to commit without sampling: the forced
        bytes tokenized greedily, minus trailing tokens that a longer allowed token could replace."""
        data = self.forced_bytes()
        if not data:
            return []
        tokens = _greedy_tokenize(self._c, data)
        # keep only a prefix after which no single token crosses the end of the forced bytes
        while tokens:
            start = sum(len(self._c.vocab.token_bytes(t)) for t in tokens[:-1])
            if not _some_token_extends(self._c, data[start:]):
                break
            tokens.pop()
        return tokens


def check_tuning(tuning: object) -> None:
    """Refuse a ``tuning`` that is not an :class:`EngineTuning` (its fields are checked when it
    is built)."""
    if not isinstance(tuning, EngineTuning):
        raise ConstraintError(f"tuning must be an EngineTuning, not {type(tuning).__name__}")


def _or_big(v: int | None) -> int:
    """A figure for the budget masks: None (no completion) as a need no budget meets."""
    return 1 << 40 if v is None else v


def _greedy_tokenize(c: Constraint, data: bytes) -> list[int]:
    vocab = c.vocab
    index = c._text_index
    if index is None:
        index = {}
        for i in np.flatnonzero(vocab.is_text).tolist():
            index.setdefault(vocab.token_bytes(i), i)
        c._text_index = index
    out = []
    pos = 0
    longest = int(vocab.lengths.max(initial=1))
    while pos < len(data):
        for n in range(min(longest, len(data) - pos), 0, -1):
            t = index.get(data[pos : pos + n])
            if t is not None:
                out.append(t)
                pos += n
                break
        else:
            raise LimitError("forced bytes cannot be tokenized with this vocabulary", limit="vocabulary")
    return out


def _some_token_extends(c: Constraint, suffix: bytes) -> bool:
    """Whether some text token starts with ``suffix`` and is longer than it."""
    trie = c._trie
    level_nodes = np.arange(trie.level_byte[0].size)
    for k, b in enumerate(suffix):
        hit = level_nodes[trie.level_byte[k][level_nodes] == b]
        if hit.size == 0:
            return False
        node = int(hit[0])
        if k + 1 == len(suffix):
            return bool(trie.child_count[k][node] > 0)
        start = int(trie.child_start[k][node])
        level_nodes = np.arange(start, start + int(trie.child_count[k][node]))
    return False


#: the two word dtypes a bitmask may have (native byte order: ``>i4`` is neither); numpy hands
#: out these very objects for ordinary arrays, so an identity test settles the common case
_INT32, _UINT32 = np.dtype(np.int32), np.dtype(np.uint32)


def _integer(value: object, what: str) -> int:
    """``value`` as an int by ``operator.index`` (as ``Vocab.token_bytes`` reads ids): a float,
    a string or a bool is a caller's mistake that ``int()`` would turn into a valid-looking id."""
    if isinstance(value, (bool, np.bool_)):
        raise ConstraintError(f"{what} must be an integer, not a bool ({value!r})")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise ConstraintError(f"{what} must be an integer, not {type(value).__name__} {shown}") from None


def _check_bitmask(out: object) -> None:
    """Refuse a bitmask buffer the packed words cannot be written into as they are: not a numpy
    array of native int32 or uint32 words with one or two dimensions (another width would cast
    the words, and a consumer reading it as int32 would read other bits). A read-only buffer is
    refused where it is written."""
    if not isinstance(out, np.ndarray):
        raise ConstraintError(f"a bitmask must be a numpy array, not {type(out).__name__}")
    dt = out.dtype
    if dt is not _INT32 and dt is not _UINT32 and dt != _INT32 and dt != _UINT32:
        raise ConstraintError(f"a bitmask must be native int32 or uint32, not {out.dtype}")
    if out.ndim not in (1, 2):
        raise ConstraintError(f"a bitmask must have 1 or 2 dimensions, not {out.ndim}")


def fill_bitmasks(states: Sequence[State], out: np.ndarray, budgets: Sequence[int | None] | None = None) -> None:
    """Fill row ``i`` of ``out`` with the mask of ``states[i]`` (a batch of requests); each row
    is written whole (see :meth:`State.fill_bitmask`), rows past ``len(states)`` are left alone."""
    if not isinstance(states, Sequence):
        raise ConstraintError(f"fill_bitmasks takes a sequence of states, not {type(states).__name__}")
    _check_bitmask(out)
    if not out.flags.writeable:
        raise ConstraintError("the bitmask array is read-only")
    if out.ndim != 2 or out.shape[0] < len(states):
        raise ConstraintError(f"bitmask array of shape {out.shape} cannot hold {len(states)} rows")
    if budgets is not None and (not isinstance(budgets, Sequence) or len(budgets) != len(states)):
        raise ConstraintError(f"budgets must be a sequence of one budget (or None) per state, not {budgets!r:.60}")
    for i, st in enumerate(states):
        if not isinstance(st, State):
            raise ConstraintError(f"states[{i}] is a {type(st).__name__}, not a State")
        st.fill_bitmask(out, i, None if budgets is None else budgets[i])
