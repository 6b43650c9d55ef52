"""The token mask engine: a grammar and a vocabulary compile into a reusable `Constraint`.

* :mod:`.terms` - hash-consed regular terms and their derivatives (the lexical automata);
* :mod:`.machines` - a grammar as machines: recursive rules as calls, the rest inlined;
* :mod:`.configs` - parse configurations (sets of stacks) and their transitions;
* :mod:`.token_trie` - the vocabulary as a level-ordered byte trie (grammar-agnostic);
* :mod:`.table` - the lazily filled numpy transition table and the token walk;
* :mod:`.loop_regions` - the part of a walk inside a loop, once per (vocabulary, loop bytes);
* :mod:`.counters`, :mod:`.count_clamp` - masks of counted repetitions, and twins that share them;
* :mod:`.budget_bound` - a bound on the completion any token leaves: budget masks without a walk;
* :mod:`.constraint` - `Constraint` / `DynamicConstraint` (per grammar and vocabulary) and `State` (per request);
* :mod:`.ahead` - ahead-of-time compilation per grammar position (``mode="aot"``) and its report;
* :mod:`.masks` - the packed int32 bitmask layout and helpers to apply masks to logits;
* :mod:`.tuning` - `EngineTuning`, every switch and threshold of the walks (masks are the same under each).
"""

from .constraint import Constraint, DynamicConstraint, State, fill_bitmasks
from .limits import EngineLimits
from .masks import allocate_bitmask, apply_mask_numpy, apply_mask_torch
from .tuning import EngineTuning

__all__ = [
    "Constraint",
    "DynamicConstraint",
    "EngineLimits",
    "EngineTuning",
    "State",
    "allocate_bitmask",
    "apply_mask_numpy",
    "apply_mask_torch",
    "fill_bitmasks",
]
