"""Process-wide caches registered in one place (``structgen.caches``): every module-level cache is
registered, reports its entries and bytes, and clears; the unit counts are bounded in bytes."""

from __future__ import annotations

import ast
import functools
import importlib
import json
import pathlib

import numpy as np
import pytest
from engine_support import greedy_tokens, load_vocab

import structgen
from structgen import Grammar, caches
from structgen.engine import Constraint
from structgen.engine import counters as counters_mod
from structgen.engine.tuning import EngineTuning

ROOT = pathlib.Path(structgen.__file__).resolve().parent
SCHEMAS = pathlib.Path(__file__).resolve().parent.parent / "schemas"

#: module-level dicts made empty that are no cache: the registry itself, declarations made at
#: import (not results: clearing them would lose them for good), and what lives as long as its
#: model object (weakly keyed by it)
NOT_CACHES = {
    "caches.py:_registry",
    "schema/json_escapes.py:_KNOWN_SELF_ENCODED",
    "integrations/protocol.py:_ADAPTERS",
    "integrations/protocol.py:_LOCKS",
    "integrations/protocol.py:_LOCKS_BY_ID",
}


def _module_caches() -> list[tuple[str, str]]:
    """(module path, name) of every module-level dict and ``lru_cache`` in structgen."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            value = getattr(node, "value", None)
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and value is not None:
                # a cache starts empty (a dict written out is a table)
                made = (isinstance(value, ast.Dict) and not value.keys) or (
                    isinstance(value, ast.Call)
                    and getattr(value.func, "id", getattr(value.func, "attr", ""))
                    in ("dict", "OrderedDict", "WeakKeyDictionary", "WeakValueDictionary")
                )
                if made:
                    found += [(rel, t.id) for t in targets if isinstance(t, ast.Name) and t.id.startswith("_")]
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.FunctionDef) and any("cache" in ast.unparse(d) for d in sub.decorator_list):
                        if not any("cached_property" in ast.unparse(d) for d in sub.decorator_list):
                            found.append((rel, sub.name))
    return found


def _import_all() -> None:
    """Import every module that registers caches (some are imported lazily by their users)."""
    for path in sorted(ROOT.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if "caches.register" not in source:
            continue
        name = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        try:
            importlib.import_module(name)
        except ImportError:
            continue  # an integration whose runtime is not installed (vllm)


def test_every_module_level_cache_is_registered() -> None:
    """A module-level dict or lru_cache is registered in the module that holds it (the
    registration names it), or listed here as no cache."""
    missing = []
    found = _module_caches()
    assert NOT_CACHES <= {f"{rel}:{name}" for rel, name in found}, "a listed exception is gone: drop it"
    for rel, name in found:
        if f"{rel}:{name}" in NOT_CACHES:
            continue
        tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
        # a top-level statement that registers caches and names this one
        registered = any(
            "caches.register" in ast.unparse(stmt)
            and any(
                isinstance(n, (ast.Name, ast.Attribute)) and name in (getattr(n, "id", None), getattr(n, "attr", None))
                for n in ast.walk(stmt)
            )
            for stmt in tree.body
        )
        if not registered:
            missing.append(f"{rel}:{name}")
    assert not missing, f"module-level caches not registered in structgen.caches: {missing}"


def test_the_registry_is_the_bottom_layer() -> None:
    tree = ast.parse((ROOT / "caches.py").read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert not any(m.startswith("structgen") for m in imported)
    assert not any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree))


def test_stats_report_entries_and_bytes_and_clear_empties_them() -> None:
    _import_all()
    vocab = load_vocab("llama-bpe")
    schema = json.loads((SCHEMAS / "constrained.json").read_text())
    instance = json.loads((SCHEMAS / "instances" / "constrained.jsonl").read_text().splitlines()[0])
    c = Constraint.compile(Grammar.from_json_schema(schema), vocab)
    state = c.start()
    for tok in greedy_tokens(vocab, json.dumps(instance).encode()):
        state.mask_words()
        assert state.commit_token(tok)
    stats = caches.stats()
    assert set(stats) == set(caches.names()) == set(caches.describe())
    for name in ("engine.token_tries", "engine.unit_counts", "engine.class_bytes", "schema.format_net.uuid"):
        assert stats[name]["entries"] > 0 and stats[name]["bytes"] > 0, (name, stats[name])
    assert all(s["entries"] >= 0 and s["bytes"] >= 0 for s in stats.values())
    # the tries hold the vocabulary's levels: megabytes on a 128k vocabulary
    assert stats["engine.token_tries"]["bytes"] > 1_000_000
    caches.clear()
    after = caches.stats()
    assert all(s["entries"] == 0 for s in after.values()), {k: v for k, v in after.items() if v["entries"]}
    # a cleared process compiles and masks as before
    again = Constraint.compile(Grammar.from_json_schema(schema), vocab)
    assert np.array_equal(again.start().mask_words(), c.start().mask_words())


def test_one_cache_clears_by_name() -> None:
    caches.register_lru("test.one", _squares, bytes_per_entry=10, estimate="a test")
    try:
        _squares(3), _squares(4)
        assert caches.stats()["test.one"] == {"entries": 2, "bytes": 20}
        caches.clear("test.one")
        assert caches.stats()["test.one"]["entries"] == 0
        with pytest.raises(KeyError):
            caches.clear("test.no-such-cache")
    finally:
        caches._registry.pop("test.one", None)


@functools.lru_cache(maxsize=8)
def _squares(n: int) -> int:
    return n * n


def test_deep_bytes_counts_arrays_once() -> None:
    a = np.zeros(100_000, dtype=np.int64)
    one = caches.deep_bytes({"x": a})
    assert 800_000 <= one < 801_000
    assert caches.deep_bytes({"x": a, "y": a, "z": a[10:]}) < one + 1_000  # shared and views once
    assert caches.deep_bytes([b"abc" * 100]) >= 300


def test_unit_counts_are_bounded_in_bytes() -> None:
    """With a budget of one entry's bytes, the memo keeps at most one entry; a budget below one
    keeps none; the counts are the same either way."""
    vocab = load_vocab("llama-bpe")
    schema = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 8}}, "required": ["a"]}
    grammar = Grammar.from_json_schema(schema)
    text = json.dumps({"a": "x\\u00e9y"}).encode()

    singles = {}
    for tid in range(vocab.n_tokens):
        b = vocab.token_bytes(tid)
        if len(b) == 1 and vocab.is_text[tid]:
            singles.setdefault(b[0], tid)

    def masks(tuning: EngineTuning) -> list[np.ndarray]:
        c = Constraint.compile(grammar, vocab, tuning=tuning)
        state, out = c.start(), []
        for tok in [singles[b] for b in text]:  # byte by byte: the begun escape's units are counted
            out.append(state.mask_words().copy())
            assert state.commit_token(tok)
        return out

    caches.clear("engine.unit_counts")
    want = masks(EngineTuning())
    assert caches.stats()["engine.unit_counts"]["entries"] >= 2
    one = max(counters_mod._counts_bytes(c) for _, c in counters_mod._COUNTS_MEMO.values())
    caches.clear("engine.unit_counts")
    got = masks(EngineTuning(max_unit_counts_bytes=one))
    assert all(np.array_equal(a, b) for a, b in zip(got, want)) and len(got) == len(want)
    assert caches.stats()["engine.unit_counts"]["entries"] == 1
    assert caches.stats()["engine.unit_counts"]["bytes"] <= one
    caches.clear("engine.unit_counts")
    got = masks(EngineTuning(max_unit_counts_bytes=one - 1))
    assert all(np.array_equal(a, b) for a, b in zip(got, want)) and len(got) == len(want)
    assert caches.stats()["engine.unit_counts"]["entries"] == 0
