"""``multipleOf`` as automata over plain decimal texts.

A multiple ``q = c * 10**e`` (``c`` an integer not divisible by 10) turns into a condition on the
integer ``N = |value| * 10**s`` with ``s = max(0, -e)``: ``N`` must be whole (no non-zero
fraction digit past the ``s``-th) and divisible by ``M = c * 10**max(e, 0)``. Reading a decimal
text left to right, ``N mod M`` is a finite state, so the language is regular; its automaton has
about ``M * (s + 3)`` states, which :data:`MAX_MULTIPLE_STATES` bounds.

When ``M`` is 1 (``q`` a power of ten: ``0.01``, ``1``, ``100``) the language is a plain
expression (:func:`power_of_ten_texts`), which needs no automaton.
"""

from __future__ import annotations

from decimal import Decimal

from ..grammar import ir
from ..grammar.cp_automata import DFA
from .charsets import DIGIT, cc

#: Most automaton states one ``multipleOf`` may need before it is refused.
MAX_MULTIPLE_STATES = 20_000

_DIGIT_RANGE = (ord("0"), ord("9"))


def decompose(q: Decimal) -> tuple[int, int]:
    """``(c, e)`` with ``q == c * 10**e`` and ``c`` not divisible by 10 (``q > 0``)."""
    _sign, digits, exponent = q.normalize().as_tuple()
    c = int("".join(map(str, digits)))
    e = int(exponent)
    while c % 10 == 0:
        c //= 10
        e += 1
    return c, e


def power_of_ten_texts(e: int, *, integer_only: bool, zero_fraction_allowed: bool = True) -> ir.Node:
    """Plain decimal texts (any sign) whose value is a multiple of ``10**e``; with
    ``zero_fraction_allowed`` false (draft-04 integers), whole texts without a fraction only."""
    zero_fraction = ir.opt(ir.seq(ir.lit("."), ir.plus(ir.lit("0")))) if zero_fraction_allowed else ir.EMPTY
    if e > 0:
        whole = ir.alt(ir.lit("0"), ir.seq(cc(("1", "9")), ir.star(DIGIT), ir.lit("0" * e)))
        return ir.seq(ir.opt(ir.lit("-")), whole, zero_fraction)
    whole = ir.alt(ir.lit("0"), ir.seq(cc(("1", "9")), ir.star(DIGIT)))
    if integer_only or e == 0:
        fraction = zero_fraction
    else:
        fraction = ir.opt(ir.seq(ir.lit("."), ir.repeat(DIGIT, 1, -e), ir.star(ir.lit("0"))))
    return ir.seq(ir.opt(ir.lit("-")), whole, fraction)


def multiple_states(modulus: int, scale: int) -> int:
    """States :func:`multiple_dfa` builds for these parameters."""
    return modulus * (scale + 3) + 3


def multiple_dfa(modulus: int, scale: int) -> DFA:
    """Plain decimal texts ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?`` with ``|value| * 10**scale`` a whole
    multiple of ``modulus``."""
    d = DFA()
    index: dict[tuple, int] = {}

    def accepting(key: tuple) -> bool:
        kind = key[0]
        if kind in ("int", "zero"):
            return key[1] * pow(10, scale, modulus) % modulus == 0
        if kind == "frac":
            _, r, k = key
            return r * pow(10, scale - k, modulus) % modulus == 0
        return False  # start, minus, dot (a point needs a digit after it)

    order: list[tuple] = []

    def state(key: tuple) -> int:
        i = index.get(key)
        if i is None:
            i = d.add_state(accepting(key))
            index[key] = i
            order.append(key)
        return i

    d.start = state(("start",))
    pos = 0
    while pos < len(order):
        key = order[pos]
        src = index[key]
        pos += 1
        kind = key[0]
        trans: list[tuple[int, int, int]] = []
        if kind in ("start", "minus"):
            if kind == "start":
                trans.append((ord("-"), ord("-"), state(("minus",))))
            trans.append((ord("0"), ord("0"), state(("zero", 0))))
            for digit in range(1, 10):
                trans.append((ord("0") + digit, ord("0") + digit, state(("int", digit % modulus))))
        elif kind in ("int", "zero"):
            r = key[1]
            if kind == "int":
                for digit in range(10):
                    trans.append((ord("0") + digit, ord("0") + digit, state(("int", (r * 10 + digit) % modulus))))
            trans.append((ord("."), ord("."), state(("dot", r))))
        elif kind in ("dot", "frac"):
            r = key[1]
            k = 0 if kind == "dot" else key[2]
            if k < scale:
                for digit in range(10):
                    trans.append(
                        (ord("0") + digit, ord("0") + digit, state(("frac", (r * 10 + digit) % modulus, k + 1)))
                    )
            else:
                trans.append((ord("0"), ord("0"), state(("frac", r, k))))
        trans.sort()
        d.transitions[src] = _join(trans)
    return d


def _join(trans: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    out: list[tuple[int, int, int]] = []
    for lo, hi, t in trans:
        if out and out[-1][2] == t and out[-1][1] + 1 == lo:
            out[-1] = (out[-1][0], hi, t)
        else:
            out.append((lo, hi, t))
    return out
