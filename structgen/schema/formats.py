"""JSON Schema ``format`` values as character-level languages: the registry and its one entry point.

:func:`format_node` returns the language of *decoded* strings a format accepts (the string
translator encodes it for JSON). Every format is either enforced by a regular language or refused;
none is treated as an annotation here (a lenient translator option may do that, knowingly).

:data:`FORMATS` records, for each supported name, whether the language is *exact* (every valid
string accepted, every invalid one rejected) or a *subset* (every accepted string is valid, but
some valid ones are rejected); the notes say which. A strict caller can refuse the subsets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import SchemaError
from ..grammar import ir
from . import format_datetime as dt
from . import format_net as net
from . import format_uri as ref
from .json_escapes import declare_self_encoded


@dataclass(frozen=True)
class FormatInfo:
    """How one ``format`` is enforced."""

    build: Callable[[], ir.Node]
    exact: bool
    note: str = ""
    #: its strings are printable ASCII JSON writes as themselves (no quote, backslash or
    #: slash), built in canonical form: the node is its own encoding (tests check it)
    self_encoded: bool = False


FORMATS: dict[str, FormatInfo] = {
    "date": FormatInfo(dt.full_date, True, "RFC 3339 full-date with month lengths and leap years", self_encoded=True),
    "time": FormatInfo(
        dt.full_time, True, "RFC 3339 full-time (offset required), leap second only at 23:59 UTC", self_encoded=True
    ),
    "date-time": FormatInfo(dt.date_time, True, "RFC 3339 date-time; T and Z in either case", self_encoded=True),
    "duration": FormatInfo(
        dt.duration,
        False,
        "RFC 3339 appendix A; upper-case designators only (lower-case ones rejected)",
        self_encoded=True,
    ),
    "ipv4": FormatInfo(lambda: net.IPV4, True, "dotted quad, octets 0-255 without leading zeros", self_encoded=True),
    "ipv6": FormatInfo(net.ipv6, True, "RFC 4291 text forms; no zone id", self_encoded=True),
    "hostname": FormatInfo(
        net.hostname, False, "RFC 1123; labels with '--' in positions 3-4 (including Punycode xn-- labels) rejected"
    ),
    "idn-hostname": FormatInfo(
        lambda: net.hostname(True), False, "ASCII labels only, with the four IDN full stops as separators"
    ),
    "email": FormatInfo(net.email, False, "RFC 5321 Mailbox; general address literals [tag:...] rejected"),
    "idn-email": FormatInfo(
        lambda: net.email(True), False, "RFC 6531 local parts; ASCII domains only; general address literals rejected"
    ),
    "uuid": FormatInfo(net.uuid, True, "8-4-4-4-12 hex digits, either case", self_encoded=True),
    "uri": FormatInfo(ref.uri, True, "RFC 3986 URI"),
    "uri-reference": FormatInfo(ref.uri_reference, True, "RFC 3986 URI-reference"),
    "iri": FormatInfo(ref.iri, True, "RFC 3987 IRI"),
    "iri-reference": FormatInfo(ref.iri_reference, True, "RFC 3987 IRI-reference"),
    "uri-template": FormatInfo(
        ref.uri_template, False, "RFC 6570 level 4 plus the apostrophe; reserved operators = , ! @ | rejected"
    ),
    "json-pointer": FormatInfo(ref.json_pointer, True, "RFC 6901"),
    "relative-json-pointer": FormatInfo(ref.relative_json_pointer, True, "draft-handrews-relative-json-pointer-01"),
}

#: Formats that have a fixed meaning but no regular language: always refused.
NOT_REGULAR: dict[str, str] = {
    "regex": "the set of valid ECMA-262 regular expressions is not a regular language (nested groups)",
}


def format_node(name: str, *, pointer: str = "", exact_only: bool = False) -> ir.Node:
    """The decoded-character language of format ``name``.

    Raises :class:`~structgen.errors.SchemaError` (keyword ``format``) for an unknown format, for
    one that cannot be a regular language, and, with ``exact_only``, for one whose language is a
    strict subset of the valid strings.
    """
    if not isinstance(name, str):
        raise SchemaError("format must be a string", keyword="format", pointer=pointer)
    if name in NOT_REGULAR:
        raise SchemaError(f"format {name!r} cannot be enforced: {NOT_REGULAR[name]}", keyword="format", pointer=pointer)
    info = FORMATS.get(name)
    if info is None:
        raise SchemaError(f"unknown format {name!r}", keyword="format", pointer=pointer)
    if exact_only and not info.exact:
        raise SchemaError(
            f"format {name!r} is only enforced as a subset of its valid strings ({info.note})",
            keyword="format",
            pointer=pointer,
        )
    node = info.build()
    if info.self_encoded:
        # known by construction: the encoder's walk that would find it out takes tens of ms on
        # date-time's ~7,000 nodes the first time a process meets it (that the node derives some
        # string, the clean-up reads from the mark the encoder leaves: ir.ClosedFacts)
        declare_self_encoded(node)
    return node
