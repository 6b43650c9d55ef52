"""Languages of digit strings whose value lies in a range, as flat grammar nodes.

Numbers (decimal) and ``\\uXXXX`` escapes (hexadecimal) both need "the fixed-width digit strings
between ``lo`` and ``hi``". The construction is the usual one (shared prefix, then a low edge, a
middle block and a high edge), written as a *flat* choice of ``prefix [class] any{k}`` sequences,
so that the tree depth stays constant however many digits a bound has. Runs of trailing zeros
(low edge) and trailing top digits (high edge) fold into one alternative, so a bound such as
``10**300`` costs a handful of alternatives, not three hundred.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..grammar import ir

#: Builds the node for one digit position from the set of digit values it may take.
DigitNode = Callable[[int, int], ir.Node]


def decimal_digit(lo: int, hi: int) -> ir.Node:
    """The decimal digits ``lo..hi``."""
    if lo == hi:
        return ir.lit(str(lo))
    return ir.char((ord("0") + lo, ord("0") + hi))


def hex_digit(lo: int, hi: int) -> ir.Node:
    """The hexadecimal digits ``lo..hi``, letters in either case."""
    ranges: list[tuple[int, int]] = []
    if lo <= 9:
        ranges.append((ord("0") + lo, ord("0") + min(hi, 9)))
    if hi >= 10:
        a, b = max(lo, 10) - 10, hi - 10
        ranges.append((ord("a") + a, ord("a") + b))
        ranges.append((ord("A") + a, ord("A") + b))
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return ir.lit(chr(ranges[0][0]))
    return ir.char(*ranges)


def digits_of(value: int, width: int, base: int) -> list[int]:
    """``value`` as ``width`` digits in ``base``, most significant first."""
    out = [0] * width
    for i in range(width - 1, -1, -1):
        value, out[i] = divmod(value, base)
    if value:
        raise ValueError("value does not fit in the width")
    return out


def _prefix(digits: Sequence[int], digit: DigitNode) -> list[ir.Node]:
    return [digit(d, d) for d in digits]


def _any(count: int, base: int, digit: DigitNode) -> list[ir.Node]:
    return [ir.repeat(digit(0, base - 1), count, count)] if count else []


def at_least(digits: Sequence[int], base: int, digit: DigitNode) -> list[ir.Node]:
    """Alternatives for the strings of ``len(digits)`` digits whose value is >= ``digits``."""
    n = len(digits)
    last = max((i for i, d in enumerate(digits) if d), default=-1)
    if last < 0:
        return [ir.seq(*_any(n, base, digit))]
    alts: list[ir.Node] = []
    for i in range(last):
        if digits[i] < base - 1:
            alts.append(
                ir.seq(*_prefix(digits[:i], digit), digit(digits[i] + 1, base - 1), *_any(n - i - 1, base, digit))
            )
    # position `last` and everything after it: the suffix after `last` is all zeros
    alts.append(ir.seq(*_prefix(digits[:last], digit), digit(digits[last], base - 1), *_any(n - last - 1, base, digit)))
    return alts


def at_most(digits: Sequence[int], base: int, digit: DigitNode) -> list[ir.Node]:
    """Alternatives for the strings of ``len(digits)`` digits whose value is <= ``digits``."""
    n = len(digits)
    top = base - 1
    last = max((i for i, d in enumerate(digits) if d != top), default=-1)
    if last < 0:
        return [ir.seq(*_any(n, base, digit))]
    alts: list[ir.Node] = []
    for i in range(last):
        if digits[i] > 0:
            alts.append(ir.seq(*_prefix(digits[:i], digit), digit(0, digits[i] - 1), *_any(n - i - 1, base, digit)))
    alts.append(ir.seq(*_prefix(digits[:last], digit), digit(0, digits[last]), *_any(n - last - 1, base, digit)))
    return alts


def fixed_width_range(lo: Sequence[int], hi: Sequence[int], base: int, digit: DigitNode) -> ir.Node:
    """The strings of ``len(lo)`` digits whose value lies in ``lo..hi`` (``lo <= hi``, equal widths)."""
    if len(lo) != len(hi):
        raise ValueError("bounds of different widths")
    n = len(lo)
    j = 0
    while j < n and lo[j] == hi[j]:
        j += 1
    head = _prefix(lo[:j], digit)
    if j == n:
        return ir.seq(*head)
    x, y = lo[j], hi[j]
    rest_lo, rest_hi = lo[j + 1 :], hi[j + 1 :]
    low_full = all(d == 0 for d in rest_lo)
    high_full = all(d == base - 1 for d in rest_hi)
    alts: list[ir.Node] = []
    if not low_full:
        alts.extend(ir.seq(digit(x, x), a) for a in at_least(rest_lo, base, digit))
    mid_lo = x if low_full else x + 1
    mid_hi = y if high_full else y - 1
    if mid_lo <= mid_hi:
        alts.append(ir.seq(digit(mid_lo, mid_hi), *_any(n - j - 1, base, digit)))
    if not high_full:
        alts.extend(ir.seq(digit(y, y), a) for a in at_most(rest_hi, base, digit))
    return ir.seq(*head, ir.alt(*alts))


def int_range_fixed(lo: int, hi: int, width: int, base: int, digit: DigitNode) -> ir.Node:
    """Strings of exactly ``width`` digits (leading zeros included) whose value is in ``lo..hi``."""
    return fixed_width_range(digits_of(lo, width, base), digits_of(hi, width, base), base, digit)


def natural_range(lo: int, hi: int | None) -> ir.Node:
    """Canonical decimal naturals (no leading zeros; ``0`` is ``"0"``) in ``lo..hi`` (``hi`` None: no bound).

    ``lo <= hi`` is the caller's check; the result is :data:`ir.NOTHING` when the range is empty.
    """
    if hi is not None and lo > hi:
        return ir.NOTHING
    alts: list[ir.Node] = []
    if lo == 0:
        alts.append(ir.lit("0"))
        lo = 1
        if hi == 0:
            return alts[0]
    la = len(str(lo))
    nonzero = decimal_digit(1, 9)
    any_digit = decimal_digit(0, 9)
    if hi is None:
        alts.append(_width_range(lo, 10**la - 1, la))
        alts.append(ir.seq(nonzero, ir.repeat(any_digit, la, None)))
        return ir.alt(*alts)
    lb = len(str(hi))
    if la == lb:
        alts.append(_width_range(lo, hi, la))
    else:
        alts.append(_width_range(lo, 10**la - 1, la))
        if lb - la >= 2:
            alts.append(ir.seq(nonzero, ir.repeat(any_digit, la, lb - 2)))
        alts.append(_width_range(10 ** (lb - 1), hi, lb))
    return ir.alt(*alts)


def _width_range(lo: int, hi: int, width: int) -> ir.Node:
    return fixed_width_range(
        [int(c) for c in str(lo).zfill(width)], [int(c) for c in str(hi).zfill(width)], 10, decimal_digit
    )
