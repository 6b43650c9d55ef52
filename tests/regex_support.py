"""Test helpers for the regex reader: an independent check of lowered nodes through Python's ``regex``.

``node_to_pyregex`` spells a grammar node (the subset the regex reader produces: literals, classes,
sequences, choices, repetitions) as a ``regex``-package pattern, so that a lowered pattern's
language can be checked without the byte-level matcher.
"""

from __future__ import annotations

import regex

from structgen.grammar import ir


def _cp(c: int) -> str:
    return f"\\U{c:08x}"


def node_to_pyregex(root: ir.Node, *, as_bytes: bool = False) -> str:
    out: dict[int, str] = {}
    stack: list[tuple[ir.Node, bool]] = [(root, False)]
    while stack:
        n, done = stack.pop()
        if not done and n.children():
            stack.append((n, True))
            stack.extend((c, False) for c in n.children())
            continue
        kids = [out[id(c)] for c in n.children()]
        if isinstance(n, ir.Literal):
            if as_bytes:
                s = "".join(f"\\x{b:02x}" for b in n.data)
            else:
                s = "".join(_cp(ord(ch)) for ch in n.data.decode("utf-8"))
            s = f"(?:{s})"
        elif isinstance(n, ir.CharClass):
            assert not as_bytes
            body = "".join(_cp(lo) if lo == hi else f"{_cp(lo)}-{_cp(hi)}" for lo, hi in n.ranges)
            if not n.ranges:
                s = "(?s:.)" if n.negated else "(?!)"
            else:
                s = f"[{'^' if n.negated else ''}{body}]"
        elif isinstance(n, ir.ByteClass):
            assert as_bytes
            body = "".join(f"\\x{lo:02x}" if lo == hi else f"\\x{lo:02x}-\\x{hi:02x}" for lo, hi in n.ranges)
            if not n.ranges:
                s = "(?s:.)" if n.negated else "(?!)"
            else:
                s = f"[{'^' if n.negated else ''}{body}]"
        elif isinstance(n, ir.Seq):
            s = "(?:" + "".join(kids) + ")"
        elif isinstance(n, ir.Alt):
            s = "(?:" + "|".join(kids) + ")" if kids else "(?!)"
        elif isinstance(n, ir.Repeat):
            s = f"(?:{kids[0]}){{{n.min},{'' if n.max is None else n.max}}}"
        else:
            raise TypeError(f"unexpected node {n!r}")
        out[id(n)] = s
    return out[id(root)]


def node_fullmatch(node: ir.Node, text: str | bytes) -> bool:
    """Whether ``node``'s language contains ``text``, decided by the ``regex`` package."""
    as_bytes = isinstance(text, bytes)
    pat = node_to_pyregex(node, as_bytes=as_bytes)
    compiled = regex.compile(pat.encode("ascii") if as_bytes else pat, regex.DOTALL)
    return compiled.fullmatch(text) is not None
