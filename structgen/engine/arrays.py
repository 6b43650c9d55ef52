"""Small numpy helpers shared by the engine's vectorised walks."""

from __future__ import annotations

import numpy as np


def mask_to_bools(mask: int) -> np.ndarray:
    """A 256-bit Python int as a bool array of the 256 bytes."""
    return np.unpackbits(np.frombuffer(mask.to_bytes(32, "little"), dtype=np.uint8), bitorder="little").astype(bool)


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + c)`` for each pair, without a Python loop."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(counts) - counts
    return np.repeat(starts - offsets, counts) + np.arange(total, dtype=np.int64)
