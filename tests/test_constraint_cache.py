"""The shared constraint cache: LRU, bounded in count and in the bytes its constraints hold."""

from __future__ import annotations

import pytest
from generation_support import byte_vocab

from structgen import Grammar, LimitError
from structgen.constraint_cache import ConstraintCache, ConstraintCacheTuning
from structgen.grammar import ir


def grammar(word: str) -> Grammar:
    return Grammar({"root": ir.seq(ir.lit(word), ir.plus(ir.char((97, 122))))})


def test_hits_return_the_same_constraint():
    cache = ConstraintCache()
    vocab = byte_vocab()
    a = cache.get(grammar("x"), vocab)
    assert cache.get(grammar("x"), vocab) is a
    assert cache.stats()["hits"] == 1 and cache.stats()["misses"] == 1


def test_count_bound_evicts_the_oldest():
    cache = ConstraintCache(ConstraintCacheTuning(max_constraints=2))
    vocab = byte_vocab()
    first = cache.get(grammar("a"), vocab)
    cache.get(grammar("b"), vocab)
    cache.get(grammar("c"), vocab)
    assert cache.stats()["constraints"] == 2
    assert cache.get(grammar("a"), vocab) is not first


def test_byte_bound_keeps_only_what_fits_and_never_the_one_returned():
    vocab = byte_vocab()
    cache = ConstraintCache(ConstraintCacheTuning(max_bytes=1))
    for w in ("a", "b", "c"):
        c = cache.get(grammar(w), vocab)
        assert c.memory_bytes() > 1
        assert cache.stats()["constraints"] == 1
    assert cache.get(grammar("c"), vocab) is c


@pytest.mark.parametrize(
    "bad", [{"max_constraints": 0}, {"max_bytes": -1}, {"max_bytes": 1.5}, {"max_constraints": True}]
)
def test_tuning_is_checked(bad):
    with pytest.raises(LimitError):
        ConstraintCacheTuning(**bad)
