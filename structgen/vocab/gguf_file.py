"""A minimal, fast reader for the key-value metadata of a GGUF file.

The ``gguf`` package's ``GGUFReader`` builds numpy views for every string of every array, which
takes 15-30 s on a 128k-262k token vocabulary. This reader memory-maps the file, walks the
metadata section once, decodes only the keys it is asked for (string arrays become lists of raw
``bytes``, numeric arrays numpy arrays) and skips everything else; the tensor section is never
touched, so a 250 MB model file costs about as much as a vocabulary-only one.
Every inconsistency (bad magic, unknown type, a length past the end of the file) is a
:class:`~structgen.errors.VocabError`.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..errors import VocabError

GGUF_MAGIC = b"GGUF"

# GGUF value type ids -> (struct code, numpy dtype) for the fixed-size scalar types.
_SCALARS: dict[int, tuple[str, str]] = {
    0: ("B", "u1"),  # UINT8
    1: ("b", "i1"),  # INT8
    2: ("H", "u2"),  # UINT16
    3: ("h", "i2"),  # INT16
    4: ("I", "u4"),  # UINT32
    5: ("i", "i4"),  # INT32
    6: ("f", "f4"),  # FLOAT32
    7: ("?", "u1"),  # BOOL
    10: ("Q", "u8"),  # UINT64
    11: ("q", "i8"),  # INT64
    12: ("d", "f8"),  # FLOAT64
}
_STRING = 8
_ARRAY = 9
# Arrays of arrays are legal GGUF but no tokenizer key uses them; bound the nesting so a hostile
# file cannot drive the walk arbitrarily deep.
_MAX_ARRAY_NESTING = 4


class _Cursor:
    """Sequential little/big-endian decoding over a buffer, with bounds checks."""

    def __init__(self, buf: Any, path: str, endian: str, wide: bool) -> None:
        self.buf = buf
        self.size = len(buf)
        self.off = 0
        self.path = path
        self.endian = endian
        self.len_fmt = struct.Struct(endian + ("Q" if wide else "I"))
        self.u32 = struct.Struct(endian + "I")

    def fail(self, what: str) -> VocabError:
        return VocabError(f"{self.path}: corrupt GGUF metadata ({what} at byte {self.off})")

    def need(self, n: int) -> None:
        if n < 0 or self.off + n > self.size:
            raise self.fail("truncated file")

    def length(self) -> int:
        self.need(self.len_fmt.size)
        (n,) = self.len_fmt.unpack_from(self.buf, self.off)
        self.off += self.len_fmt.size
        return int(n)

    def type_id(self) -> int:
        self.need(4)
        (t,) = self.u32.unpack_from(self.buf, self.off)
        self.off += 4
        return int(t)

    def string(self) -> bytes:
        n = self.length()
        self.need(n)
        s = bytes(self.buf[self.off : self.off + n])
        self.off += n
        return s

    def scalar(self, code: str) -> Any:
        fmt = struct.Struct(self.endian + code)
        self.need(fmt.size)
        (v,) = fmt.unpack_from(self.buf, self.off)
        self.off += fmt.size
        return v

    def string_array(self, count: int, keep: bool) -> list[bytes] | None:
        # The hot loop of the reader (128k tokens, 280k merges skipped on Llama 3): one length
        # read and one slice per string; the bounds are checked once at the end, since reading
        # a length past the end raises and a slice past it is cut short.
        buf, off, size = self.buf, self.off, self.size
        unpack = self.len_fmt.unpack_from
        width = self.len_fmt.size
        out: list[bytes] | None = [] if keep else None
        try:
            if out is not None:
                append = out.append
                for _ in range(count):
                    (n,) = unpack(buf, off)
                    off += width
                    append(buf[off : off + n])
                    off += n
                    if off > size:
                        break
            else:
                for _ in range(count):
                    (n,) = unpack(buf, off)
                    off += width + n
        except struct.error:
            self.off = off
            raise self.fail("truncated string array") from None
        if off > size:
            self.off = size
            raise self.fail("string past end of file")
        self.off = off
        return out

    def value(self, vtype: int, keep: bool, depth: int = 0) -> Any:
        if vtype in _SCALARS:
            v = self.scalar(_SCALARS[vtype][0])
            return bool(v) if vtype == 7 else v
        if vtype == _STRING:
            return self.string()
        if vtype != _ARRAY:
            raise self.fail(f"unknown value type {vtype}")
        if depth >= _MAX_ARRAY_NESTING:
            raise self.fail("arrays nested too deeply")
        etype = self.type_id()
        count = self.length()
        if etype in _SCALARS:
            dtype = np.dtype(self.endian + _SCALARS[etype][1])
            nbytes = count * dtype.itemsize
            self.need(nbytes)
            arr = None
            if keep:
                arr = np.frombuffer(self.buf, dtype=dtype, count=count, offset=self.off).copy()
                if etype == 7:
                    arr = arr.astype(bool)
            self.off += nbytes
            return arr
        if etype == _STRING:
            return self.string_array(count, keep)
        if etype == _ARRAY:
            # Each element takes at least 12 bytes, so need() ends a bogus count long before it loops far.
            items = [self.value(_ARRAY, keep, depth + 1) for _ in range(count)]
            return items if keep else None
        raise self.fail(f"unknown array element type {etype}")


def read_gguf_metadata(
    path: str | os.PathLike[str],
    wanted: Callable[[str], bool] | Iterable[str] | None = None,
) -> dict[str, Any]:
    """Read the metadata of the GGUF file at ``path``.

    ``wanted`` selects the keys whose values are decoded (a predicate or a collection of names;
    ``None`` keeps all). Strings are returned as ``bytes``; string arrays as ``list[bytes]``;
    numeric arrays as numpy arrays; scalars as Python numbers and ``bool``.
    """
    p = os.fspath(path)
    if wanted is None:
        keep_key: Callable[[str], bool] = lambda _k: True  # noqa: E731
    elif callable(wanted):
        keep_key = wanted
    else:
        names = frozenset(wanted)
        keep_key = names.__contains__
    try:
        with open(p, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < 24:
                raise VocabError(f"{p}: not a GGUF file (only {size} bytes)")
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return _read(mm, p, keep_key)
    except OSError as e:
        raise VocabError(f"{p}: cannot read GGUF file: {e}") from e


def _read(mm: mmap.mmap, path: str, keep_key: Callable[[str], bool]) -> dict[str, Any]:
    if mm[:4] != GGUF_MAGIC:
        raise VocabError(f"{path}: not a GGUF file (magic {bytes(mm[:4])!r}, expected b'GGUF')")
    (version,) = struct.unpack_from("<I", mm, 4)
    endian = "<"
    if version & 0xFFFF == 0:
        # A file written on a big-endian machine reads with its version bytes swapped.
        (version,) = struct.unpack_from(">I", mm, 4)
        endian = ">"
    if version not in (1, 2, 3):
        raise VocabError(f"{path}: unsupported GGUF version {version}")
    cur = _Cursor(mm, path, endian, wide=version >= 2)
    cur.off = 8
    if version == 1:
        _n_tensors, n_kv = cur.scalar("I"), cur.scalar("I")
    else:
        _n_tensors, n_kv = cur.scalar("Q"), cur.scalar("Q")
    out: dict[str, Any] = {}
    for _ in range(int(n_kv)):
        try:
            key = cur.string().decode("utf-8")
        except UnicodeDecodeError:
            raise cur.fail("key is not UTF-8") from None
        vtype = cur.type_id()
        keep = keep_key(key)
        value = cur.value(vtype, keep)
        if keep:
            out[key] = value
    return out
