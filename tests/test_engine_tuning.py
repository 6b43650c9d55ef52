"""The engine's tunables (``structgen.engine.tuning.EngineTuning``): every switch off gives the
default's masks along valid documents on a real vocabulary; a bad tuning is refused naming its
field; and no test reaches into the engine with ``monkeypatch`` (tests pass a tuning)."""

from __future__ import annotations

import ast
import json
import pathlib
from dataclasses import fields

import numpy as np
import pytest
from engine_support import greedy_tokens, load_vocab

import structgen.engine
from structgen import Grammar
from structgen.engine import Constraint
from structgen.engine.terms import HAS_POSS, HAS_SYM
from structgen.engine.tuning import DEFAULT_ENGINE_TUNING, EngineTuning, switches
from structgen.errors import ConstraintError

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"

# -- (a) tests pass a tuning: nothing under structgen.engine is monkeypatched ----------------------


_ENGINE_EXPORTS = frozenset(structgen.engine.__all__) | {"engine"}


def _engine_names(tree: ast.AST) -> set[str]:
    """Names in a test module bound to something of ``structgen.engine`` (a module, a class, a
    function) by an import, or to a value made from one (``c = Constraint.compile(...)``,
    ``table = c._table``): a monkeypatch through any of them patches the engine."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("structgen.engine"):
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module:
            engine = node.module.startswith("structgen.engine")
            for alias in node.names:
                # ``from structgen import Constraint``: the engine's names re-exported
                if engine or (node.module == "structgen" and alias.name in _ENGINE_EXPORTS):
                    names.add(alias.asname or alias.name)
    assigns = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None]
    grown = True
    while grown:  # values made from engine names, to a fixed point
        grown = False
        for node in assigns:
            if _root(node.value) in names:  # type: ignore[arg-type]
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for leaf in ast.walk(target):
                        if isinstance(leaf, ast.Name) and leaf.id not in names:
                            names.add(leaf.id)
                            grown = True
    return names


def _root(node: ast.AST) -> str | None:
    """The name an expression starts from (``a`` of ``a.b[0].c(...)``)."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None


def engine_patches(source: str) -> list[int]:
    """Lines of ``source`` that patch the engine: ``monkeypatch.setattr``/``delattr`` (or the
    built-in ``setattr``) on an engine name or an ``"structgen.engine..."`` target, and an
    assignment to an attribute of an engine module or class."""
    tree = ast.parse(source)
    names = _engine_names(tree)
    modules_and_classes = {
        alias.asname or alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
        if isinstance(node, ast.Import) or (node.module or "").startswith("structgen")
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            patching = (isinstance(func, ast.Attribute) and func.attr in ("setattr", "delattr", "setitem")) or (
                isinstance(func, ast.Name) and func.id in ("setattr", "delattr")
            )
            if not patching:
                continue
            target = node.args[0]
            if isinstance(target, ast.Constant) and isinstance(target.value, str):
                if target.value.startswith("structgen.engine"):
                    found.append(node.lineno)
            elif _root(target) in names:
                found.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                    if target.value.id in modules_and_classes and target.value.id in names:
                        found.append(node.lineno)
    return sorted(found)


def test_no_test_monkeypatches_the_engine() -> None:
    offenders = {}
    for path in sorted(TESTS.rglob("*.py")):
        lines = engine_patches(path.read_text(encoding="utf-8"))
        if lines:
            offenders[str(path.relative_to(ROOT))] = lines
    assert not offenders, f"tests patch the engine (pass an EngineTuning instead): {offenders}"


@pytest.mark.parametrize(
    "source",
    [
        "from structgen.engine import table as t\ndef f(monkeypatch):\n    monkeypatch.setattr(t, 'NARROW', 0)\n",
        "from structgen.engine import Constraint\ndef f(mp):\n    mp.setattr(Constraint, '_x', None)\n",
        "from structgen.engine import count_clamp\ndef f(mp):\n    k = count_clamp.CountClamp(None)\n"
        "    mp.setattr(k, 'config', None)\n",
        "import structgen.engine.counters as c\nc.SMALL_BASE = -1\n",
        "def f(monkeypatch):\n    monkeypatch.setattr('structgen.engine.table.NARROW', 0)\n",
        "from structgen import engine\ndef f(mp):\n    mp.setattr(engine.table, 'NARROW', 0)\n",
        "from structgen import Constraint\ndef f(mp):\n    c = Constraint.compile(1, 2)\n"
        "    mp.setattr(c._table, 'x', 0)\n",
    ],
)
def test_the_scan_finds_engine_patches(source: str) -> None:
    """The scan above is not vacuous: each way of patching the engine is found."""
    assert engine_patches(source)


def test_the_scan_leaves_other_patches_alone() -> None:
    source = (
        "import os\nfrom structgen import cli\nfrom structgen.engine import Constraint\n"
        "def f(monkeypatch):\n    monkeypatch.setattr(os, 'getcwd', None)\n    monkeypatch.setattr(cli, 'main', None)\n"
        "    monkeypatch.setenv('X', '1')\n"
    )
    assert engine_patches(source) == []


# -- (b) every switch off gives the default's masks ------------------------------------------------

#: schemas whose instances meet the mechanisms the switches turn off: counted strings (uuid,
#: date, lengths), enums and closed objects (choices, literals, splits before a word), recursion
#: (relative walks), non-ASCII names (escaped when indented: string bodies after an escape), and,
#: indented, whitespace runs; each with the index of the instance walked
SCHEMAS = {"constrained": 0, "tool_union": 0, "tree": 2}
#: switches whose mechanism leaves no trace in ``Constraint.stats``: the unit counts from a begun
#: unit are remembered for the process (``counters.count_units``), so only the first constraint
#: to meet a unit finds them either way (``test_engine_regions`` compares the two directly);
#: walks one byte before a loop (``shared_loop_exits``) are keys an object allows besides its
#: listed names, which none of these schemas has (``test_engine_regions`` compares them directly);
#: ``relative_nullable``: these lazy walks meet no top that may end at once over a caller (such
#: tops come with rules a compile ahead of time shares: ``test_engine_ahead`` turns it off and on);
#: ``stack_union``: nor a configuration of several stacks (``test_engine_mask_sources`` finds
#: them along ``schemas/`` and checks the union against the plain walk)
UNSEEN = {"splice_begun", "shared_loop_exits", "relative_nullable", "stack_union"}


def _texts(name: str) -> list[bytes]:
    """The schema's instance, compact (characters as they are) and indented (escaped)."""
    line = (ROOT / "schemas" / "instances" / f"{name}.jsonl").read_text().splitlines()[SCHEMAS[name]]
    value = json.loads(line)
    return [
        json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode(),
        json.dumps(value, indent=2).encode(),
    ]


Walked = list[tuple[str, list[np.ndarray], dict[str, int]]]


def _walk_all(vocab, grammars: list[tuple[str, Grammar]], tuning: EngineTuning) -> Walked:  # type: ignore[no-untyped-def]
    """Per schema, along its texts, the plain mask at every token and a tight budget mask at
    every fourth (budget figures use count twins and counted masks too), and the constraint's
    statistics (the work done)."""
    out = []
    for name, grammar in grammars:
        c = Constraint.compile(grammar, vocab, tuning=tuning)
        masks = []
        for text in _texts(name):
            state = c.start()
            for i, tok in enumerate(greedy_tokens(vocab, text)):
                masks.append(state.mask_words().copy())
                if i % 4 == 0:
                    short = state.shortest_completion()
                    assert short is not None
                    masks.append(state.mask_words(budget=short + 2).copy())
                assert state.commit_token(tok), text[:80]
            assert state.is_accepting()
        out.append((name, masks, c.stats()))
    return out


@pytest.fixture(scope="module")
def walked():  # type: ignore[no-untyped-def]
    vocab = load_vocab("llama-bpe")
    grammars = [
        (name, Grammar.from_json_schema(json.loads((ROOT / "schemas" / f"{name}.json").read_text())))
        for name in SCHEMAS
    ]
    return vocab, grammars, _walk_all(vocab, grammars, DEFAULT_ENGINE_TUNING)


def _compare(got: Walked, want: Walked, what: str) -> None:
    for (name, a, _), (_, b, _) in zip(got, want):
        assert len(a) == len(b), f"{what}: {name}"
        for step, (x, y) in enumerate(zip(a, b)):
            assert np.array_equal(x, y), f"{what}: {name}: mask {step} differs"


def test_switches_are_the_boolean_fields() -> None:
    assert len(switches()) >= 10
    assert all(getattr(DEFAULT_ENGINE_TUNING, name) is True for name in switches())


@pytest.mark.parametrize("switch", switches())
def test_each_switch_off_gives_the_same_masks(switch: str, walked) -> None:  # type: ignore[no-untyped-def]
    """The switch's mechanism is used along these documents (off, the work differs), and off,
    every mask is the default's."""
    vocab, grammars, want = walked
    got = _walk_all(vocab, grammars, EngineTuning(**{switch: False}))
    _compare(got, want, f"{switch} off")
    if switch not in UNSEEN:
        assert [s for _, _, s in got] != [s for _, _, s in want], f"{switch}: its mechanism was not used"


def test_every_switch_off_at_once_gives_the_same_masks(walked) -> None:  # type: ignore[no-untyped-def]
    vocab, grammars, want = walked
    _compare(_walk_all(vocab, grammars[:2], EngineTuning(**dict.fromkeys(switches(), False))), want, "all off")


def test_a_saved_constraint_loads_under_another_tuning(walked) -> None:  # type: ignore[no-untyped-def]
    """A tuning is not saved: a blob loads under any, and its masks are the same."""
    vocab, grammars, want = walked
    (name, grammar), masks = grammars[0], want[0][1]
    text = _texts(name)[0]
    c = Constraint.compile(grammar, vocab)
    state = c.start()
    for tok in greedy_tokens(vocab, text)[:20]:
        state.mask_words()
        assert state.commit_token(tok)
    tuning = EngineTuning(choice_walks=False, loop_split=False, narrow=0)
    loaded = Constraint.load(c.save(), vocab, tuning=tuning)
    assert loaded.tuning is tuning
    state = loaded.start()
    for i, tok in enumerate(greedy_tokens(vocab, text)[:40]):
        # the plain mask at token i follows one budget mask per four tokens before it
        assert np.array_equal(state.mask_words(), masks[i + (i + 3) // 4]), i
        assert state.commit_token(tok)


# -- (c) a bad tuning is refused where it is written ------------------------------------------------


@pytest.mark.parametrize("name", [f.name for f in fields(EngineTuning)])
def test_a_field_of_the_wrong_type_is_refused(name: str) -> None:
    default = getattr(DEFAULT_ENGINE_TUNING, name)
    wrong: object = 1 if isinstance(default, bool) else True
    with pytest.raises(ConstraintError, match=f"EngineTuning.{name} must be"):
        EngineTuning(**{name: wrong})
    with pytest.raises(ConstraintError, match=f"EngineTuning.{name} must be"):
        EngineTuning(**{name: "3"})


@pytest.mark.parametrize(
    ("name", "value"),
    [("narrow", -1), ("sparse_live", -5), ("split_exits", -1), ("choice_class", 0), ("region_max_trimmed", 0)],
)
def test_a_field_out_of_range_is_refused(name: str, value: int) -> None:
    with pytest.raises(ConstraintError, match=f"EngineTuning.{name} must be at least"):
        EngineTuning(**{name: value})


def test_choice_walks_must_exclude_greedy_lexemes() -> None:
    """A greedy lexeme's end looks past it, which a derivative does not: a tuning that let one
    into a choice walk would give other masks, so it is refused."""
    with pytest.raises(ConstraintError, match="choice_excludes"):
        EngineTuning(choice_excludes=HAS_SYM)
    with pytest.raises(ConstraintError, match="choice_excludes"):
        EngineTuning(choice_excludes=HAS_POSS | 1 << 10)
    assert EngineTuning(choice_excludes=HAS_POSS | HAS_SYM).choice_excludes == HAS_POSS | HAS_SYM


def test_compile_and_load_refuse_what_is_no_tuning() -> None:
    vocab = load_vocab("llama-bpe")
    grammar = Grammar.from_json_schema({"type": "boolean"})
    with pytest.raises(ConstraintError, match="tuning must be an EngineTuning"):
        Constraint.compile(grammar, vocab, tuning={"narrow": 3})  # type: ignore[arg-type]
    blob = Constraint.compile(grammar, vocab).save()
    with pytest.raises(ConstraintError, match="tuning must be an EngineTuning"):
        Constraint.load(blob, vocab, tuning=None)  # type: ignore[arg-type]


def test_tunings_are_frozen_and_compare_by_value() -> None:
    t = EngineTuning(narrow=5)
    assert t == EngineTuning(narrow=5) and t != DEFAULT_ENGINE_TUNING
    with pytest.raises(AttributeError):
        t.narrow = 6  # type: ignore[misc]


def test_the_bounds_of_the_tries_regions_hold() -> None:
    """Loop regions kept on a trie, and the memos of one, stay within the tuning's counts."""
    from structgen.engine.loop_regions import loop_region
    from structgen.engine.token_trie import build_token_trie

    tokens: list[bytes | None] = [b"a", b"ab", b"b", b"abc", b"ba", b"c"]
    trie = build_token_trie(tokens, np.ones(len(tokens), dtype=bool))
    tuning = EngineTuning(max_loop_regions=1, region_max_derived=1)
    ab, a = 1 << 97 | 1 << 98, 1 << 97
    region = loop_region(trie, ab, False, tuning=tuning)
    region.remember("one", 1)
    region.remember("two", 2)
    assert list(region.derived) == ["two"]
    loop_region(trie, a, False, tuning=tuning)
    assert len(trie._loop_regions) == 1  # type: ignore[attr-defined]
