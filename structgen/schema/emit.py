"""Normalised schemas to grammar rules: one rule per subschema (and depth, in pretty mode).

The :class:`Emitter` walks a work list of handles, asks the compiler for each handle's normal
form and writes its rule: the alternatives of every allowed type, with strings and numbers from
the scalar translators, finite values spelled out, and arrays and objects delegated to
:mod:`.arrays` and :mod:`.objects`. Subschemas become rule references, so ``$ref`` and recursion
cost one rule each. Shared lexical pieces (a JSON string, a whitespace gap, each distinct scalar
token) are rules too, so the grammar holds each of them once.
"""

from __future__ import annotations

import re
import zlib
from typing import Any, Callable

from ..deadline import check_deadline
from ..errors import LimitError, SchemaError
from ..grammar import ir
from .arrays import array_node
from .json_text import (
    ALL_SCALARS,
    ANY_U_ESCAPE,
    NON_INTEGER,
    SHORT_ESCAPES,
    number_literal,
    spell_class,
    string_all_spellings,
    string_literal,
)
from .loader import pointer_text
from .model import (
    AllOfH,
    AnyH,
    AnyOfH,
    ConstH,
    Fixed,
    Handle,
    Loc,
    NeverH,
    NotH,
    NumberC,
    NumValues,
    Schema,
    StringC,
    StrValues,
)
from .objects import object_node
from .scalars import number_record_node, string_node
from .whitespace import Layout

Depth = int | None


class Emitter:
    def __init__(self, ctx: Any, *, pretty_depths: bool = False, recursive: frozenset[Handle] = frozenset()) -> None:
        self.ctx = ctx
        self.opts = ctx.opts
        self.rules: dict[str, ir.Node] = {}
        self.names: set[str] = set()
        self._next_number: dict[str, int] = {}  # the next suffix to try, per base name
        #: the base name of each hint asked for (a bag of keys in any order asks once per state)
        self._bases: dict[str, str] = {}
        self.handle_names: dict[tuple[Handle, Depth], str] = {}
        self.name_handle: dict[str, Handle] = {}
        self.keyed: dict[Any, str] = {}
        #: what is left of ``any_order_total_states`` for small objects (objects.py)
        self.any_order_budget: int = self.opts.any_order_total_states
        self.queue: list[tuple[Handle, Depth, str]] = []
        self.pretty_depths = pretty_depths
        self.recursive = recursive
        self.layout = Layout(self.opts)
        self._node_cache: dict[Any, ir.Node] = {}
        if self.layout.needs_gap_rule():
            self.layout.gap = self.shared("ws", self.layout.gap_body)
        self.u_escape = self.shared("u-escape", ANY_U_ESCAPE)
        self.short_escape = self.shared("short-escape", SHORT_ESCAPES)
        self.string_char = self.shared(
            "string-char", spell_class(ALL_SCALARS, u_rule=self.u_escape, esc_rule=self.short_escape)
        )

    # -- rules ---------------------------------------------------------------------------------

    def fresh(self, hint: str) -> str:
        base = self._bases.get(hint)
        if base is None:
            base = re.sub(r"[^A-Za-z0-9]+", "-", hint).strip("-") or "r"
            if len(base) > 48:
                crc = zlib.crc32(hint.encode("utf-8", "surrogatepass")) & 0xFFFF
                base = base[:40].rstrip("-") + "-" + format(crc, "x")
            self._bases[hint] = base
        # numbering resumes where this base left off: scanning from 2 on every call made the
        # rules of one long key (a chunk every few dozen characters) quadratic in its length
        n = self._next_number.get(base, 1)
        name = base if n == 1 else f"{base}-{n}"
        while name in self.names:
            n += 1
            name = f"{base}-{n}"
        self._next_number[base] = n + 1
        self.names.add(name)
        if len(self.names) > self.opts.max_rules:
            raise LimitError(
                f"the grammar needs more than {self.opts.max_rules} rules", limit="max_rules", value=self.opts.max_rules
            )
        return name

    def define(self, hint: str, body: ir.Node) -> ir.Ref:
        name = self.fresh(hint)
        self.rules[name] = body
        return ir.Ref(name)

    def shared(self, hint: str, body: ir.Node) -> ir.Ref:
        """A rule for ``body``, defined once however often it is asked for."""
        key = ("shared", body)
        name = self.keyed.get(key)
        if name is None:
            name = self.fresh(hint)
            self.keyed[key] = name
            self.rules[name] = body
        return ir.Ref(name)

    def keyed_rule(self, key: Any, hint: str, build: Callable[[str], ir.Node]) -> ir.Ref:
        """A rule identified by ``key``, built once by ``build(name)`` (the name is reserved first,
        so the body may refer to itself)."""
        name = self.keyed.get(key)
        if name is None:
            name = self.fresh(hint)
            self.keyed[key] = name
            self.rules[name] = ir.NOTHING
            self.rules[name] = build(name)
        return ir.Ref(name)

    def child_depth(self, depth: Depth) -> Depth:
        return None if depth is None else depth + 1

    def handle_rule(self, h: Handle, depth: Depth) -> ir.Ref:
        if not self.pretty_depths or h in self.recursive:
            depth = None
        key = (h, depth)
        name = self.handle_names.get(key)
        if name is None:
            name = self.fresh(self._hint(h) + ("" if depth is None or not self.pretty_depths else f"-d{depth}"))
            self.handle_names[key] = name
            self.name_handle[name] = h
            self.queue.append((h, depth, name))
        return ir.Ref(name)

    def _hint(self, h: Handle) -> str:
        if isinstance(h, Loc):
            return "root" if not h.ptr else pointer_text(h.ptr[-3:]).strip("/")
        if isinstance(h, AnyH):
            return "any"
        if isinstance(h, NeverH):
            return "never"
        if isinstance(h, AllOfH):
            return "all-of"
        if isinstance(h, AnyOfH):
            return "any-of"
        if isinstance(h, NotH):
            return "not"
        if isinstance(h, ConstH):
            return "const"
        if isinstance(h, Fixed):
            return "schema"
        return "s"

    def run(self) -> None:
        while self.queue:
            check_deadline()
            h, depth, name = self.queue.pop()
            self.rules[name] = self.schema_node(self.ctx.normalize(h), depth, name)

    # -- schemas ---------------------------------------------------------------------------------

    def schema_node(self, s: Schema, depth: Depth, name: str) -> ir.Node:
        parts: list[ir.Node] = []
        if s.null:
            parts.append(ir.lit("null"))
        if True in s.boolean:
            parts.append(ir.lit("true"))
        if False in s.boolean:
            parts.append(ir.lit("false"))
        for alt in s.number:
            parts.append(self.number_alt(alt))
        for alt in s.string:
            parts.append(self.string_alt(alt))
        for a in s.array:
            parts.append(array_node(self, a, depth, name))
        for o in s.object:
            parts.append(object_node(self, o, depth, name))
        return ir.alt(*parts)

    def number_alt(self, alt: Any) -> ir.Node:
        if isinstance(alt, NumValues):
            return ir.alt(*(number_literal(v) for v in sorted(alt.values)))
        assert isinstance(alt, NumberC)
        key = ("number-alt", alt)
        cached = self._node_cache.get(key)
        if cached is None:
            cached = self._node_cache[key] = self._number_alt(alt)
        return cached

    @property
    def _zero_fraction_integers(self) -> bool:
        """Whether ``1.0`` is an integer: not in draft-04 and draft-03 (a mathematical integer from draft-06 on)."""
        return getattr(getattr(self.ctx, "doc", None), "draft", None) not in ("draft-04", "draft-03")

    def _number_alt(self, alt: NumberC) -> ir.Node:
        aux: dict[str, ir.Node] = {}
        try:
            if alt.non_integer and alt.multiple is not None:
                raise SchemaError(
                    "non-integer multiples (the complement of integer with multipleOf) are not supported",
                    keyword="multipleOf",
                    pointer=alt.ptr,
                )
            node = number_record_node(alt, aux, zero_fraction=self._zero_fraction_integers)
        except SchemaError as e:
            self.ctx.refuse_error(e)
            aux = {}
            node = number_record_node(NumberC(integer=alt.integer), aux, zero_fraction=self._zero_fraction_integers)
        if alt.non_integer:
            node = ir.Intersection(self.shared("number", node), self.shared("non-integer", NON_INTEGER))
        for rule_name, body in aux.items():  # named after the constraint: equal ones are shared
            if rule_name not in self.rules:
                self.names.add(rule_name)
                self.rules[rule_name] = body
        return self.shared("integer" if alt.integer else "number", node)

    def string_alt(self, alt: Any) -> ir.Node:
        if isinstance(alt, StrValues):
            return ir.alt(*(string_literal(v) for v in sorted(alt.values)))
        return self.string_record(alt)

    def _string_base(self, min_len: int, max_len: int | None, pattern: tuple | None, fmt: tuple | None) -> ir.Node:
        """A shared rule for the scalar string node; in lenient mode refused parts are dropped
        (first pattern and format, then the lengths), never strengthened."""
        attempts = [(min_len, max_len, pattern, fmt)]
        if pattern is not None or fmt is not None:
            attempts.append((min_len, max_len, None, None))
        if min_len or max_len is not None:
            attempts.append((0, None, None, None))
        cache_key = ("string-base", min_len, max_len, pattern, fmt)
        if cache_key in self._node_cache:
            return self._node_cache[cache_key]
        for lo, hi, pat, f in attempts:
            kwargs: dict[str, Any] = {"min_length": lo, "max_length": hi}
            ptr = ""
            if pat is not None:
                kwargs["pattern"], ptr = pat
            if f is not None:
                kwargs["format"], ptr = f
            try:
                node = self.shared(
                    "string", string_node(pointer=ptr, exact_formats=self.opts.formats == "exact", **kwargs)
                )
                break
            except SchemaError as e:
                self.ctx.refuse_error(e)
        else:
            node = self.shared("string", ir.seq(ir.lit('"'), ir.star(self.string_char), ir.lit('"')))
        self._node_cache[cache_key] = node
        return node

    def string_record(self, rec: StringC) -> ir.Node:
        """The token node of a string record: scalar nodes intersected, minus excluded strings."""
        if rec.is_trivial():
            return self.shared("string", ir.seq(ir.lit('"'), ir.star(self.string_char), ir.lit('"')))
        first_p = rec.patterns[0] if rec.patterns else None
        first_f = rec.formats[0] if rec.formats else None
        node: ir.Node = self._string_base(rec.min_len, rec.max_len, first_p, first_f)
        for p in rec.patterns[1:]:
            node = ir.Intersection(node, self._string_base(0, None, p, None))
        for f in rec.formats[1:]:
            node = ir.Intersection(node, self._string_base(0, None, None, f))
        if rec.minus:
            excluded = []
            for m in rec.minus:
                if isinstance(m, StrValues):
                    excluded.extend(string_all_spellings(v) for v in sorted(m.values))
                else:
                    excluded.append(self.string_record(m))
            node = ir.Difference(node, ir.alt(*excluded))
        return node if isinstance(node, ir.Ref) else self.shared("string", node)
