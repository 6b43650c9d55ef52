"""The mask engine's tunables: every switch and threshold of the walks, in one frozen dataclass.

Masks are the same under every tuning: that is the invariant the switches are tested by (each
boolean field turned off gives the default's masks, ``tests/test_engine_tuning.py``). The
thresholds trade Python steps against numpy calls and memory against recomputation; none of them
is read from a module global at run time. A tuning is not saved in artifacts (``Constraint.save``).

Each field holds its default and the reason for it (measured where it says so). A field of the
wrong type or out of its range is refused when the tuning is built, with a ``ConstraintError``
naming the field (as ``EngineLimits`` refuses a bad limit).

Left as constants, not tunables: the formats (``DEAD``, ``UNKNOWN``, term kinds and flags, bit
masks, byte tables), the per-item memory costs of ``Constraint.memory_bytes`` (measurements of an
estimate, not a trade-off), ``masks.SPARSE_PACK`` / ``TINY_PACK`` (the packing helpers are shared
by the integrations, outside any constraint) and the token trie's padding budget (a trie is built
once per vocabulary and shared by constraints of every tuning: ``build_token_trie_from_buffer``
takes it as an argument).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..errors import ConstraintError
from .terms import HAS_COUNT, HAS_POSS, HAS_SETOP, HAS_SYM

#: the term flags ``choice_excludes`` may name
_TERM_FLAGS = HAS_POSS | HAS_SETOP | HAS_SYM | HAS_COUNT


@dataclass(frozen=True)
class EngineTuning:
    """Switches and thresholds of :class:`~structgen.engine.Constraint`'s walks and caches."""

    # -- constraint.py: how a configuration's mask is found ------------------------------------

    #: Whether a configuration of one stack over a caller is walked over the hole (its walk shared
    #: by every caller, see ``Constraint._relative_words``); off, it is walked as it is.
    relative_walks: bool = True
    #: Whether a top that may end at once is walked over the hole too, its mask the union of that
    #: walk without its exits at the root and its caller's own mask (relative_masks.py, 4c in
    #: docs/engine.md); off, it is walked with its callers, every token of the caller again per
    #: configuration: on Llama 3, MaskBench ``Github_easy---o13667`` compiled ahead of time walked
    #: two such configurations at first use along its stream (p99 4.6 ms against 0.9 with it).
    relative_nullable: bool = True
    #: Whether the tokens that cross from a walk over the hole into a caller that is itself over a
    #: caller are walked over the hole of that caller's top too, frame by frame
    #: (``RelativeMasks.crossing``, kept per relative configuration and tops crossed, so every depth
    #: shares them); off, from the caller as it is. ``tree``: 30 → 23 ms of masks along its stream.
    chained_crossings: bool = True
    #: Whether a top ``x* b R`` (inside a string, a run of digits) is walked as ``x* b`` over a frame
    #: holding ``R`` (``RelativeMasks.loop_split``), so every rest shares the body's walk; off, as it
    #: is. What lets ``mode="aot"`` precompute a string's body once for every place it occurs.
    loop_split: bool = True
    #: Whether the masks of a counted repetition come from its sorted unbounded mask, filtered by
    #: units (counters.py, ``Constraint._counted_base``); off, every count is walked.
    counted_masks: bool = True
    #: Whether configurations with large counts that one token cannot tell apart share the mask
    #: and budget figures of a clamped twin (count_clamp.py); off, each is computed.
    count_twins: bool = True
    #: Whether a configuration of several stacks (a key that may still be a listed one or another
    #: one, a value of several branches) gets the union of its stacks' masks, each from the
    #: sources above (mask_sources.py, ``StackUnion``); off, it is walked whole. On Llama 3, MaskBench
    #: ``Github_easy---o13667`` compiled ahead of time: 6 such walks of 8-17 ms along its stream.
    stack_union: bool = True
    #: Whether a state inside a long counted repetition with no unit still required holds a
    #: representative configuration at a bounded count and the rest of the count beside it
    #: (count_offsets.py); off, it holds the real configuration, one new one per token (with
    #: its terms: 1.4 KB of heap a token inside ``maxLength: 1000000`` on Llama 3).
    count_offsets: bool = True
    #: A split head (``loop_split``) whose first walk over the hole left more live exit nodes than
    #: this (exits whose byte the tail may read) is walked as it is from then on.
    split_exits: int = 16
    #: Bytes the walks over the hole of one constraint keep (their packed masks, exits and
    #: crossings, relative_masks.py), first in, first out: 8,192 masks of Llama 3 (16 KB each).
    relative_memo_bytes: int = 128 << 20

    # -- machines.py: which rules are machines --------------------------------------------------

    #: On a compile ahead of time, a regular rule that the grammar's sequences follow with at
    #: least this many different continuations becomes a machine of its own
    #: (``machines.shared_rules``: a value in an object whose keys come in any order, followed by
    #: each set of keys left), so that its positions are shared by every continuation instead of
    #: existing once per continuation; 0: only recursive rules and the start rule are machines.
    #: Positions with every one visited (Llama 3): ``tool_union`` 25,385 at 0, 7,434 at 2 and 4,
    #: 7,529 at 8, 7,715 at 16; ``realistic_model`` 36,195 at 0, 22,734 at 4. The lazy path
    #: never uses it (its masks and costs are those of one machine per recursive cycle).
    shared_calls: int = 4

    # -- table.py: the token walk --------------------------------------------------------------

    #: Below this many live trie nodes, a level of a walk is handled in Python: each numpy call
    #: costs microseconds whatever its size, a Python step a fraction of one.
    narrow: int = 48
    #: Below this many children to visit, they are stepped one by one in Python, above it with
    #: one numpy gather.
    narrow_children: int = 32
    #: A configuration with at most this many live bytes is "sparse": the children of a node in
    #: its state are found by binary search on their bytes (one per live byte), not by stepping
    #: them all.
    sparse_live: int = 16
    #: Whether a walk follows a configuration's fixed bytes (``ConfigSystem.literal_run``) down
    #: the trie without a configuration per byte; off, it steps them as any other.
    literal_runs: bool = True
    #: Whether a node in a run of a few bytes (``u{0,m} t``: whitespace after a newline) takes the
    #: run region below it (``TransitionTable._run_of``, loop_regions.py); off, it is walked.
    run_regions: bool = True
    #: Step only the run-region exits whose byte the configuration after the run can read (a bound
    #: from its terms: ``ConfigSystem.first_bytes_bound``); off, all of them are stepped.
    run_exit_filter: bool = True
    #: A run's byte set holds at most this many bytes (whitespace: space and tab); larger sets are
    #: loops that bulk acceptance and loop regions handle.
    max_run_bytes: int = 8
    #: Whether a mask walk follows a choice among fixed bytes (enum values, keys,
    #: ``true``/``false``) by its top term's derivatives (``TransitionTable._choice_walk``); off,
    #: each trie node on the way is a configuration.
    choice_walks: bool = True
    #: A choice walked so reads at most this many bytes next...
    choice_live: int = 16
    #: ... and at most this many of them in one byte class.
    choice_class: int = 4
    #: ... and the choice walks of one mask visit at most this many trie nodes in all (then the
    #: walk goes on with configurations, as everywhere else).
    choice_nodes: int = 64
    #: Term flags that keep a stack out of choice walks: greedy lexemes anywhere in its term (a
    #: lexeme's end looks past it, which a derivative does not; so this must hold ``HAS_POSS``).
    #: Calls keep it out where one can come first (``TermStore.first_syms``); a call further on
    #: (the value of a key an object allows besides its own, which is any JSON) is met by a later
    #: derivative, which is then no choice. Tests that want the stricter exclusion (any call or
    #: set operation anywhere keeps a stack out) add ``HAS_SYM | HAS_SETOP``.
    choice_excludes: int = HAS_POSS
    #: A walk from a configuration looping on at least this many bytes starts from its loop region.
    loop_region_min_bytes: int = 32
    #: Whether a walk from a configuration one byte before a loop ``L`` (a key that may still be
    #: a listed name or a free string) takes the tokens and exits below the root children whose
    #: byte it steps as ``L`` does from ``L``'s own walk, kept per ``L``, and descends along the
    #: children whose byte differs while they loop in ``L`` (at most ``sparse_live`` differing
    #: bytes a node), walking only those that leave the loop (``TransitionTable._beyond_loop``,
    #: ``_descend``); off, each walks every exit of its trimmed region. Measured (Llama 3, aot
    #: compile with the budget lifted): MaskBench ``Github_hard---o27793`` (647 such walks over 6
    #: loops) visits 2.29 M → 0.64 M trie nodes, 13.2 → 8.5 CPU s under cProfile (engine.md).
    #: On the dynamic path it costs more than it saves (0.784x the calls off, engine.md).
    shared_loop_exits: bool = True
    #: Bytes of the walks of loops kept for ``shared_loop_exits`` (per constraint: token positions
    #: as int32 and exit nodes as int64); past it a new loop's walk is not kept.
    loop_exit_memo_bytes: int = 8 * 1024 * 1024
    #: Byte classes of at most this many bytes are filled byte by byte in Python, larger ones with
    #: one numpy assignment of their (shared) byte array.
    small_class: int = 8
    #: Up to this many tokens, what the Python levels of a walk accepted is expanded in Python
    #: (numpy calls cost more than a short list).
    small_result: int = 256

    # -- loop_regions.py: regions kept on the token trie, shared by the vocabulary's constraints -

    #: Loop regions kept per vocabulary, first in, first out (one per distinct loop byte set met;
    #: each a few MB at most). The bounds of a region's own memos are those of the constraint
    #: whose walk built it.
    max_loop_regions: int = 64
    #: Trimmed copies kept per region (one per set of root bytes that leave the loop elsewhere).
    region_max_trimmed: int = 16
    #: Derived values kept per region (packed masks, counted-mask bases).
    region_max_derived: int = 32
    #: Run regions kept per vocabulary (one per trie node and run shape met: each a few arrays).
    max_run_regions: int = 4096
    #: Exit subsets kept per run region (one per set of bytes read after the run).
    run_max_within: int = 16

    # -- counters.py: masks of counted repetitions ----------------------------------------------

    #: Largest unit automaton the counted masks handle; bigger units use the ordinary walk.
    max_unit_states: int = 512
    #: The most sequence parts a begun unit may show before its repetition (``\\u`` then four hex
    #: digits is five); longer prefixes are not looked for.
    max_partial_parts: int = 8
    #: Counts from a begun unit reuse the counts from a unit boundary below the node where the
    #: begun unit completes (``counters._count_units``); off, every token is walked from the
    #: begun state. Once per process and begun state (Llama 3, CPU, best of 3): after a JSON
    #: string's backslash 18.8 → 6.1 ms, its other 21 begun states 2-4 ms either way.
    splice_begun: bool = True
    #: Up to this many ids, a counted base sorts them instead of selecting them from the
    #: vocabulary's order (two passes over every token id).
    small_base: int = 8192
    #: Filtered masks kept per shared base (one per distinct clamped count bounds met).
    max_bounded_words: int = 256
    #: Packed slices kept per base (``CountedBase.slice_words``).
    max_slice_words: int = 16
    #: Bytes the filtered masks of one constraint's counted repetitions keep (counted_masks.py),
    #: first in, first out: 8,192 masks of Llama 3.
    counted_memo_bytes: int = 128 << 20
    #: Up to this many ids are cleared from a near-full mask in Python (bytes of a copy), more
    #: with one ``np.bitwise_and.at`` (4-6 µs however few).
    tiny_clear: int = 32
    #: Beyond this many ids, they are cleared from a near-full mask by and-not with their own
    #: packed mask (a bool scatter and a pack) instead of ``np.bitwise_and.at`` (Llama 3 width,
    #: 2 shared cores: 3,000 ids 54 µs against 70, 30,000 ids 1,479 µs against 385).
    many_clear: int = 4096
    #: A compile ahead of time filters every count of a counted repetition whose counts have at
    #: most this many distinct bounds (``CountedMasks.prepare_counts``: a ``maxLength: 10``
    #: string, 11 masks; each a filter of up to the whole vocabulary, 0.3-7 ms on Llama 3 at run
    #: time); a longer one, only the mask its counts far from the end share.
    aot_counted_filters: int = 32
    #: Unit counts kept for the process (``counters.count_units``), one per (vocabulary, unit
    #: automaton, begun state): the same unit (a JSON string character, an array item of one
    #: shape) recurs across schemas, and its counts cost a walk of the vocabulary (15-20 ms on
    #: Llama 3). First in, first out.
    max_unit_counts: int = 64
    #: ... and at most this many bytes of them (two int32 arrays per token and their two sorted
    #: orders: 2 MB per entry on a 128k vocabulary, so 128 MiB is the 64 entries there; a 256k
    #: vocabulary's entries are twice that, which the count alone would let reach 256 MiB).
    max_unit_counts_bytes: int = 128 << 20

    # -- count_clamp.py --------------------------------------------------------------------------

    #: Required bytes probed per unit or frame for a clamped twin.
    clamp_probes: int = 2

    def __post_init__(self) -> None:
        check_tuning_fields(self, _MINIMUMS)
        if not self.choice_excludes & HAS_POSS or self.choice_excludes & ~_TERM_FLAGS:
            raise ConstraintError(
                f"EngineTuning.choice_excludes must be term flags holding HAS_POSS (a greedy lexeme "
                f"cannot be walked by derivatives), not {self.choice_excludes!r}"
            )


#: the least value of each whole-number field (0 where not named: a threshold of 0 turns its
#: mechanism off or sends every case one way, which gives the same masks)
_MINIMUMS = {
    "choice_class": 1,
    "max_unit_states": 1,
    "max_bounded_words": 1,
    "max_slice_words": 1,
    "max_unit_counts": 1,
    "max_loop_regions": 1,
    "region_max_trimmed": 1,
    "region_max_derived": 1,
    "max_run_regions": 1,
    "run_max_within": 1,
    "clamp_probes": 1,
}


def check_tuning_fields(tuning: object, minimums: dict[str, int]) -> None:
    """Refuse a tuning whose boolean fields are not bools, or whose whole-number fields are not
    ints of at least their minimum (0 unless ``minimums`` says otherwise); the ConstraintError
    names the field."""
    kind = type(tuning).__name__
    for f in fields(tuning):  # type: ignore[arg-type]
        value = getattr(tuning, f.name)
        if isinstance(f.default, bool):
            if not isinstance(value, bool):
                raise ConstraintError(f"{kind}.{f.name} must be a bool, not {type(value).__name__} {value!r}")
            continue
        # bool is an int subclass, but True for a count is a typo, not a tuning
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConstraintError(f"{kind}.{f.name} must be an int, not {type(value).__name__} {value!r}")
        low = minimums.get(f.name, 0)
        if value < low:
            raise ConstraintError(f"{kind}.{f.name} must be at least {low}, not {value}")


DEFAULT_ENGINE_TUNING = EngineTuning()


def switches() -> tuple[str, ...]:
    """The names of the boolean fields that are on by default (each turns a mechanism off
    without changing a mask); every boolean field is on by default."""
    return tuple(f.name for f in fields(EngineTuning) if f.default is True)
