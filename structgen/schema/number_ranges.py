"""Exact languages of JSON number texts whose value lies between two decimal bounds.

Values are compared as exact decimals, digit by digit, never as floats. A bound is a pair
``(value, strict)``: ``strict`` excludes the value itself (``exclusiveMinimum``).

Which texts a bounded language contains (the rest of JSON's number syntax is a documented
departure, see :mod:`.numbers`):

* plain decimals ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?``, trailing zeros in the fraction included;
* normalised scientific notation ``-?[1-9](\\.[0-9]+)?[eE][+-]?[0-9]+`` (what Python's ``repr``
  and JavaScript write for large and small floats): with one non-zero digit before the point the
  exponent alone orders values, so bounds stay a regular condition;
* every spelling of zero, ``-?0(\\.0+)?([eE][+-]?[0-9]+)?``;
* on a side of zero with no bound at all (``minimum: 0`` and no maximum, say), every JSON spelling.

All constructions are flat choices of ``prefix [class] [0-9]*`` sequences, so their size grows
with the number of digits of the bounds, never with their magnitude.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from ..grammar import ir
from .charsets import DIGIT, cc
from .digit_ranges import natural_range

Bound = tuple[Decimal, bool]

_NONZERO = cc(("1", "9"))
_ANY_DIGITS = ir.star(DIGIT)
_SOME_DIGITS = ir.plus(DIGIT)
_ZEROS = ir.star(ir.lit("0"))
_FRACTION_ANY = ir.opt(ir.seq(ir.lit("."), _SOME_DIGITS))
EXPONENT_ANY = ir.seq(cc("eE"), ir.opt(cc("+-")), _SOME_DIGITS)

#: Every JSON spelling of zero.
ZERO_ANY = ir.seq(
    ir.opt(ir.lit("-")), ir.lit("0"), ir.opt(ir.seq(ir.lit("."), ir.plus(ir.lit("0")))), ir.opt(EXPONENT_ANY)
)
#: Every JSON spelling of a positive number (no sign).
POSITIVE_ANY = ir.seq(
    ir.alt(
        ir.seq(_NONZERO, _ANY_DIGITS, _FRACTION_ANY),
        ir.seq(ir.lit("0."), _ZEROS, _NONZERO, _ANY_DIGITS),
    ),
    ir.opt(EXPONENT_ANY),
)


def _digit_range(lo: int, hi: int) -> ir.Node:
    return ir.lit(str(lo)) if lo == hi else cc((str(lo), str(hi)))


@dataclass
class _Fraction:
    """A set of fraction digit strings: ``alts`` (non-empty strings) and whether ``""`` is in it."""

    alts: list[ir.Node] = field(default_factory=list)
    empty: bool = False

    def text(self) -> ir.Node:
        """The fraction as written: nothing for ``""``, else ``.`` and the digits."""
        parts: list[ir.Node] = [ir.EMPTY] if self.empty else []
        if self.alts:
            parts.append(ir.seq(ir.lit("."), ir.alt(*self.alts)))
        return ir.alt(*parts) if parts else ir.NOTHING

    def after(self, prefix: str) -> ir.Node:
        """``prefix`` followed by this set (for a non-empty prefix)."""
        tails: list[ir.Node] = [ir.EMPTY] if self.empty else []
        tails.extend(self.alts)
        return ir.seq(ir.lit(prefix), ir.alt(*tails)) if tails else ir.NOTHING


def _frac_ge(d: str, strict: bool) -> _Fraction:
    """Fractions ``F`` with ``0.F >= 0.d`` (``> `` if strict); ``d`` has no trailing zeros."""
    if not d:
        if strict:
            return _Fraction([ir.seq(_ZEROS, _NONZERO, _ANY_DIGITS)])
        return _Fraction([_SOME_DIGITS], True)
    alts = [ir.seq(ir.lit(d[:i]), _digit_range(int(d[i]) + 1, 9), _ANY_DIGITS) for i in range(len(d)) if d[i] != "9"]
    alts.append(ir.seq(ir.lit(d), _ZEROS, _NONZERO, _ANY_DIGITS) if strict else ir.seq(ir.lit(d), _ANY_DIGITS))
    return _Fraction(alts)


def _frac_le(d: str, strict: bool) -> _Fraction:
    """Fractions ``F`` with ``0.F <= 0.d`` (``<`` if strict); ``d`` has no trailing zeros."""
    if not d:
        return _Fraction() if strict else _Fraction([ir.plus(ir.lit("0"))], True)
    alts: list[ir.Node] = []
    for i in range(len(d)):
        if i:
            alts.append(ir.lit(d[:i]))  # a proper prefix: smaller, since d ends in a non-zero digit
        if d[i] != "0":
            alts.append(ir.seq(ir.lit(d[:i]), _digit_range(0, int(d[i]) - 1), _ANY_DIGITS))
    if not strict:
        alts.append(ir.seq(ir.lit(d), _ZEROS))
    return _Fraction(alts, True)


def _frac_between(d1: str, s1: bool, d2: str, s2: bool) -> _Fraction:
    """Fractions between ``0.d1`` and ``0.d2`` (``0.d1 <= 0.d2``), with the given strictness."""
    if d1 == d2:
        if s1 or s2:
            return _Fraction()
        return _Fraction([ir.plus(ir.lit("0"))], True) if not d1 else _Fraction([ir.seq(ir.lit(d1), _ZEROS)])
    n = max(len(d1), len(d2))
    p1, p2 = d1.ljust(n, "0"), d2.ljust(n, "0")
    j = next(i for i in range(n) if p1[i] != p2[i])
    low, high = Decimal("0." + (d1 or "0")), Decimal("0." + d2)

    def inside(f: str) -> bool:
        v = Decimal("0." + (f or "0"))
        return (v > low if s1 else v >= low) and (v < high if s2 else v <= high)

    out = _Fraction(empty=inside(""))
    # F ends inside the shared prefix
    out.alts.extend(ir.lit(p2[:i]) for i in range(1, j + 1) if inside(p2[:i]))
    x, y = int(p1[j]), int(p2[j])
    out.alts.append(_frac_ge(p1[j + 1 :].rstrip("0"), s1).after(p2[:j] + str(x)))
    if x + 1 <= y - 1:
        out.alts.append(ir.seq(ir.lit(p2[:j]), _digit_range(x + 1, y - 1), _ANY_DIGITS))
    out.alts.append(_frac_le(p2[j + 1 :].rstrip("0"), s2).after(p2[:j] + str(y)))
    out.alts = [a for a in out.alts if a != ir.NOTHING]
    return out


def split_decimal(value: Decimal) -> tuple[int, str]:
    """A non-negative decimal as (integer part, fraction digits without trailing zeros)."""
    text = format(value, "f")
    whole, _, frac = text.partition(".")
    return int(whole), frac.rstrip("0")


def plain_magnitude(lower: Bound, upper: Bound | None) -> ir.Node:
    """Unsigned plain decimals ``(0|[1-9][0-9]*)(\\.[0-9]+)?`` between ``lower`` (>= 0) and ``upper``."""
    a, sa = lower
    ai, af = split_decimal(a)
    if upper is None:
        return ir.alt(
            _whole_and_fraction(ai, _frac_ge(af, sa)),
            ir.seq(natural_range(ai + 1, None), _FRACTION_ANY),
        )
    b, sb = upper
    if a > b or (a == b and (sa or sb)):
        return ir.NOTHING
    bi, bf = split_decimal(b)
    if ai == bi:
        return _whole_and_fraction(ai, _frac_between(af, sa, bf, sb))
    parts = [_whole_and_fraction(ai, _frac_ge(af, sa))]
    if ai + 1 <= bi - 1:
        parts.append(ir.seq(natural_range(ai + 1, bi - 1), _FRACTION_ANY))
    parts.append(_whole_and_fraction(bi, _frac_le(bf, sb)))
    return ir.alt(*parts)


def _whole_and_fraction(whole: int, fraction: _Fraction) -> ir.Node:
    return ir.seq(ir.lit(str(whole)), fraction.text())


def normalized(value: Decimal) -> tuple[Decimal, int]:
    """A positive decimal as ``(m, e)`` with ``value == m * 10**e`` and ``1 <= m < 10``."""
    e = value.adjusted()
    return value.scaleb(-e), e


def signed_integer_text(lo: int | None, hi: int | None) -> ir.Node:
    """Exponent texts ``[+-]?[0-9]+`` (leading zeros allowed) whose value is in ``lo..hi``."""
    parts: list[ir.Node] = []
    nonneg_lo = 0 if lo is None else max(lo, 0)
    if hi is None or hi >= nonneg_lo:
        parts.append(ir.seq(ir.opt(ir.lit("+")), _ZEROS, natural_range(nonneg_lo, hi)))
    mag_lo = 1 if hi is None else max(1, -hi)
    mag_hi = None if lo is None else -lo
    if mag_hi is None or mag_lo <= mag_hi:
        parts.append(ir.seq(ir.lit("-"), _ZEROS, natural_range(mag_lo, mag_hi)))
    if (lo is None or lo <= 0) and (hi is None or hi >= 0):
        parts.append(ir.seq(ir.lit("-"), ir.plus(ir.lit("0"))))
    return ir.alt(*parts)


_ONE: Bound = (Decimal(1), False)
_TEN: Bound = (Decimal(10), True)
_ANY_MANTISSA = ir.seq(_NONZERO, _FRACTION_ANY)


def _scientific(mantissa: ir.Node, lo: int | None, hi: int | None) -> ir.Node:
    if mantissa == ir.NOTHING or (lo is not None and hi is not None and lo > hi):
        return ir.NOTHING
    return ir.seq(mantissa, cc("eE"), signed_integer_text(lo, hi))


def scientific_magnitude(lower: Bound, upper: Bound | None) -> ir.Node:
    """Unsigned normalised scientific texts ``[1-9](\\.[0-9]+)?[eE][+-]?[0-9]+`` between the bounds."""
    a, sa = lower
    if upper is None:
        if a == 0:
            return _scientific(_ANY_MANTISSA, None, None)
        ma, ea = normalized(a)
        return ir.alt(
            _scientific(_ANY_MANTISSA, ea + 1, None),
            _scientific(plain_magnitude((ma, sa), _TEN), ea, ea),
        )
    b, sb = upper
    if b == 0 or a > b or (a == b and (sa or sb)):
        return ir.NOTHING
    mb, eb = normalized(b)
    if a == 0:
        return ir.alt(
            _scientific(_ANY_MANTISSA, None, eb - 1),
            _scientific(plain_magnitude(_ONE, (mb, sb)), eb, eb),
        )
    ma, ea = normalized(a)
    if ea == eb:
        return _scientific(plain_magnitude((ma, sa), (mb, sb)), ea, ea)
    return ir.alt(
        _scientific(plain_magnitude((ma, sa), _TEN), ea, ea),
        _scientific(_ANY_MANTISSA, ea + 1, eb - 1),
        _scientific(plain_magnitude(_ONE, (mb, sb)), eb, eb),
    )


def _satisfies(value: Decimal, lower: Bound | None, upper: Bound | None) -> bool:
    if lower is not None and (value <= lower[0] if lower[1] else value < lower[0]):
        return False
    if upper is not None and (value >= upper[0] if upper[1] else value > upper[0]):
        return False
    return True


def number_in_range(lower: Bound | None, upper: Bound | None, *, plain_only: bool = False) -> ir.Node:
    """JSON number texts whose value lies between ``lower`` and ``upper`` (either may be None).

    ``plain_only`` keeps plain decimals only (and zero without exponent): for combining with
    automata that read plain decimals (``multipleOf``).
    """
    parts: list[ir.Node] = []
    positive_floor: Bound = (Decimal(0), True)

    def magnitudes(lo: Bound, hi: Bound | None) -> ir.Node:
        if plain_only:
            return plain_magnitude(lo, hi)
        if lo == positive_floor and hi is None:
            return POSITIVE_ANY
        return ir.alt(plain_magnitude(lo, hi), scientific_magnitude(lo, hi))

    if upper is None or upper[0] > 0:
        lo = lower if lower is not None and lower[0] > 0 else positive_floor
        parts.append(magnitudes(lo, upper))
    if lower is None or lower[0] < 0:
        lo = (-upper[0], upper[1]) if upper is not None and upper[0] < 0 else positive_floor
        hi = None if lower is None else (-lower[0], lower[1])
        parts.append(ir.seq(ir.lit("-"), magnitudes(lo, hi)))
    if _satisfies(Decimal(0), lower, upper):
        if plain_only:
            parts.append(ir.seq(ir.opt(ir.lit("-")), ir.lit("0"), ir.opt(ir.seq(ir.lit("."), ir.plus(ir.lit("0"))))))
        else:
            parts.append(ZERO_ANY)
    return ir.alt(*parts)


def integer_in_range(lo: int | None, hi: int | None, *, zero_fraction: bool = True) -> ir.Node:
    """Integer texts ``-?(0|[1-9][0-9]*)`` with an optional zero fraction ``.0+`` (unless
    ``zero_fraction`` is false: draft-04 counts ``1.0`` as no integer), value in ``lo..hi``."""
    if lo is not None and hi is not None and lo > hi:
        return ir.NOTHING
    parts: list[ir.Node] = []
    nonneg_lo = 0 if lo is None else max(lo, 0)
    if hi is None or hi >= nonneg_lo:
        parts.append(natural_range(nonneg_lo, hi))
    mag_lo = 1 if hi is None else max(1, -hi)
    mag_hi = None if lo is None else -lo
    if mag_hi is None or mag_lo <= mag_hi:
        parts.append(ir.seq(ir.lit("-"), natural_range(mag_lo, mag_hi)))
    if (lo is None or lo <= 0) and (hi is None or hi >= 0):
        parts.append(ir.lit("-0"))
    if not zero_fraction:
        return ir.alt(*parts)
    return ir.seq(ir.alt(*parts), ir.opt(ir.seq(ir.lit("."), ir.plus(ir.lit("0")))))
