"""The normal form schemas are translated through: per JSON type, a disjunction of records.

A :class:`Schema` says, for each JSON type, which values of that type are allowed, as a tuple of
*alternatives* (empty tuple: the type is excluded). Alternatives are records of the keywords of
that type (:class:`NumberC`, :class:`StringC`, :class:`ArrayC`, :class:`ObjectC`) or finite value
sets (:class:`NumValues`, :class:`StrValues`). This is the form in which ``allOf`` becomes a
real intersection, ``anyOf`` a union and ``not`` a complement, type by type.

Subschemas inside records (property values, array items...) are :class:`Handle` s: lazy
descriptions (a document location, an intersection of handles, a complement...) that the compiler
normalises only when it needs them, so recursive schemas stay finite. Every handle becomes one
grammar rule.

All classes are immutable and hashable; hashes of handles are computed once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, Union

from .jsonvalue import Canon


class Handle:
    """A subschema not yet normalised."""

    __slots__ = ()


def _hashed(cls: type) -> type:
    """Cache the dataclass hash of an immutable handle (nested handles hash in O(1))."""
    plain = cls.__hash__

    def __hash__(self: Any) -> int:
        h = self.__dict__.get("_h")
        if h is None:
            h = plain(self)
            object.__setattr__(self, "_h", h)
        return h

    cls.__hash__ = __hash__  # type: ignore[method-assign]
    return cls


@_hashed
@dataclass(frozen=True)
class AnyH(Handle):
    """The schema ``true``."""

    def __repr__(self) -> str:
        return "TRUE"


@_hashed
@dataclass(frozen=True)
class NeverH(Handle):
    """The schema ``false``."""

    def __repr__(self) -> str:
        return "FALSE"


TRUE: Handle = AnyH()
FALSE: Handle = NeverH()


@_hashed
@dataclass(frozen=True)
class Loc(Handle):
    """The subschema at a JSON pointer of the document."""

    ptr: tuple


@_hashed
@dataclass(frozen=True)
class AllOfH(Handle):
    items: tuple[Handle, ...]


@_hashed
@dataclass(frozen=True)
class AnyOfH(Handle):
    items: tuple[Handle, ...]


@_hashed
@dataclass(frozen=True)
class NotH(Handle):
    item: Handle
    origin: str = field(default="", compare=False)  # pointer of the keyword it comes from


@_hashed
@dataclass(frozen=True)
class ConstH(Handle):
    """Exactly one JSON value; ``value`` keeps the key order for writing, ``key`` compares."""

    key: Canon
    value: Any = field(compare=False, hash=False)


@_hashed
@dataclass(frozen=True)
class Fixed(Handle):
    """An already normalised schema."""

    schema: "Schema"


def all_of(*items: Handle) -> Handle:
    """Intersection of handles, flattened; ``TRUE`` dropped, ``FALSE`` absorbing."""
    out: list[Handle] = []
    seen: set[Handle] = set()
    for h in items:
        for sub in h.items if isinstance(h, AllOfH) else (h,):
            if sub is FALSE or isinstance(sub, NeverH):
                return FALSE
            if isinstance(sub, AnyH) or sub in seen:
                continue
            seen.add(sub)
            out.append(sub)
    if not out:
        return TRUE
    return out[0] if len(out) == 1 else AllOfH(tuple(out))


def any_of(*items: Handle) -> Handle:
    out: list[Handle] = []
    seen: set[Handle] = set()
    for h in items:
        for sub in h.items if isinstance(h, AnyOfH) else (h,):
            if isinstance(sub, AnyH):
                return TRUE
            if isinstance(sub, NeverH) or sub in seen:
                continue
            seen.add(sub)
            out.append(sub)
    if not out:
        return FALSE
    return out[0] if len(out) == 1 else AnyOfH(tuple(out))


def not_of(h: Handle, origin: str = "") -> Handle:
    if isinstance(h, AnyH):
        return FALSE
    if isinstance(h, NeverH):
        return TRUE
    if isinstance(h, NotH):
        return h.item
    return NotH(h, origin)


# ---------------------------------------------------------------------------------------------
# Records

Bound = tuple[Fraction, bool]  # (value, exclusive)


@dataclass(frozen=True)
class NumberC:
    """Numbers in a range, optionally integers only (or non-integers only: the complement of
    ``type: integer``) and/or multiples of ``multiple``."""

    lo: Bound | None = None
    hi: Bound | None = None
    multiple: Fraction | None = None
    integer: bool = False
    ptr: str = field(default="", compare=False)
    non_integer: bool = False

    def is_trivial(self) -> bool:
        return (
            self.lo is None and self.hi is None and self.multiple is None and not self.integer and not self.non_integer
        )


@dataclass(frozen=True)
class NumValues:
    values: frozenset[Fraction]


@dataclass(frozen=True)
class StringC:
    """Strings by length, ``pattern`` s, ``format`` s, minus the strings of ``minus``."""

    min_len: int = 0
    max_len: int | None = None
    patterns: tuple[tuple[str, str], ...] = ()  # (pattern, pointer)
    formats: tuple[tuple[str, str], ...] = ()  # (format, pointer)
    minus: tuple["StrAlt", ...] = ()

    def is_trivial(self) -> bool:
        return self.min_len == 0 and self.max_len is None and not self.patterns and not self.formats and not self.minus


@dataclass(frozen=True)
class StrValues:
    values: frozenset[str]


@dataclass(frozen=True)
class ArrayC:
    prefix: tuple[Handle, ...] = ()
    items: Handle = TRUE
    min_items: int = 0
    max_items: int | None = None
    contains: tuple[tuple[Handle, int, int | None], ...] = ()  # (schema, minContains, maxContains)
    unique: bool = False
    ptr: str = field(default="", compare=False)

    def item_at(self, i: int) -> Handle:
        return self.prefix[i] if i < len(self.prefix) else self.items

    def is_trivial(self) -> bool:
        return (
            not self.prefix
            and isinstance(self.items, AnyH)
            and self.min_items == 0
            and self.max_items is None
            and not self.contains
            and not self.unique
        )


@dataclass(frozen=True)
class KeyPolicy:
    """What one schema object says about each key: ``properties``, ``patternProperties`` and
    ``additionalProperties`` (a key's value must satisfy the verdict of every policy)."""

    props: tuple[tuple[str, Handle], ...] = ()
    patterns: tuple[tuple[str, Handle], ...] = ()
    additional: Handle = TRUE
    ptr: str = field(default="", compare=False)

    def is_trivial(self) -> bool:
        return not self.props and not self.patterns and isinstance(self.additional, AnyH)

    @cached_property
    def prop_map(self) -> dict[str, Handle]:
        return dict(self.props)


@dataclass(frozen=True)
class ObjectC:
    policies: tuple[KeyPolicy, ...] = ()
    required: frozenset[str] = frozenset()
    required_order: tuple[str, ...] = ()
    min_props: int = 0
    max_props: int | None = None
    names: tuple[Handle, ...] = ()  # propertyNames
    dep_required: tuple[tuple[str, tuple[str, ...]], ...] = ()
    dep_schemas: tuple[tuple[str, Handle], ...] = ()
    ptr: str = field(default="", compare=False)
    #: "some key outside ``names`` matching none of ``patterns`` has a value valid against the
    #: handle" (the complement of ``additionalProperties``)
    witnesses: tuple[tuple[frozenset[str], tuple[tuple[str, str], ...], Handle], ...] = ()

    def is_trivial(self) -> bool:
        return (
            all(p.is_trivial() for p in self.policies)
            and not self.required
            and self.min_props == 0
            and self.max_props is None
            and not self.names
            and not self.dep_required
            and not self.dep_schemas
            and not self.witnesses
        )


NumAlt = Union[NumberC, NumValues]
StrAlt = Union[StringC, StrValues]


@dataclass(frozen=True)
class Schema:
    null: bool = True
    boolean: frozenset[bool] = frozenset((False, True))
    number: tuple[NumAlt, ...] = (NumberC(),)
    string: tuple[StrAlt, ...] = (StringC(),)
    array: tuple[ArrayC, ...] = (ArrayC(),)
    object: tuple[ObjectC, ...] = (ObjectC(),)

    def is_empty(self) -> bool:
        return not (self.null or self.boolean or self.number or self.string or self.array or self.object)

    def is_any(self) -> bool:
        return self == ANY

    def alternatives(self) -> int:
        return len(self.number) + len(self.string) + len(self.array) + len(self.object)


ANY = Schema()
NEVER = Schema(False, frozenset(), (), (), (), ())

TYPE_NAMES = ("null", "boolean", "number", "string", "array", "object")


def only_types(*names: str, integer: bool = False) -> Schema:
    """The schema of ``type: [names]`` (``integer`` restricts the number type to integers)."""
    return Schema(
        null="null" in names,
        boolean=frozenset((False, True)) if "boolean" in names else frozenset(),
        number=(NumberC(integer=integer),) if "number" in names else (),
        string=(StringC(),) if "string" in names else (),
        array=(ArrayC(),) if "array" in names else (),
        object=(ObjectC(),) if "object" in names else (),
    )
