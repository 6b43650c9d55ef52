"""Nullable rules and left recursion in the grammar form (used by the GBNF writer)."""

from __future__ import annotations

from structgen.grammar import ir
from structgen.grammar.left_recursion import left_recursive_rule, nullable_nodes

L, R = ir.lit, ir.Ref


def test_nullable_rules() -> None:
    rules = {"a": ir.seq(R("b"), R("b")), "b": ir.opt(L("x")), "c": ir.seq(R("a"), L("k")), "d": ir.plus(R("a"))}
    names, nodes = nullable_nodes(rules)
    assert names == {"a", "b", "d"}
    assert id(rules["c"]) not in nodes and id(rules["a"]) in nodes


def test_left_recursion_through_nullable_prefixes() -> None:
    assert left_recursive_rule({"a": ir.alt(L("x"), ir.seq(R("a"), L("y")))}) == "a"
    assert left_recursive_rule({"a": ir.seq(ir.star(L("x")), R("b")), "b": ir.alt(L("y"), ir.seq(R("a"), L("z")))})
    assert (
        left_recursive_rule({"a": ir.seq(ir.plus(L("x")), R("b")), "b": ir.alt(L("y"), ir.seq(R("a"), L("z")))}) is None
    )
    assert left_recursive_rule({"a": ir.seq(ir.Repeat(R("e"), 2, 3), R("a")), "e": ir.alt(ir.EMPTY, L("q"))}) == "a"
    assert left_recursive_rule({"a": ir.seq(ir.Repeat(R("a"), 0, 0), L("x"))}) is None
    assert left_recursive_rule({"a": ir.seq(L("x"), R("a"))}) is None  # right recursion is fine


def test_long_chains_are_linear() -> None:
    n = 20_000
    rules: dict[str, ir.Node] = {f"r{i}": R(f"r{i + 1}") for i in range(n)}
    rules[f"r{n}"] = ir.EMPTY
    rules["root"] = ir.seq(R("r0"), R("root"), L("x"))
    assert left_recursive_rule(rules) == "root"
    deep: ir.Node = L("x")
    for _ in range(50_000):
        deep = ir.Alt((ir.Seq((deep, L("y"))), R("z")))
    assert left_recursive_rule({"root": deep, "z": ir.seq(R("root"), L("w"))}) == "root"
