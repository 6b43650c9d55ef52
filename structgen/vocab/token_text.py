"""How tokenizers spell token bytes as strings, and how to get the bytes back.

Two spellings cover the tokenizers structgen loads:

* byte-level BPE (GPT-2, Llama 3, Qwen2, SmolLM2...): every byte is written as one printable
  character of GPT-2's 256-character alphabet (printable Latin-1 bytes stand for themselves, the
  other 68 bytes are shifted to U+0100..U+0143). :func:`decode_byte_level` inverts it.
* SentencePiece (Llama 2, Gemma, Phi-3, T5...): ``▁`` (U+2581) stands for a space and byte-fallback
  pieces ``<0xNN>`` stand for one raw byte (:func:`decode_sentencepiece`, :func:`parse_byte_piece`).

Also here: the rule that decides whether a user-defined (added, non-special) token is real text
(:func:`looks_like_marker`).
"""

from __future__ import annotations

import re

import numpy as np

SPIECE_SPACE = "\u2581"
SPIECE_SPACE_BYTES = SPIECE_SPACE.encode("utf-8")


def _gpt2_alphabet() -> list[str]:
    """The character GPT-2's byte-level BPE uses for each byte value 0..255."""
    # Bytes that print as themselves in Latin-1 keep their own character; the remaining bytes
    # (controls, space, DEL, NBSP, soft hyphen...) take the code points from 256 upwards, in order.
    kept = set(range(0x21, 0x7F)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    chars = []
    shifted = 0
    for b in range(256):
        if b in kept:
            chars.append(chr(b))
        else:
            chars.append(chr(256 + shifted))
            shifted += 1
    return chars


BYTE_TO_CHAR: tuple[str, ...] = tuple(_gpt2_alphabet())
CHAR_TO_BYTE: dict[str, int] = {c: b for b, c in enumerate(BYTE_TO_CHAR)}

# str.translate table: alphabet characters become the Latin-1 character of their byte, so that
# ``.encode("latin-1")`` yields the raw bytes; characters outside the alphabet whose code point is
# below 256 are sent to U+FFFF so that encoding fails for them instead of passing them through.
_TO_LATIN1: dict[int, str] = {cp: "\uffff" for cp in range(256)}
_TO_LATIN1.update({ord(c): chr(b) for b, c in enumerate(BYTE_TO_CHAR)})
# the same as an array over code points 0..0x143: the byte, or -1 outside the alphabet
_CODE_POINT_TO_BYTE = np.full(max(ord(c) for c in BYTE_TO_CHAR) + 1, -1, dtype=np.int16)
_CODE_POINT_TO_BYTE[[ord(c) for c in BYTE_TO_CHAR]] = np.arange(256)


def decode_byte_level(piece: str) -> bytes | None:
    """Raw bytes of a byte-level BPE token string, or ``None`` if it uses characters outside
    GPT-2's alphabet (such a string is not a byte-level token)."""
    try:
        return piece.translate(_TO_LATIN1).encode("latin-1")
    except UnicodeEncodeError:
        return None


def decode_byte_level_utf8(piece: bytes) -> bytes | None:
    """:func:`decode_byte_level` for a token stored as UTF-8 bytes (as GGUF stores them)."""
    try:
        return decode_byte_level(piece.decode("utf-8"))
    except UnicodeDecodeError:
        return None


def decode_byte_level_many(pieces: list[bytes]) -> list[bytes | None]:
    """:func:`decode_byte_level_utf8` for many tokens at once: the joined strings decoded once
    and their code points looked up in one numpy gather (a third of ``str.translate``'s time on
    Llama 3's 128k tokens); each alphabet character is one output byte, so token boundaries
    follow from code point counts. Falls back to token by token if any token is not valid."""
    blob = b"".join(pieces)
    try:
        code_points = np.frombuffer(blob.decode("utf-8").encode("utf-32-le"), dtype=np.uint32)
    except UnicodeDecodeError:
        return [decode_byte_level_utf8(p) for p in pieces]
    table = _CODE_POINT_TO_BYTE
    looked = table[np.minimum(code_points, table.size - 1)]
    if code_points.size and (int(code_points.max()) >= table.size or int(looked.min()) < 0):
        return [decode_byte_level_utf8(p) for p in pieces]
    out = looked.astype(np.uint8).tobytes()
    raw = np.frombuffer(blob, dtype=np.uint8)
    code_points_before = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum((raw & 0xC0) != 0x80, out=code_points_before[1:])
    ends = np.zeros(len(pieces) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)), out=ends[1:])
    bounds = code_points_before[ends].tolist()
    return [out[a:b] for a, b in zip(bounds, bounds[1:])]


def encode_byte_level(raw: bytes) -> str:
    """The byte-level BPE spelling of raw bytes (inverse of :func:`decode_byte_level`)."""
    return "".join(BYTE_TO_CHAR[b] for b in raw)


def decode_sentencepiece(piece: bytes) -> bytes:
    """Bytes of a normal SentencePiece piece (UTF-8): every ``▁`` is a space."""
    return piece.replace(SPIECE_SPACE_BYTES, b" ")


_BYTE_PIECE = re.compile(rb"<0x([0-9A-Fa-f]{2})>")


def parse_byte_piece(piece: bytes) -> bytes | None:
    """The single byte of a byte-fallback piece ``<0xNN>``, or ``None`` if ``piece`` is not one."""
    m = _BYTE_PIECE.fullmatch(piece)
    return bytes([int(m.group(1), 16)]) if m else None


def looks_like_marker(text: bytes) -> bool:
    """Whether a user-defined token's text is a marker rather than a piece of text.

    The rule (documented in docs/vocab.md): a token whose text is wrapped in angle or square
    brackets (``<|im_start|>``, ``<start_of_image>``, ``[PAD151646]``, ``</s>``, ``<table>``) is
    a marker; anything else (runs of spaces, tabs or newlines, single characters) is text. The
    user-defined tokens of the vocabularies checked (Gemma 3, Gemma 4, Phi-3, Qwen2, Command-R,
    DeepSeek, MPT/NeoX) are either chat or tool markers and converter padding, all bracketed, or
    whitespace runs and single characters. Bracketed HTML tags (Gemma's ``<table>``) count as
    markers: they stay writable one character at a time, which costs a little fluency and never
    validity, while letting a chat marker appear inside a JSON string would be a real fault.
    """
    if len(text) < 2:
        return False
    first, last = text[:1], text[-1:]
    return (first == b"<" and last == b">") or (first == b"[" and last == b"]")
