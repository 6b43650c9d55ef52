"""A configuration's byte row filled at once (``TransitionTable._fill_row``: the classes not
filled yet stepped in one call, ``ConfigSystem.step_bytes_each``, or the whole row in one pass
over the configuration's frames, ``ConfigSystem.row_groups``, and written with one numpy call)
equals the row stepped byte by byte with ``ConfigSystem.step``, whatever classes a walk filled
before (one by one, ``TransitionTable.step``)."""

from __future__ import annotations

from engine_support import json_grammar, lexeme_grammar, person_grammar
from hypothesis import given, settings
from hypothesis import strategies as st

from structgen import Grammar
from structgen.engine.configs import DEAD, ConfigSystem
from structgen.engine.machines import build_machines
from structgen.engine.table import TransitionTable

GRAMMARS = {
    "json": json_grammar,
    "person": person_grammar,
    "lexeme": lexeme_grammar,
    "schema": lambda: Grammar.from_json_schema(
        {
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}},
                "kind": {"enum": ["a", "bc"]},
            },
            "required": ["id"],
        }
    ),
}


def _system(name: str) -> ConfigSystem:
    return ConfigSystem(build_machines(GRAMMARS[name]()))


def _reachable(system: ConfigSystem, table: TransitionTable, start: int, most: int) -> list[int]:
    """Configurations reachable from ``start`` by bytes, breadth first (rows filled at once)."""
    seen, frontier = {start}, [start]
    while frontier and len(seen) < most:
        nxt = []
        for cid in frontier:
            table._fill_row(cid)
            for t in set(table.rows[cid].tolist()) - seen - {DEAD}:
                seen.add(t)
                nxt.append(t)
        frontier = nxt
    return sorted(seen)


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(sorted(GRAMMARS)),
    relative=st.booleans(),
    pick=st.integers(0, 10_000),
    first=st.lists(st.integers(0, 255), max_size=6),
)
def test_row_filled_at_once_equals_bytes_stepped(name: str, relative: bool, pick: int, first: list[int]) -> None:
    system = _system(name)
    table = TransitionTable(system)
    start = system.start
    if relative:
        start = system.relative(system.stack_top[system.configs[start][0]])
    configs = _reachable(system, table, start, 60)
    cid = configs[pick % len(configs)]
    # a fresh table on the same system: the configuration's row from scratch, after the walk's
    # one-class fills of ``first``
    fresh = TransitionTable(system)
    for b in first:
        fresh.step(cid, b)
    fresh._fill_row(cid)
    assert fresh.rows[cid].tolist() == [system.step(cid, b) for b in range(256)]


def test_step_bytes_each_and_row_groups_equal_step() -> None:
    one_pass = 0
    for name in GRAMMARS:
        system = _system(name)
        table = TransitionTable(system)
        starts = [system.start, system.relative(system.stack_top[system.configs[system.start][0]])]
        for cid in sorted({c for s in starts for c in _reachable(system, table, s, 200)}):
            stepped = [system.step(cid, b) for b in range(256)]
            assert system.step_bytes_each(cid, list(range(256))) == stepped
            groups = system.row_groups(cid)
            if groups is None:
                continue
            one_pass += 1
            covered = 0
            for mask, target in groups:
                assert mask and not covered & mask  # a partition of the bytes
                covered |= mask
                assert {stepped[b] for b in range(256) if mask >> b & 1} == {target}
            assert covered == (1 << 256) - 1
    assert one_pass > 100
