"""UTF-8 at the byte level: a set of code points as sequences of byte ranges.

A character class over code points becomes, for byte-level matching, a choice of byte-range
sequences: ``[a-z\u00e9]`` is ``[61-7A] | [C3][A9]``. :func:`utf8_sequences` computes the fewest
such sequences for a code point range, so that each sequence is a plain product of byte ranges
(every byte between ``lo`` and ``hi`` at each position is valid).
"""

from __future__ import annotations

from functools import lru_cache

from .. import caches
from .ir import Ranges

ByteRangeSeq = tuple[tuple[int, int], ...]

_LENGTH_LIMITS = (0x7F, 0x7FF, 0xFFFF, 0x10FFFF)


def _encode(cp: int) -> bytes:
    # surrogates have no UTF-8 encoding in Python's codec, but range splitting may touch their
    # boundaries; "surrogatepass" gives the byte pattern the arithmetic needs.
    return chr(cp).encode("utf-8", "surrogatepass")


def utf8_sequences(lo: int, hi: int) -> list[ByteRangeSeq]:
    """Byte-range sequences matching exactly the UTF-8 encodings of code points ``lo..hi``.

    The caller removes surrogates first (they are not encodable).
    """
    out: list[ByteRangeSeq] = []
    todo = [(lo, hi)]
    while todo:
        a, b = todo.pop()
        # 1. never mix encodings of different lengths
        split = False
        for limit in _LENGTH_LIMITS[:-1]:
            if a <= limit < b:
                todo.append((limit + 1, b))
                todo.append((a, limit))
                split = True
                break
        if split:
            continue
        if b <= 0x7F:
            out.append(((a, b),))
            continue
        # 2. split until every continuation position spans whole or matching sub-ranges
        n = len(_encode(a))
        for i in range(1, n):
            m = (1 << (6 * i)) - 1
            if (a & ~m) != (b & ~m):
                if a & m:
                    todo.append(((a | m) + 1, b))
                    todo.append((a, a | m))
                    split = True
                    break
                if (b & m) != m:
                    todo.append((b & ~m, b))
                    todo.append((a, (b & ~m) - 1))
                    split = True
                    break
        if split:
            continue
        ea, eb = _encode(a), _encode(b)
        out.append(tuple((x, y) for x, y in zip(ea, eb)))
    out.sort()
    return out


@lru_cache(maxsize=4096)
def class_sequences(codepoint_ranges: Ranges) -> tuple[ByteRangeSeq, ...]:
    """All byte-range sequences for normalised, surrogate-free code point ranges."""
    seqs: list[ByteRangeSeq] = []
    for lo, hi in codepoint_ranges:
        seqs.extend(utf8_sequences(lo, hi))
    return tuple(seqs)


def mask_of(lo: int, hi: int) -> int:
    """A 256-bit set of bytes as a Python int: bit ``b`` set for ``lo <= b <= hi``."""
    return ((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)


def mask_of_ranges(ranges: Ranges) -> int:
    m = 0
    for lo, hi in ranges:
        m |= mask_of(lo, hi)
    return m


caches.register_lru(
    "grammar.utf8.class_sequences",
    class_sequences,
    bytes_per_entry=400,
    estimate="measured (deep_bytes): 0.2-2 KB per class",
)
