"""Packed masks held once per distinct content: a constraint's caches share equal masks.

Many configurations have bit-identical masks (every position inside a string body of one
character class, every count a token cannot tell apart, a relative part whose crossings add no
token), and each cache of a constraint (whole masks, counted masks, relative parts, position
masks) would otherwise hold its own 16 KB copy per key on a 128k vocabulary. A
:class:`MaskPool` interns packed masks: an equal mask already held is returned instead of the new
one (found by a CRC-32 of its bytes, kept only after a comparison of every word, so that a
collision can never hand out a wrong mask), and each held mask counts the keys that refer to it,
so that a mask no cache refers to any more is let go. :class:`SharedMasks` is a dict whose values
are interned on the way in and released on the way out, so a cache keeps its plain dict reads
(``get``, ``in``, iteration at C speed) and its own bound on entries. ``MaskPool.nbytes`` counts
each distinct mask once: what ``Constraint.memory_bytes`` charges for them.

Invariant: a value read back is equal, word for word and in dtype and shape, to the value stored
under that key; only which array object holds those words is shared. Held masks are read-only.
"""

from __future__ import annotations

import zlib
from typing import Any, Callable, Iterable

import numpy as np

#: bytes one cache entry costs beside its mask (a dict slot, the key, a tuple where the value is
#: one): what ``Constraint.memory_bytes`` charges per entry
MASK_ENTRY_BYTES = 96


class MaskPool:
    """Distinct packed masks, each held once, with the number of references to it."""

    def __init__(self, checksum: Callable[[memoryview], int] = zlib.crc32) -> None:
        #: what finds the held masks a new one may equal (a test passes a constant one, so that
        #: every mask collides and the comparison alone tells them apart)
        self._checksum = checksum
        #: checksum of a mask's bytes -> the held masks with that checksum. Tuples and ints, not
        #: lists: the collector stops tracking them, where two lists per distinct mask made
        #: every full collection longer (tests/test_engine_gc.py)
        self._by_crc: dict[int, tuple[np.ndarray, ...]] = {}
        #: id of a held mask -> (references to it, its checksum) (the pool holds it, so the id
        #: is not reused while it is held)
        self._held: dict[int, tuple[int, int]] = {}
        #: bytes of the distinct masks held
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self._held)

    def intern(self, words: np.ndarray) -> np.ndarray:
        """The held mask equal to ``words`` (one more reference to it), or ``words`` itself,
        held from now on (read-only; a writable one is copied first, so that its owner writing
        it later cannot change a mask another key shares)."""
        held_ = self._held
        entry = held_.get(id(words))
        if entry is not None:  # already the held one (a twin's mask, a part shared as it is)
            held_[id(words)] = (entry[0] + 1, entry[1])
            return words
        crc = self._checksum(np.ascontiguousarray(words).data)
        same = self._by_crc.get(crc, ())
        for held in same:
            if held.dtype == words.dtype and held.shape == words.shape and np.array_equal(held, words):
                count, _ = held_[id(held)]
                held_[id(held)] = (count + 1, crc)
                return held
        if words.flags.writeable:
            words = words.copy()
            words.flags.writeable = False
        self._by_crc[crc] = same + (words,)
        held_[id(words)] = (1, crc)
        self.nbytes += words.nbytes
        return words

    def release(self, words: np.ndarray) -> None:
        """One reference less to the held mask ``words``; let go of it at none."""
        count, crc = self._held[id(words)]
        if count > 1:
            self._held[id(words)] = (count - 1, crc)
            return
        del self._held[id(words)]
        rest = tuple(held for held in self._by_crc[crc] if held is not words)  # by identity, not by value
        if rest:
            self._by_crc[crc] = rest
        else:
            del self._by_crc[crc]
        self.nbytes -= words.nbytes

    def holds(self, words: np.ndarray) -> bool:
        """Whether ``words`` is a mask this pool holds (the object, not an equal one)."""
        return id(words) in self._held


class SharedMasks(dict):  # type: ignore[type-arg]
    """A dict whose values are packed masks, or tuples whose first item is one (a relative
    part: its mask and its exits), interned in ``pool`` as they are stored and released as they
    are removed. Reads are the plain dict's."""

    def __init__(self, pool: MaskPool, items: Iterable[tuple[Any, Any]] = ()) -> None:
        super().__init__()
        self.pool = pool
        self.update(items)

    def _intern(self, value: Any) -> Any:
        if isinstance(value, tuple):
            return (self.pool.intern(value[0]),) + value[1:]
        return self.pool.intern(value)

    def _release(self, value: Any) -> None:
        self.pool.release(value[0] if isinstance(value, tuple) else value)

    def __setitem__(self, key: Any, value: Any) -> None:
        value = self._intern(value)
        old = super().get(key, _MISSING)
        super().__setitem__(key, value)
        if old is not _MISSING:
            self._release(old)

    def __delitem__(self, key: Any) -> None:
        value = super().pop(key)
        self._release(value)

    def pop(self, key: Any, *default: Any) -> Any:
        value = super().pop(key, _MISSING)
        if value is _MISSING:
            if default:
                return default[0]
            raise KeyError(key)
        self._release(value)
        return value

    def popitem(self) -> tuple[Any, Any]:
        key, value = super().popitem()
        self._release(value)
        return key, value

    def clear(self) -> None:
        for value in self.values():
            self._release(value)
        super().clear()

    def setdefault(self, key: Any, value: Any = None) -> Any:
        if key not in self:
            self[key] = value
        return self[key]

    def update(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other: Any) -> SharedMasks:  # type: ignore[override,misc]
        self.update(other)
        return self


#: a value no dict holds (None may be one)
_MISSING = object()
