"""Formats ``date``, ``time``, ``date-time`` (RFC 3339 section 5.6) and ``duration`` (RFC 3339 appendix A).

Calendar rules are exact: month lengths, February 29 only in leap years of the Gregorian rule
(divisible by 4, except centuries not divisible by 400; the year 0000 is a leap year), years
0000-9999 written with four digits.

Leap seconds: second ``60`` is accepted exactly when the time, shifted to UTC by its offset, is
23:59 (RFC 3339 section 5.7 and the JSON-Schema-Test-Suite: ``23:59:60Z``, ``15:59:60-08:00``,
``01:29:60+01:30``). The offset ``-00:00`` counts as UTC. The date is not consulted (leap seconds
are not restricted to the days IERS actually used).

``T`` / ``Z`` may be written in either case (RFC 3339 section 5.6, note). Durations use
upper-case designators only (``P1D``; ``p1d`` is refused: the ABNF reading would allow it, other
validators do not, and the safe side is to reject).
"""

from __future__ import annotations

from functools import lru_cache

from .. import caches
from ..grammar import ir
from .charsets import DIGIT, cc, lits, rep, rep_open, two_digits

_YEAR = rep(DIGIT, 4)
# two-digit values divisible by 4: with and without 00
_MULT4_NONZERO = ir.alt(ir.seq(ir.lit("0"), cc("48")), ir.seq(cc("2468"), cc("048")), ir.seq(cc("13579"), cc("26")))
_MULT4 = ir.alt(ir.seq(ir.lit("0"), cc("048")), ir.seq(cc("2468"), cc("048")), ir.seq(cc("13579"), cc("26")))
#: Four-digit Gregorian leap years: YY divisible by 4 (YY != 00), or CC00 with CC divisible by 4.
LEAP_YEAR = ir.alt(ir.seq(DIGIT, DIGIT, _MULT4_NONZERO), ir.seq(_MULT4, ir.lit("00")))


@lru_cache(maxsize=1)
def full_date() -> ir.Node:
    """``YYYY-MM-DD`` with real month lengths."""
    month_days = ir.alt(
        ir.seq(lits("01", "03", "05", "07", "08", "10", "12"), ir.lit("-"), two_digits(1, 31)),
        ir.seq(lits("04", "06", "09", "11"), ir.lit("-"), two_digits(1, 30)),
        ir.seq(ir.lit("02-"), two_digits(1, 28)),
    )
    return ir.alt(ir.seq(_YEAR, ir.lit("-"), month_days), ir.seq(LEAP_YEAR, ir.lit("-02-29")))


_FRACTION = ir.opt(ir.seq(ir.lit("."), rep_open(DIGIT, 1)))
_HOUR = two_digits(0, 23)
_MINUTE = two_digits(0, 59)
_NUM_OFFSET = ir.seq(cc("+-"), _HOUR, ir.lit(":"), _MINUTE)
_OFFSET = ir.alt(cc("Zz"), _NUM_OFFSET)


@lru_cache(maxsize=1)
def full_time() -> ir.Node:
    """``HH:MM:SS[.frac]`` and an offset, with the leap-second rule."""
    ordinary = ir.seq(_HOUR, ir.lit(":"), _MINUTE, ir.lit(":"), two_digits(0, 59), _FRACTION, _OFFSET)
    return ir.alt(ordinary, leap_second_times())


def leap_second_times() -> ir.Node:
    """``HH:MM:60[.frac]`` with an offset that puts HH:MM at 23:59 UTC.

    For a local time ``HH:MM`` the offsets are ``+`` (local - 23:59) and ``-`` (23:59 - local),
    modulo 24 hours, and ``Z`` at 23:59. Each of the 1,440 local times has its own pair of
    offsets; the alternatives are nested by hour so each level stays small.
    """
    # Built with the plain constructors, in the form ir.seq / ir.alt would give (no nested
    # sequences, adjacent literals or duplicate alternatives), and with the minute literals shared
    # by all hours: this is the largest format grammar, built on first use in every process.
    # Each hour is marked closed with the facts its shape gives (the walk that would find them
    # costs about 10 ms on first use, as much again as building the nodes).
    minute_60 = [ir.lit(f"{mm:02d}:60") for mm in range(60)]
    utc = cc("Zz")
    fraction = ir.facts_of(_FRACTION)
    # an hour: Seq("HH:", Alt(minutes)); a minute: Seq("MM:60", fraction, Alt(offsets of literals))
    minute_depth = 1 + max(1, fraction.depth, 2)
    by_hour: list[ir.Node] = []
    for hh in range(24):
        by_minute: list[ir.Node] = []
        for mm in range(60):
            local = hh * 60 + mm
            offsets: tuple[ir.Node, ...] = (
                ir.Literal(("+" + _hm((local - 1439) % 1440)).encode()),
                ir.Literal(("-" + _hm((1439 - local) % 1440)).encode()),
            )
            if local == 1439:
                offsets += (utc,)
            by_minute.append(ir.Seq((minute_60[mm], _FRACTION, ir.Alt(offsets))))
        hour = ir.Seq((ir.lit(f"{hh:02d}:"), ir.Alt(tuple(by_minute))))
        shortest = None if fraction.shortest is None else 3 + 5 + fraction.shortest + (1 if hh == 23 else 6)
        ir.declare_closed(hour, ir.ClosedFacts(2 + minute_depth, False, shortest, False, False))
        by_hour.append(hour)
    return ir.Alt(tuple(by_hour))


def _hm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


@lru_cache(maxsize=1)
def date_time() -> ir.Node:
    """``full-date "T" full-time``."""
    return ir.seq(full_date(), cc("Tt"), full_time())


@lru_cache(maxsize=1)
def duration() -> ir.Node:
    """ISO 8601 durations as RFC 3339 appendix A writes them (integers only, no sign)."""
    num = rep_open(DIGIT, 1)

    def unit(letter: str) -> ir.Node:
        return ir.seq(num, ir.lit(letter))

    second = unit("S")
    minute = ir.seq(unit("M"), ir.opt(second))
    hour = ir.seq(unit("H"), ir.opt(minute))
    time = ir.seq(ir.lit("T"), ir.alt(hour, minute, second))
    day = unit("D")
    month = ir.seq(unit("M"), ir.opt(day))
    year = ir.seq(unit("Y"), ir.opt(month))
    date = ir.seq(ir.alt(day, month, year), ir.opt(time))
    week = unit("W")
    return ir.seq(ir.lit("P"), ir.alt(date, time, week))


for _name, _built, _size in (
    ("full_date", full_date, 21_000),
    ("full_time", full_time, 1_370_000),
    ("date_time", date_time, 1_390_000),
    ("duration", duration, 7_000),
):
    caches.register_lru(
        f"schema.format_datetime.{_name}", _built, bytes_per_entry=_size, estimate="measured (deep_bytes)"
    )
