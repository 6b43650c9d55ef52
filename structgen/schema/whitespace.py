"""Where JSON whitespace may go, per option: the separators of objects and arrays.

:class:`Layout` gives the nodes for the five places a JSON container has whitespace: after the
opening bracket of a non-empty container (``open``), before the closing one (``close``), inside an
empty one (``empty``), the item separator with its surrounding space (``comma``) and the key
separator (``colon``). In ``pretty`` mode these depend on the nesting depth (``None``: unknown,
inside recursive parts).
"""

from __future__ import annotations

from ..errors import SchemaError
from ..grammar import ir
from .options import SchemaOptions


def flexible_gap(max_indent: int) -> ir.Node:
    """Empty, one space, or a newline (after an optional CR) and at most ``max_indent`` blanks."""
    newline = ir.seq(
        ir.opt(ir.lit("\r")), ir.lit("\n"), ir.repeat(ir.CharClass(((0x09, 0x09), (0x20, 0x20))), 0, max_indent)
    )
    return ir.alt(ir.EMPTY, ir.lit(" "), newline)


_JSON_WS = ir.CharClass(((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)))


def _unbounded(node: ir.Node) -> bool:
    return any(isinstance(n, ir.Repeat) and n.max is None for n in ir.iter_nodes(node))


def custom_gap(pattern: str, unbounded_ok: bool) -> ir.Node:
    """The gap node of a ``whitespace_pattern``: the pattern matched whole, restricted to JSON
    whitespace (so ``\\s`` means JSON's four whitespace characters), refused if unbounded."""
    try:
        from ..grammar.regex import regex_to_node  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - until the regex reader is merged
        raise SchemaError("whitespace_pattern needs structgen.grammar.regex", keyword=None, pointer="") from None
    node = regex_to_node(pattern, search=False)
    if _unbounded(node) and not unbounded_ok:
        raise SchemaError(
            f"whitespace_pattern {pattern!r} is unbounded (a model could loop on it); bound it, or pass"
            " unbounded_whitespace_ok=True",
            keyword=None,
            pointer="",
        )
    return ir.Intersection(node, ir.star(_JSON_WS))


class Layout:
    """Separator nodes for one set of options; ``gap`` is the shared node of one free gap."""

    def __init__(self, opts: SchemaOptions, gap_ref: ir.Node | None = None) -> None:
        self.opts = opts
        self.pretty = opts.whitespace == "pretty" and opts.whitespace_pattern is None
        if opts.whitespace_pattern is not None:
            self.gap_body: ir.Node = custom_gap(opts.whitespace_pattern, opts.unbounded_whitespace_ok)
        elif opts.whitespace == "compact":
            self.gap_body = ir.EMPTY
        elif opts.whitespace == "flexible":
            self.gap_body = flexible_gap(opts.max_indent)
        else:
            self.gap_body = ir.EMPTY
        #: what the grammar refers to for a gap (a rule reference once the emitter defines one)
        self.gap: ir.Node = gap_ref if gap_ref is not None else self.gap_body
        self._pretty_flex = ir.seq(ir.lit("\n"), ir.repeat(ir.lit(" "), 0, max(opts.max_indent, 0)))
        #: the comma node per depth and the colon node, each with the gap it was built with (the
        #: emitter may replace ``gap`` by a rule reference), built once: an object's states ask
        #: for them thousands of times (one entry per nesting depth, at most ``max_depth``)
        self._commas: dict[int | None, tuple[ir.Node, ir.Node]] = {}
        self._colon: tuple[ir.Node, ir.Node] | None = None

    def needs_gap_rule(self) -> bool:
        return not self.pretty and self.gap_body != ir.EMPTY

    def _indent(self, depth: int | None) -> ir.Node:
        if depth is None:
            return self._pretty_flex
        return ir.lit("\n" + " " * (self.opts.indent * depth))

    def open(self, depth: int | None) -> ir.Node:
        if self.pretty:
            return self._indent(None if depth is None else depth + 1)
        return self.gap

    def close(self, depth: int | None) -> ir.Node:
        if self.pretty:
            return self._indent(depth)
        return self.gap

    def empty(self) -> ir.Node:
        return ir.EMPTY if self.pretty else self.gap

    def comma(self, depth: int | None) -> ir.Node:
        known = self._commas.get(depth)
        if known is not None and known[0] is self.gap:
            return known[1]
        if self.pretty:
            node = ir.seq(ir.lit(","), self._indent(None if depth is None else depth + 1))
        else:
            node = ir.seq(self.gap, ir.lit(","), self.gap)
        self._commas[depth] = (self.gap, node)
        return node

    def colon(self) -> ir.Node:
        if self._colon is not None and self._colon[0] is self.gap:
            return self._colon[1]
        node = ir.lit(": ") if self.pretty else ir.seq(self.gap, ir.lit(":"), self.gap)
        self._colon = (self.gap, node)
        return node

    def sep(self, count: int, depth: int | None) -> ir.Node:
        """What precedes an item after ``count`` items: ``open`` for the first, ``comma`` later."""
        return self.open(depth) if count == 0 else self.comma(depth)

    def end(self, count: int, depth: int | None) -> ir.Node:
        """What follows the last of ``count`` items: ``empty`` or ``close``."""
        return self.empty() if count == 0 else self.close(depth)
