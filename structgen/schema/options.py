"""`SchemaOptions`: every knob of the JSON Schema translator, validated once, frozen.

The public functions take these as keyword arguments (``json_schema_to_grammar(s, strict=True)``);
:func:`make_options` turns such keywords into a :class:`SchemaOptions` and rejects unknown names
and bad values with a :class:`~structgen.errors.SchemaError` (keyword ``None``: an option is not a
schema keyword).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from ..deadline import deadline_problem
from ..errors import SchemaError

#: In-place applicators are followed recursively; this bound keeps Python's stack safe.
MAX_APPLICATOR_DEPTH = 200

Whitespace = Literal["flexible", "compact", "pretty"]
PropertyOrder = Literal["schema", "required_first", "any"]
OneOfMode = Literal["exact", "any_of"]
FormatMode = Literal["assert", "exact", "ignore"]


@dataclass(frozen=True)
class SchemaOptions:
    """How a schema becomes a grammar.

    Whitespace (between JSON tokens; never before or after the whole value):

    * ``"flexible"`` (default): each gap is empty, one space, or one newline (optionally after a
      carriage return) followed by at most ``max_indent`` spaces or tabs. Compact JSON, the
      ``", "``/``": "`` spacing of ``json.dumps`` and ``json.dumps(indent=N)`` output (up to
      ``max_indent`` columns) are all accepted, and a model cannot loop on whitespace.
    * ``"compact"``: no whitespace at all.
    * ``"pretty"``: exactly what ``json.dumps(value, indent=indent)`` writes; inside recursive
      parts of a schema, where the depth is unknown, a newline followed by at most ``max_indent``
      spaces.
    * ``whitespace_pattern``: a regex (ECMA-262) every gap must match whole; it must only match
      JSON whitespace, and must be bounded unless ``unbounded_whitespace_ok=True``.
    """

    whitespace: Whitespace = "flexible"
    indent: int = 2
    max_indent: int = 32
    whitespace_pattern: str | None = None
    unbounded_whitespace_ok: bool = False
    #: Order of listed properties: the ``properties`` order, required ones first, or any order.
    property_order: PropertyOrder = "schema"
    #: Objects with at most this many listed properties take them in any order whatever
    #: ``property_order`` says (0: never). A model writes keys in the order it learned, which
    #: is often not the schema's (MaskBench's instances, merged schemas whose discriminating key
    #: comes from a later branch); up to 6 keys the any-order states (at most 2**6 per count)
    #: cost little.
    any_order_up_to: int = 6
    #: In larger objects, up to this many required keys may come anywhere among the ordered
    #: ones (0: never): models often write the required keys (a ``oneOf`` branch's
    #: discriminator, ``name``, ``type``) first.
    any_order_required_up_to: int = 3
    #: Any-order states all the objects of one schema may take through ``any_order_up_to``;
    #: past it, the remaining small objects keep the fixed order (no error).
    any_order_total_states: int = 4096
    #: Forbid properties a schema does not list even where it allows them.
    strict: bool = False
    #: ``"exact"``: ``oneOf`` enforced exactly or refused; ``"any_of"``: treated as ``anyOf``.
    one_of: OneOfMode = "exact"
    #: ``"assert"``: ``format`` is enforced (or refused if unknown); ``"exact"``: as ``"assert"``,
    #: but the formats enforced only as a subset of their valid strings (``hostname``'s A-labels,
    #: ``idn-hostname``'s U-labels...) are refused instead; ``"ignore"``: annotation.
    formats: FormatMode = "assert"
    #: Drop refused keywords (recording each) instead of failing.
    lenient: bool = False

    # -- limits (a LimitError names the field) ---------------------------------------------
    max_schema_bytes: int = 16 * 1024 * 1024
    max_schema_depth: int = 256
    max_schema_nodes: int = 200_000
    #: Deepest chain of in-place applicators ($ref, allOf, anyOf, oneOf, not, if) followed at once.
    max_applicator_depth: int = 100
    max_alternatives: int = 256
    max_any_order_states: int = 4096
    max_unique_states: int = 4096
    max_count_states: int = 20_000
    max_pattern_cells: int = 16
    max_rules: int = 200_000
    #: Seconds the whole translation may take (None: no bound); past it, a LimitError names
    #: ``deadline_s``. Counts bound most work, but some schemas within every count are slow.
    deadline_s: float | None = None

    def __post_init__(self) -> None:
        _check_choice("whitespace", self.whitespace, ("flexible", "compact", "pretty"))
        _check_choice("property_order", self.property_order, ("schema", "required_first", "any"))
        _check_choice("one_of", self.one_of, ("exact", "any_of"))
        _check_choice("formats", self.formats, ("assert", "exact", "ignore"))
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type in ("bool",) and not isinstance(value, bool):
                raise SchemaError(f"option {f.name} must be True or False", keyword=None, pointer="")
            if f.type == "int" and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise SchemaError(f"option {f.name} must be a non-negative integer", keyword=None, pointer="")
        if self.max_applicator_depth > MAX_APPLICATOR_DEPTH:
            raise SchemaError(
                f"option max_applicator_depth is at most {MAX_APPLICATOR_DEPTH} (Python's recursion limit)",
                keyword=None,
                pointer="",
            )
        problem = deadline_problem(self.deadline_s)
        if problem is not None:
            raise SchemaError(f"option deadline_s {problem}", keyword=None, pointer="")
        if self.whitespace_pattern is not None and not isinstance(self.whitespace_pattern, str):
            raise SchemaError("option whitespace_pattern must be a regex string", keyword=None, pointer="")

    def with_(self, **changes: Any) -> SchemaOptions:
        return replace(self, **changes)


def _check_choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise SchemaError(
            f"option {name} must be one of {', '.join(allowed)} (got {value!r})", keyword=None, pointer=""
        )


_NAMES = frozenset(f.name for f in fields(SchemaOptions))


def make_options(options: SchemaOptions | None = None, **kwargs: Any) -> SchemaOptions:
    """A :class:`SchemaOptions` from an existing one and/or keyword arguments."""
    unknown = sorted(set(kwargs) - _NAMES)
    if unknown:
        raise SchemaError(f"unknown option(s): {', '.join(unknown)}", keyword=None, pointer="")
    base = options if options is not None else SchemaOptions()
    return replace(base, **kwargs) if kwargs else base
