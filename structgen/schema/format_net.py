"""Formats for addresses and names: ``ipv4``, ``ipv6``, ``hostname``, ``idn-hostname``, ``email``,
``idn-email``, ``uuid``.

* ``ipv4``: RFC 2673 dotted-quad, each octet 0-255 without leading zeros (``dec-octet`` of
  RFC 3986).
* ``ipv6``: RFC 4291 section 2.2 text forms as RFC 3986's ``IPv6address`` spells them: all ``::``
  compressions, 1-4 hex digits per group (either case), an embedded dotted-quad in the last 32
  bits; no zone id, no brackets, no prefix length.
* ``hostname``: RFC 1123 section 2.1 labels (letters, digits, hyphens; 1-63 characters; no hyphen
  at either end), separated by single dots, no trailing dot, at most 253 characters in all.
  Labels with ``--`` in their third and fourth characters are refused: RFC 5891 reserves them, and
  the only valid ones, Punycode A-labels (``xn--``), cannot be checked by a regular language
  (decoding and IDNA2008 validity). Departure: valid A-labels are rejected.
* ``idn-hostname``: ASCII (NR-LDH) labels as for ``hostname``, separated by any of the four IDN
  full stops (``.`` U+3002 U+FF0E U+FF61). Departure: U-labels and A-labels are rejected, since
  their IDNA2008 and Bidi rules and the 63-octet limit on the Punycode form are not expressed
  here.
* ``email``: RFC 5321 ``Mailbox``: a dot-atom or quoted-string local part, then ``@`` and a domain
  (``sub-domain *("." sub-domain)``) or an IPv4 / ``IPv6:`` address literal. Departure: the
  general address literal (``[tag:content]``) is rejected. The ABNF has no length limits, and
  none are applied (section 4.5.3 limits are implementation minimums, not syntax).
* ``idn-email``: RFC 6531: as ``email``, with any non-ASCII character also allowed in the local
  part (atoms and quoted strings). Departure: internationalised domain names (U-labels) are
  rejected; the domain is the ASCII ``email`` domain.
* ``uuid``: RFC 4122 ``8-4-4-4-12`` hexadecimal digits in either case, any version and variant.
"""

from __future__ import annotations

from functools import lru_cache

from .. import caches
from ..grammar import ir
from .charsets import ALNUM, DIGIT, HEXDIG, caseless, cc, rep, rep_open

#: RFC 3986 dec-octet: 0-255 without leading zeros.
DEC_OCTET = ir.alt(
    DIGIT,
    ir.seq(cc(("1", "9")), DIGIT),
    ir.seq(ir.lit("1"), DIGIT, DIGIT),
    ir.seq(ir.lit("2"), cc(("0", "4")), DIGIT),
    ir.seq(ir.lit("25"), cc(("0", "5"))),
)

IPV4 = ir.seq(DEC_OCTET, rep(ir.seq(ir.lit("."), DEC_OCTET), 3))


@lru_cache(maxsize=2)
def ipv6(max_groups_with_gap: int = 7) -> ir.Node:
    """RFC 3986 ``IPv6address`` (RFC 4291 text forms).

    ``max_groups_with_gap`` is the most 16-bit groups written out when ``::`` is used: 7 for
    RFC 4291 (``::`` stands for one group or more), 6 for RFC 5321 address literals (``::``
    stands for two groups or more). An embedded dotted quad counts as two groups.
    """
    h16 = ir.repeat(HEXDIG, 1, 4)
    h16c = ir.seq(h16, ir.lit(":"))
    ls32 = ir.alt(ir.seq(h16, ir.lit(":"), h16), IPV4)

    def groups(count: int) -> ir.Node:
        # exactly `count` groups ending the address; the last two may be a dotted quad
        if count == 0:
            return ir.EMPTY
        if count == 1:
            return h16
        return ir.seq(rep(h16c, count - 2), ls32)

    full = groups(8)
    forms = [full]
    for after in range(max_groups_with_gap + 1):
        room = max_groups_with_gap - after
        # up to `room` groups before the gap: [ *(room-1)( h16 ":" ) h16 ]
        before = ir.opt(ir.seq(ir.repeat(h16c, 0, room - 1), h16)) if room else ir.EMPTY
        forms.append(ir.seq(before, ir.lit("::"), groups(after)))
    return ir.alt(*forms)


_LDH = cc(("a", "z"), ("A", "Z"), ("0", "9"), "-")

#: Longest host name in text form: 255 octets on the wire, less the length bytes of the root.
MAX_HOSTNAME_LENGTH = 253


@lru_cache(maxsize=1)
def hostname_label() -> ir.Node:
    """One RFC 1123 label of 1-63 characters, except the reserved ``??--`` labels."""
    # characters 3 and 4 may not both be hyphens: (letter-or-digit, any) or (hyphen, letter-or-digit)
    third_fourth = ir.alt(ir.seq(ALNUM, _LDH), ir.seq(ir.lit("-"), ALNUM))
    return ir.alt(
        ALNUM,
        ir.seq(ALNUM, ALNUM),
        ir.seq(ALNUM, _LDH, ALNUM),
        ir.seq(ALNUM, _LDH, _LDH, ALNUM),
        ir.seq(ALNUM, _LDH, third_fourth, ir.repeat(_LDH, 0, 58), ALNUM),
    )


#: Label separators of internationalised host names (RFC 3490 section 3.1): full stop, ideographic
#: full stop, fullwidth full stop, halfwidth ideographic full stop.
IDN_SEPARATORS = cc(".\u3002\uff0e\uff61")


@lru_cache(maxsize=2)
def hostname(international: bool = False) -> ir.Node:
    """Dot-separated labels, 253 characters at most (``international``: the IDN separators too)."""
    label = hostname_label()
    separator = IDN_SEPARATORS if international else ir.lit(".")
    names = ir.seq(label, ir.star(ir.seq(separator, label)))
    return ir.Intersection(names, ir.repeat(ir.ANY_CHAR, 1, MAX_HOSTNAME_LENGTH))


# RFC 5321 section 4.1.2 / 4.1.3
_ATEXT = cc(("a", "z"), ("A", "Z"), ("0", "9"), "!#$%&'*+-/=?^_`{|}~")
_QTEXT = cc((32, 33), (35, 91), (93, 126))
_QUOTED_PAIR = ir.seq(ir.lit("\\"), cc((32, 126)))
_UTF8_NON_ASCII = cc((0x80, ir.MAX_CODEPOINT))


def _local_part(international: bool) -> ir.Node:
    atext = ir.alt(_ATEXT, _UTF8_NON_ASCII) if international else _ATEXT
    qtext = ir.alt(_QTEXT, _UTF8_NON_ASCII) if international else _QTEXT
    atom = rep_open(atext, 1)
    dot_string = ir.seq(atom, ir.star(ir.seq(ir.lit("."), atom)))
    quoted = ir.seq(ir.lit('"'), ir.star(ir.alt(qtext, _QUOTED_PAIR)), ir.lit('"'))
    return ir.alt(dot_string, quoted)


def _smtp_domain() -> ir.Node:
    # sub-domain = Let-dig [Ldh-str]; Ldh-str = *( ALPHA / DIGIT / "-" ) Let-dig
    sub_domain = ir.seq(ALNUM, ir.opt(ir.seq(ir.star(_LDH), ALNUM)))
    domain = ir.seq(sub_domain, ir.star(ir.seq(ir.lit("."), sub_domain)))
    literal = ir.seq(ir.lit("["), ir.alt(IPV4, ir.seq(caseless("IPv6:"), ipv6(6))), ir.lit("]"))
    return ir.alt(domain, literal)


@lru_cache(maxsize=2)
def email(international: bool = False) -> ir.Node:
    """RFC 5321 ``Mailbox`` (RFC 6531 local parts when ``international``)."""
    return ir.seq(_local_part(international), ir.lit("@"), _smtp_domain())


@lru_cache(maxsize=1)
def uuid() -> ir.Node:
    """``8-4-4-4-12`` hexadecimal digits."""
    parts = [rep(HEXDIG, n) for n in (8, 4, 4, 4, 12)]
    out: list[ir.Node] = [parts[0]]
    for p in parts[1:]:
        out.extend([ir.lit("-"), p])
    return ir.seq(*out)


for _name, _built, _size in (
    ("ipv6", ipv6, 30_000),
    ("hostname_label", hostname_label, 4_000),
    ("hostname", hostname, 8_000),
    ("email", email, 30_000),
    ("uuid", uuid, 3_200),
):
    caches.register_lru(f"schema.format_net.{_name}", _built, bytes_per_entry=_size, estimate="measured (deep_bytes)")
