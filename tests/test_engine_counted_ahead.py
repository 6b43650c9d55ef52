"""A compile ahead of time prepares the counted repetitions' parts (ahead.py, counted_masks.py):
along a string walked byte by byte (every begun unit: escapes, ``\\u`` digits, every byte of a
multi-byte character), at the bottom and called from the object at the bottom, every
configuration the counted masks answer finds its sorted unbounded walk already computed under
the key the lazy engine looks it up by, and a short repetition finds the filtered masks of its
counts too; the masks equal the lazy engine's bit for bit."""

from __future__ import annotations

import json

import numpy as np
import pytest
from engine_support import byte_tokens, load_vocab

from structgen.engine import Constraint
from structgen.engine.ahead import CompileReport
from structgen.engine.counters import CountedHead, UnitCounts, counted_base, filter_bounds, filter_ids, filter_words
from structgen.engine.limits import EngineLimits
from structgen.engine.masks import pack_ids
from structgen.engine.tuning import EngineTuning
from structgen.schema import json_schema_to_grammar

#: positions and counted parts only, bounded by count, not by the clock (the parts a run
#: prepares must not depend on the machine's load)
AHEAD_ONLY = EngineLimits(aot_max_configs=0, aot_max_positions=5000, aot_budget_ms=10**7)

#: a character of each kind of begun unit: escapes, ``\\u`` escapes, two- to four-byte characters
CHARS = ["a", "\\n", "\\u00e9", "\u00e9", "\u4e2d", "\U0001f600", "\\\\", "b", "\\ud83d\\ude00", "c"]


def _schema(keys: int, max_length: int) -> dict[str, object]:
    """An object of ``keys`` strings of at most ``max_length`` characters (from 4 keys on, the
    string is a machine of its own, called from the object: ``EngineTuning.shared_calls``)."""
    props = {f"k{i}": {"type": "string", "maxLength": max_length} for i in range(keys)}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _text(keys: int, max_length: int) -> str:
    bodies = []
    for i in range(keys):
        body, chars = "", 0
        for ch in CHARS[i:] + CHARS[:i]:
            n = len(json.loads(f'"{ch}"'))
            if chars + n > max_length:
                break
            body, chars = body + ch, chars + n
        bodies.append(f'"k{i}": "{body}"')
    return "{" + ", ".join(bodies) + "}"


@pytest.mark.parametrize(("keys", "max_length"), [(1, 12), (4, 12), (4, 200)])
def test_aot_prepares_every_count_inside_a_begun_unit(keys: int, max_length: int) -> None:
    vocab = load_vocab("llama-bpe")
    grammar = json_schema_to_grammar(_schema(keys, max_length))
    aot = Constraint.compile(grammar, vocab, mode="aot", limits=AHEAD_ONLY)
    lazy = Constraint.compile(grammar, vocab)
    report = aot.report
    assert report is not None and not report.truncated
    assert report.counted_bases > 0, report.describe()
    cm = aot._counted_masks
    bases, words = set(cm._bases), set(cm._words)
    singles = byte_tokens(vocab)
    text = _text(keys, max_length)
    s_aot, s_lazy = aot.start(), lazy.start()
    counted = 0
    string_unit = None
    for step, byte in enumerate(text.encode()):
        twin = aot._clamp.config(s_aot.config)
        entry = cm._entry(twin)
        if string_unit is None and entry is not None and entry[0].partial is None:
            string_unit = entry[0].unit
        # a repetition inside a unit (the hex digits of a surrogate's ``\\u``) holds the outer
        # count in its rest: a sorted walk per outer count, left to first use
        if entry is not None and entry[0].unit == string_unit:
            head, _, base = entry
            counted += 1
            where = f"after {text.encode()[:step]!r}"
            assert (base, head.unit) in bases, f"the sorted walk was not prepared {where}"
            # every count of a short repetition is filtered ahead from its first count's base
            # (a begun unit's base holds few tokens: filtered at first use)
            if max_length <= EngineTuning().aot_counted_filters and head.partial is None:
                key = (base, head.unit) + filter_bounds(cm._bases[(base, head.unit)], head)
                assert key in words, f"the filtered mask was not prepared {where}"
        assert np.array_equal(s_aot.mask_words(), s_lazy.mask_words()), f"masks differ {text.encode()[:step]!r}"
        assert s_aot.commit_token(singles[byte]) and s_lazy.commit_token(singles[byte])
    assert counted > 20
    assert all(unit != string_unit for _, unit in set(cm._bases) - bases), "a string's walk was computed at run time"


def test_a_report_saved_without_the_counted_parts_loads() -> None:
    """A blob saved before ``counted_bases`` and ``counted_filters`` were reported reads them as 0."""
    report = CompileReport(positions=3, counted_bases=2, counted_filters=5)
    data = report.to_data()
    assert CompileReport.from_data(data) == report
    old = {k: v for k, v in data.items() if k not in ("counted_bases", "counted_filters")}
    loaded = CompileReport.from_data(old)
    assert loaded.positions == 3 and loaded.counted_bases == 0 and loaded.counted_filters == 0


@pytest.mark.parametrize("many_clear", [0, 64, EngineTuning().many_clear])
def test_many_ids_cleared_from_a_full_mask(many_clear: int) -> None:
    """A count near the end cuts thousands of long tokens from the part's full mask: cleared by
    and-not with their packed mask past ``many_clear``, by ``bitwise_and.at`` below; the same
    mask as packing the ids the count allows."""
    n = 20000
    rng = np.random.default_rng(3)
    stay = rng.integers(0, 12, n).astype(np.int32)
    leave = np.where(rng.random(n) < 0.5, rng.integers(0, 12, n), -1).astype(np.int32)
    base = counted_base(np.arange(n, dtype=np.int64), UnitCounts(stay, leave), shared=True)
    tuning = EngineTuning(many_clear=many_clear)
    for hi in range(12):
        head = CountedHead(unit=0, lo=0, hi=hi, rest=0)
        got = filter_words(base, head, n + 40, tuning=tuning)
        assert np.array_equal(got, pack_ids(filter_ids(base, head), n + 40)), f"hi={hi}"


def test_count_bounds_are_those_of_every_count() -> None:
    """The bounds ``prepare_counts`` fills are the distinct bounds of every count after the
    one given, found without looking at each of a million counts."""
    from dataclasses import replace

    from structgen.engine.counters import count_bounds

    n = 500
    rng = np.random.default_rng(5)
    stay = rng.integers(-1, 7, n).astype(np.int32)
    leave = rng.integers(-1, 7, n).astype(np.int32)
    base = counted_base(np.arange(n, dtype=np.int64), UnitCounts(stay, leave))
    for lo, hi in [(0, 3), (0, 12), (2, 9), (9, 9), (4, None), (0, None), (20, 40)]:
        head = CountedHead(unit=0, lo=lo, hi=hi, rest=0)
        last = lo if hi is None else hi
        every = {
            filter_bounds(base, replace(head, lo=max(lo - j, 0), hi=None if hi is None else hi - j))
            for j in range(last + 1)
        }
        assert count_bounds(base, head, 100) == sorted(every), (lo, hi)
        assert count_bounds(base, head, len(every) - 1) is None
    # units 0-6
    assert count_bounds(base, CountedHead(unit=0, lo=0, hi=10**6, rest=0), 32) == [(0, h) for h in range(7)]
