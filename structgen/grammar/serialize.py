"""Grammars as plain JSON data (no pickle): for saved constraints and caches.

Each node becomes a small list whose first element names its kind; shared subtrees are written
once and referred to by index, so the output is linear in the size of the grammar's DAG.
"""

from __future__ import annotations

from typing import Any

from ..errors import GrammarError
from . import ir
from .grammar import Grammar

FORMAT = "structgen-grammar/1"


def grammar_to_data(grammar: Grammar) -> dict[str, Any]:
    """A JSON-serialisable description of ``grammar``."""
    nodes: list[list[Any]] = []
    index: dict[ir.Node, int] = {}

    def put(root: ir.Node) -> int:
        # iterative post-order so deep trees do not recurse
        stack: list[tuple[ir.Node, bool]] = [(root, False)]
        while stack:
            n, done = stack.pop()
            if n in index:
                continue
            kids = n.children()
            if not done and any(k not in index for k in kids):
                stack.append((n, True))
                stack.extend((k, False) for k in kids if k not in index)
                continue
            index[n] = len(nodes)
            nodes.append(_encode(n, [index[k] for k in kids]))
        return index[root]

    rules = [[name, put(body)] for name, body in grammar.rules.items()]
    return {"format": FORMAT, "start": grammar.start, "rules": rules, "nodes": nodes, "externs": dict(grammar.externs)}


def grammar_from_data(data: dict[str, Any]) -> Grammar:
    """The grammar described by :func:`grammar_to_data` output."""
    if data.get("format") != FORMAT:
        raise GrammarError(f"unknown grammar data format {data.get('format')!r}")
    built: list[ir.Node] = []
    for entry in data["nodes"]:
        built.append(_decode(entry, built))
    rules = {name: built[i] for name, i in data["rules"]}
    return Grammar(rules, data["start"], externs=data.get("externs") or {})


def _encode(n: ir.Node, kids: list[int]) -> list[Any]:
    if isinstance(n, ir.Literal):
        return ["lit", n.data.hex()]
    if isinstance(n, ir.CharClass):
        return ["char", [list(r) for r in n.ranges], n.negated]
    if isinstance(n, ir.ByteClass):
        return ["byte", [list(r) for r in n.ranges], n.negated]
    if isinstance(n, ir.Ref):
        return ["ref", n.name]
    if isinstance(n, ir.Token):
        return ["tok", list(n.ids), n.name, n.negated]
    if isinstance(n, ir.Seq):
        return ["seq", kids]
    if isinstance(n, ir.Alt):
        return ["alt", kids]
    if isinstance(n, ir.Repeat):
        return ["rep", kids[0], n.min, n.max]
    if isinstance(n, ir.Lexeme):
        return ["lex", kids[0]]
    if isinstance(n, ir.Difference):
        return ["diff", kids[0], kids[1]]
    if isinstance(n, ir.Intersection):
        return ["and", kids[0], kids[1]]
    raise TypeError(f"unknown node {n!r}")


def _decode(e: list[Any], built: list[ir.Node]) -> ir.Node:
    kind = e[0]
    if kind == "lit":
        return ir.Literal(bytes.fromhex(e[1]))
    if kind == "char":
        return ir.CharClass(tuple(tuple(r) for r in e[1]), e[2])
    if kind == "byte":
        return ir.ByteClass(tuple(tuple(r) for r in e[1]), e[2])
    if kind == "ref":
        return ir.Ref(e[1])
    if kind == "tok":
        return ir.Token(tuple(e[1]), e[2], e[3])
    if kind == "seq":
        return ir.Seq(tuple(built[i] for i in e[1]))
    if kind == "alt":
        return ir.Alt(tuple(built[i] for i in e[1]))
    if kind == "rep":
        return ir.Repeat(built[e[1]], e[2], e[3])
    if kind == "lex":
        return ir.Lexeme(built[e[1]])
    if kind == "diff":
        return ir.Difference(built[e[1]], built[e[2]])
    if kind == "and":
        return ir.Intersection(built[e[1]], built[e[2]])
    raise GrammarError(f"unknown node kind {kind!r} in grammar data")
