"""Packed token bitmasks: the layout shared with xgrammar, llguidance and glrmask, and helpers to
apply a mask to logits.

A mask for a logit width ``W`` is ``ceil(W / 32)`` int32 words; bit ``i % 32`` of word ``i // 32``
is token ``i``. Bits past the tokenizer's last token (logit padding) are always 0.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np


def words_for(width: int) -> int:
    return (width + 31) // 32


def allocate_bitmask(batch: int, width: int) -> np.ndarray:
    """A zeroed ``(batch, words)`` int32 bitmask array for ``width`` logits."""
    return np.zeros((batch, words_for(width)), dtype=np.int32)


#: Up to this many ids, :func:`pack_ids` sets their bits word by word instead of packing a
#: bool array of the whole width (a narrow mask then costs what its few ids cost).
SPARSE_PACK = 256


#: Up to this many ids, their bits are set in Python: ``np.bitwise_or.at`` costs 5-9 µs however
#: few ids it sets, a Python loop about 0.3 µs per id (the masks of literals and choices).
TINY_PACK = 8


def _or_ids_python(words: np.ndarray, ids: np.ndarray) -> None:
    for i in ids.tolist():
        words[i >> 5] |= 1 << (i & 31)


#: On a little-endian machine bit ``i % 32`` of int32 word ``i // 32`` is bit ``i % 8`` of byte
#: ``i // 8``: a few ids are set in a ``bytearray`` (Python ints, no numpy scalars), viewed as
#: the words without a copy. About 0.5-0.8 µs less per small mask than a numpy zeros-or-view.
LITTLE_ENDIAN = sys.byteorder == "little"


def _tiny_words(buf: bytearray, ids: np.ndarray) -> np.ndarray:
    for i in ids.tolist():
        buf[i >> 3] |= 1 << (i & 7)
    return np.frombuffer(buf, dtype=np.int32)


def pack_ids(ids: np.ndarray, width: int) -> np.ndarray:
    """The packed int32 mask with the bits of ``ids`` set."""
    if len(ids) <= TINY_PACK:
        if LITTLE_ENDIAN:
            return _tiny_words(bytearray(words_for(width) * 4), np.asarray(ids))
        words = np.zeros(words_for(width), dtype=np.uint32)
        _or_ids_python(words, np.asarray(ids))
        return words.view(np.int32)
    if len(ids) <= SPARSE_PACK:
        ids = np.asarray(ids, dtype=np.int64)
        words = np.zeros(words_for(width), dtype=np.uint32)
        np.bitwise_or.at(words, ids >> 5, np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))
        return words.view(np.int32)
    bits = np.zeros(words_for(width) * 32, dtype=bool)
    bits[ids] = True
    return np.packbits(bits, bitorder="little").view(np.int32)


def pack_ids_onto(words: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Packed ``words`` with the bits of ``ids`` set too: a copy, or ``words`` itself where
    ``ids`` is empty (read-only masks are shared as they are)."""
    if len(ids) == 0 and not words.flags.writeable:
        return words
    if len(ids) <= TINY_PACK:
        if LITTLE_ENDIAN and words.dtype == np.int32 and words.flags.c_contiguous:
            return _tiny_words(bytearray(memoryview(words).cast("B")), np.asarray(ids))
        out = words.view(np.uint32).copy()
        _or_ids_python(out, np.asarray(ids))
        return out.view(np.int32)
    if len(ids) <= SPARSE_PACK:
        out = words.view(np.uint32).copy()
        ids = np.asarray(ids, dtype=np.int64)
        np.bitwise_or.at(out, ids >> 5, np.left_shift(np.uint32(1), (ids & 31).astype(np.uint32)))
        return out.view(np.int32)
    return np.bitwise_or(words, pack_ids(ids, words.size * 32))


def unpack(words: np.ndarray, width: int) -> np.ndarray:
    """A bool array of length ``width`` from packed int32 ``words``."""
    return np.unpackbits(np.ascontiguousarray(words).view(np.uint8), bitorder="little")[:width].astype(bool)


def apply_mask_numpy(logits: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Set disallowed logits to -inf in place; ``allowed`` is a bool mask or packed int32 words.

    Works on one row (``(W,)``) or a batch (``(B, W)`` with ``(B, W)`` bools or ``(B, words)``).
    """
    if allowed.dtype == np.int32:
        width = logits.shape[-1]
        if allowed.ndim == 1:
            allowed = unpack(allowed, width)
        else:
            allowed = np.stack([unpack(row, width) for row in allowed])
    logits[~allowed[..., : logits.shape[-1]]] = -np.inf
    return logits


def apply_mask_torch(logits: Any, allowed: Any) -> Any:
    """Set disallowed logits to -inf in place on a torch tensor; ``allowed`` is a bool tensor or
    array, or packed int32 words (numpy or torch) as :meth:`State.fill_bitmask` writes them."""
    import torch

    width = logits.shape[-1]
    if isinstance(allowed, np.ndarray):
        if allowed.dtype == np.int32:
            allowed = unpack(allowed, width) if allowed.ndim == 1 else np.stack([unpack(r, width) for r in allowed])
        allowed = torch.from_numpy(np.ascontiguousarray(allowed))
    elif allowed.dtype == torch.int32:
        bits = torch.arange(32, device=allowed.device, dtype=torch.int32)
        allowed = ((allowed.unsqueeze(-1) >> bits) & 1).bool().flatten(-2)[..., :width]
    allowed = allowed.to(logits.device)
    logits.masked_fill_(~allowed[..., :width], float("-inf"))
    return logits
