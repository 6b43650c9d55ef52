"""Formats for references: ``uri``, ``uri-reference``, ``iri``, ``iri-reference`` (RFC 3986 / RFC 3987),
``uri-template`` (RFC 6570), ``json-pointer`` (RFC 6901) and ``relative-json-pointer``.

All follow their ABNF exactly, with ABNF's case-insensitive quoted strings (``%4a`` and ``%4A``,
``v1.x`` and ``V1.x``). Hosts: ``IP-literal`` (``[IPv6]`` or ``[vX.future]``), a dotted quad, or
a ``reg-name``; a reg-name such as ``999.999.999.999`` is valid, as RFC 3986 says.

``uri-template``: RFC 6570 level 4, without the operators it reserves for future use
(``= , ! @ |``), plus the apostrophe in literals (RFC 6570 erratum 6937, which the
JSON-Schema-Test-Suite follows).
"""

from __future__ import annotations

from functools import lru_cache

from .. import caches
from ..grammar import ir
from .charsets import ALPHA, DIGIT, HEXDIG, cc, rep_open
from .format_net import IPV4, ipv6

_PCT = ir.seq(ir.lit("%"), HEXDIG, HEXDIG)
_UNRESERVED = cc(("a", "z"), ("A", "Z"), ("0", "9"), "-._~")
_SUB_DELIMS = cc("!$&'()*+,;=")

#: RFC 3987 ucschar and iprivate.
UCSCHAR = cc(
    (0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF),
    (0x10000, 0x1FFFD), (0x20000, 0x2FFFD), (0x30000, 0x3FFFD), (0x40000, 0x4FFFD),
    (0x50000, 0x5FFFD), (0x60000, 0x6FFFD), (0x70000, 0x7FFFD), (0x80000, 0x8FFFD),
    (0x90000, 0x9FFFD), (0xA0000, 0xAFFFD), (0xB0000, 0xBFFFD), (0xC0000, 0xCFFFD),
    (0xD0000, 0xDFFFD), (0xE1000, 0xEFFFD),
)  # fmt: skip
IPRIVATE = cc((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))


def _reference(*, international: bool, absolute: bool, relative: bool) -> ir.Node:
    unreserved = ir.alt(_UNRESERVED, UCSCHAR) if international else _UNRESERVED
    pchar = ir.alt(unreserved, _PCT, _SUB_DELIMS, cc(":@"))
    query_extra = ir.alt(cc("/?"), IPRIVATE) if international else cc("/?")
    query = ir.star(ir.alt(pchar, query_extra))
    fragment = ir.star(ir.alt(pchar, cc("/?")))

    scheme = ir.seq(ALPHA, ir.star(cc(("a", "z"), ("A", "Z"), ("0", "9"), "+-.")))
    userinfo = ir.star(ir.alt(unreserved, _PCT, _SUB_DELIMS, ir.lit(":")))
    ipv_future = ir.seq(
        cc("vV"), rep_open(HEXDIG, 1), ir.lit("."), rep_open(ir.alt(_UNRESERVED, _SUB_DELIMS, ir.lit(":")), 1)
    )
    ip_literal = ir.seq(ir.lit("["), ir.alt(ipv6(), ipv_future), ir.lit("]"))
    reg_name = ir.star(ir.alt(unreserved, _PCT, _SUB_DELIMS))
    host = ir.alt(ip_literal, IPV4, reg_name)
    authority = ir.seq(ir.opt(ir.seq(userinfo, ir.lit("@"))), host, ir.opt(ir.seq(ir.lit(":"), ir.star(DIGIT))))

    segment = ir.star(pchar)
    segment_nz = rep_open(pchar, 1)
    segment_nz_nc = rep_open(ir.alt(unreserved, _PCT, _SUB_DELIMS, ir.lit("@")), 1)
    path_abempty = ir.star(ir.seq(ir.lit("/"), segment))
    path_absolute = ir.seq(ir.lit("/"), ir.opt(ir.seq(segment_nz, path_abempty)))
    path_rootless = ir.seq(segment_nz, path_abempty)
    path_noscheme = ir.seq(segment_nz_nc, path_abempty)
    tail = ir.seq(ir.opt(ir.seq(ir.lit("?"), query)), ir.opt(ir.seq(ir.lit("#"), fragment)))
    network = ir.seq(ir.lit("//"), authority, path_abempty)

    forms: list[ir.Node] = []
    if absolute:
        hier = ir.alt(network, path_absolute, path_rootless, ir.EMPTY)
        forms.append(ir.seq(scheme, ir.lit(":"), hier, tail))
    if relative:
        rel = ir.alt(network, path_absolute, path_noscheme, ir.EMPTY)
        forms.append(ir.seq(rel, tail))
    return ir.alt(*forms)


@lru_cache(maxsize=1)
def uri() -> ir.Node:
    return _reference(international=False, absolute=True, relative=False)


@lru_cache(maxsize=1)
def uri_reference() -> ir.Node:
    return _reference(international=False, absolute=True, relative=True)


@lru_cache(maxsize=1)
def iri() -> ir.Node:
    return _reference(international=True, absolute=True, relative=False)


@lru_cache(maxsize=1)
def iri_reference() -> ir.Node:
    return _reference(international=True, absolute=True, relative=True)


@lru_cache(maxsize=1)
def uri_template() -> ir.Node:
    """RFC 6570 ``URI-Template``."""
    literal = ir.alt(
        cc(
            (0x21, 0x21),
            (0x23, 0x24),
            (0x26, 0x3B),
            (0x3D, 0x3D),
            (0x3F, 0x5B),
            (0x5D, 0x5D),
            (0x5F, 0x5F),
            (0x61, 0x7A),
            (0x7E, 0x7E),
        ),
        UCSCHAR,
        IPRIVATE,
        _PCT,
    )
    varchar = ir.alt(cc(("a", "z"), ("A", "Z"), ("0", "9"), "_"), _PCT)
    varname = ir.seq(varchar, ir.star(ir.seq(ir.opt(ir.lit(".")), varchar)))
    max_length = ir.seq(cc(("1", "9")), ir.repeat(DIGIT, 0, 3))
    modifier = ir.alt(ir.seq(ir.lit(":"), max_length), ir.lit("*"))
    varspec = ir.seq(varname, ir.opt(modifier))
    variable_list = ir.seq(varspec, ir.star(ir.seq(ir.lit(","), varspec)))
    operator = cc("+#./;?&")
    expression = ir.seq(ir.lit("{"), ir.opt(operator), variable_list, ir.lit("}"))
    return ir.star(ir.alt(literal, expression))


@lru_cache(maxsize=1)
def json_pointer() -> ir.Node:
    """RFC 6901: ``*( "/" reference-token )``."""
    unescaped = cc((0x00, 0x2E), (0x30, 0x7D), (0x7F, ir.MAX_CODEPOINT))
    token = ir.star(ir.alt(unescaped, ir.seq(ir.lit("~"), cc("01"))))
    return ir.star(ir.seq(ir.lit("/"), token))


@lru_cache(maxsize=1)
def relative_json_pointer() -> ir.Node:
    """``non-negative-integer ( "#" / json-pointer )``."""
    integer = ir.alt(ir.lit("0"), ir.seq(cc(("1", "9")), ir.star(DIGIT)))
    return ir.seq(integer, ir.alt(ir.lit("#"), json_pointer()))


for _name, _built, _size in (
    ("uri", uri, 31_000),
    ("uri_reference", uri_reference, 33_000),
    ("iri", iri, 34_000),
    ("iri_reference", iri_reference, 36_000),
    ("uri_template", uri_template, 12_000),
    ("json_pointer", json_pointer, 3_000),
    ("relative_json_pointer", relative_json_pointer, 5_000),
):
    caches.register_lru(f"schema.format_uri.{_name}", _built, bytes_per_entry=_size, estimate="measured (deep_bytes)")
