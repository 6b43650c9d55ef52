"""The tokenizer vocabulary as the mask engine sees it: token id -> the bytes it adds to the text.

A :class:`Vocab` is immutable. It holds, per token id, the bytes the model's runtime prints for it
(``b""`` for tokens that are never text), which ids are special (control, end-of-generation,
unknown, unused and marker tokens: never text, though a grammar may name them by their printed
form), the end-of-generation ids and the model's logit width. The arrays the engine walks (a
concatenated byte buffer with offsets, lengths, the text mask) are built once and read-only.
Loaders for GGUF files, Hugging Face tokenizers, llama-cpp-python models and tiktoken tables live
in their own modules and are reached through the classmethods here.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import VocabError

if TYPE_CHECKING:
    import os

# Bump when the fingerprint's input or the array layout changes: old cache entries stop matching.
FORMAT_VERSION = 1


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _check_ids(ids: Iterable[int], n: int, what: str) -> list[int]:
    out = []
    for t in ids:
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
            raise VocabError(f"{what}: token id {t!r} is not an integer")
        t = int(t)
        if not 0 <= t < n:
            raise VocabError(f"{what}: token id {t} is out of range (vocabulary has {n} tokens)")
        out.append(t)
    return out


class Vocab:
    """A tokenizer vocabulary: token id -> bytes, plus special and end-of-generation ids.

    ``tokens[i]`` is what the model's runtime prints for token ``i``: its bytes for text tokens,
    its printed form (``b"<|im_end|>"``) for special tokens, ``None`` for a token that is never
    text and has no printed form. Ids in ``special_token_ids`` or ``eos_token_ids`` are never text;
    an empty or ``None`` token is never text either. ``logit_width`` (default: the number of
    tokens) is the width of the model's logit vector; ids past the tokens are padding and never
    allowed.
    """

    __slots__ = (
        "_buffer",
        "_offsets",
        "_is_special",
        "_special_texts",
        "_eos",
        "_logit_width",
        "_name",
        "_memo",
    )

    def __init__(
        self,
        tokens: Sequence[bytes | None],
        *,
        eos_token_ids: Iterable[int] = (),
        special_token_ids: Iterable[int] = (),
        logit_width: int | None = None,
        name: str = "",
    ) -> None:
        n = len(tokens)
        if n == 0:
            raise VocabError("a vocabulary needs at least one token")
        eos = _check_ids(eos_token_ids, n, "eos_token_ids")
        special = set(_check_ids(special_token_ids, n, "special_token_ids"))
        special.update(eos)
        texts: list[bytes] = []
        append = texts.append
        for i, t in enumerate(tokens):
            if t is None:
                append(b"")
            elif type(t) is bytes:
                append(t)
            elif isinstance(t, (bytes, bytearray, memoryview)):
                append(bytes(t))
            else:
                raise VocabError(f"token {i} is {type(t).__name__}, expected bytes or None")
        special_texts: dict[int, str] = {}
        for i in special:
            if texts[i]:
                special_texts[i] = texts[i].decode("utf-8", errors="replace")
            texts[i] = b""
        is_special = np.zeros(n, dtype=bool)
        if special:
            is_special[np.fromiter(special, dtype=np.int64, count=len(special))] = True
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        buffer = np.frombuffer(b"".join(texts), dtype=np.uint8)
        self._init(buffer, offsets, is_special, special_texts, eos, logit_width, name)

    def _init(
        self,
        buffer: np.ndarray,
        offsets: np.ndarray,
        is_special: np.ndarray,
        special_texts: Mapping[int, str],
        eos: Iterable[int],
        logit_width: int | None,
        name: str,
    ) -> None:
        n = len(offsets) - 1
        integral = isinstance(logit_width, (int, np.integer)) and not isinstance(logit_width, bool)
        if logit_width is not None and not integral:
            raise VocabError(f"logit_width {logit_width!r} is not an integer")
        width = n if logit_width is None else int(logit_width)
        if width < n:
            raise VocabError(f"logit_width {width} is smaller than the number of tokens {n}")
        setattr_ = object.__setattr__
        setattr_(self, "_buffer", _read_only(np.ascontiguousarray(buffer, dtype=np.uint8)))
        setattr_(self, "_offsets", _read_only(np.ascontiguousarray(offsets, dtype=np.int64)))
        setattr_(self, "_is_special", _read_only(np.ascontiguousarray(is_special, dtype=bool)))
        setattr_(self, "_special_texts", MappingProxyType(dict(sorted(special_texts.items()))))
        setattr_(self, "_eos", tuple(sorted(set(int(e) for e in eos))))
        setattr_(self, "_logit_width", width)
        setattr_(self, "_name", str(name))
        setattr_(self, "_memo", {})

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("Vocab is immutable")

    def __delattr__(self, key: str) -> None:
        raise AttributeError("Vocab is immutable")

    # ----------------------------------------------------------------- loaders

    @classmethod
    def from_gguf(
        cls,
        path: str | os.PathLike[str],
        *,
        user_defined: str = "auto",
        cache: bool = True,
    ) -> Vocab:
        """Read the tokenizer of a GGUF file (see :mod:`structgen.vocab.from_gguf`)."""
        from .from_gguf import load_gguf_vocab

        return load_gguf_vocab(path, user_defined=user_defined, cache=cache)

    @classmethod
    def from_hf(
        cls,
        tokenizer: Any,
        *,
        eos_token_ids: Iterable[int] | None = None,
        logit_width: int | None = None,
        user_defined: str = "auto",
    ) -> Vocab:
        """Read a ``transformers`` tokenizer or a ``tokenizers.Tokenizer``
        (see :mod:`structgen.vocab.from_hf`)."""
        from .from_hf import load_hf_vocab

        return load_hf_vocab(tokenizer, eos_token_ids=eos_token_ids, logit_width=logit_width, user_defined=user_defined)

    @classmethod
    def from_llama_cpp(cls, llm: Any, *, user_defined: str = "auto") -> Vocab:
        """Read the vocabulary of a loaded ``llama_cpp.Llama`` (see
        :mod:`structgen.vocab.from_llama_cpp`)."""
        from .from_llama_cpp import load_llama_cpp_vocab

        return load_llama_cpp_vocab(llm, user_defined=user_defined)

    @classmethod
    def from_tiktoken(
        cls,
        mergeable_ranks: Mapping[bytes, int],
        special_tokens: Mapping[str, int],
        *,
        eos_token_ids: Iterable[int] | None = None,
        logit_width: int | None = None,
        name: str = "",
    ) -> Vocab:
        """Build from a tiktoken encoding's tables (see :mod:`structgen.vocab.from_tiktoken`)."""
        from .from_tiktoken import load_tiktoken_vocab

        return load_tiktoken_vocab(
            mergeable_ranks, special_tokens, eos_token_ids=eos_token_ids, logit_width=logit_width, name=name
        )

    # ----------------------------------------------------------- array form

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The vocabulary as plain numpy arrays (for :func:`structgen.vocab.cache.cached_arrays`
        and artifact files); :meth:`from_arrays` reverses it."""
        ids = np.fromiter(self._special_texts.keys(), dtype=np.int64, count=len(self._special_texts))
        encoded = [s.encode("utf-8") for s in self._special_texts.values()]
        st_offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=st_offsets[1:])
        return {
            "format_version": np.array([FORMAT_VERSION], dtype=np.int64),
            "buffer": np.asarray(self._buffer),
            "offsets": np.asarray(self._offsets),
            "is_special": np.asarray(self._is_special),
            "special_text_ids": ids,
            "special_text_buffer": np.frombuffer(b"".join(encoded), dtype=np.uint8),
            "special_text_offsets": st_offsets,
            "eos_token_ids": np.array(self._eos, dtype=np.int64),
            "logit_width": np.array([self._logit_width], dtype=np.int64),
            "name": np.frombuffer(self._name.encode("utf-8"), dtype=np.uint8),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> Vocab:
        """Rebuild a vocabulary from :meth:`to_arrays` output, checking its consistency."""
        try:
            if int(arrays["format_version"][0]) != FORMAT_VERSION:
                raise VocabError("vocabulary arrays have another format version")
            buffer = np.asarray(arrays["buffer"], dtype=np.uint8)
            offsets = np.asarray(arrays["offsets"], dtype=np.int64)
            is_special = np.asarray(arrays["is_special"], dtype=bool)
            n = len(offsets) - 1
            if (
                n < 1
                or offsets[0] != 0
                or offsets[-1] != len(buffer)
                or np.any(np.diff(offsets) < 0)
                or len(is_special) != n
            ):
                raise VocabError("vocabulary arrays are inconsistent")
            ids = np.asarray(arrays["special_text_ids"], dtype=np.int64)
            st_buf = bytes(np.asarray(arrays["special_text_buffer"], dtype=np.uint8))
            st_off = np.asarray(arrays["special_text_offsets"], dtype=np.int64).tolist()
            if len(st_off) != len(ids) + 1 or (len(ids) and not is_special[ids].all()):
                raise VocabError("vocabulary arrays are inconsistent (special texts)")
            special_texts = {
                int(i): st_buf[st_off[k] : st_off[k + 1]].decode("utf-8") for k, i in enumerate(ids.tolist())
            }
            eos = _check_ids(np.asarray(arrays["eos_token_ids"]).tolist(), n, "eos_token_ids")
            width = int(arrays["logit_width"][0])
            name = bytes(np.asarray(arrays["name"], dtype=np.uint8)).decode("utf-8")
        except VocabError:
            raise
        except (KeyError, IndexError, ValueError, TypeError, UnicodeDecodeError) as e:
            raise VocabError(f"vocabulary arrays are malformed: {e}") from e
        v = cls.__new__(cls)
        v._init(buffer.copy(), offsets.copy(), is_special.copy(), special_texts, eos, width, name)
        return v

    # ------------------------------------------------------------ accessors

    @property
    def n_tokens(self) -> int:
        """Number of token ids the tokenizer defines."""
        return len(self._offsets) - 1

    def __len__(self) -> int:
        return self.n_tokens

    @property
    def logit_width(self) -> int:
        """Width of the model's logit vector (>= ``n_tokens``); the mask width."""
        return self._logit_width

    @property
    def name(self) -> str:
        return self._name

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        """Every end-of-generation id, sorted."""
        return self._eos

    @property
    def special_texts(self) -> Mapping[int, str]:
        """Printed form of each special token that has one (id -> ``"<|im_end|>"``)."""
        return self._special_texts

    @property
    def is_special(self) -> np.ndarray:
        """``bool[n_tokens]``: special tokens (never text)."""
        return self._is_special

    @property
    def special_token_ids(self) -> np.ndarray:
        """Ids of the special tokens, ascending (``int64``)."""
        m = self._memo
        if "special_ids" not in m:
            m["special_ids"] = _read_only(np.flatnonzero(self._is_special).astype(np.int64))
        return m["special_ids"]

    @property
    def buffer(self) -> np.ndarray:
        """``uint8``: the bytes of all text tokens, concatenated in id order."""
        return self._buffer

    @property
    def offsets(self) -> np.ndarray:
        """``int64[n_tokens + 1]``: token ``i``'s bytes are ``buffer[offsets[i]:offsets[i+1]]``."""
        return self._offsets

    @property
    def lengths(self) -> np.ndarray:
        """``int32[n_tokens]``: byte length of each token (0 for tokens that are never text)."""
        m = self._memo
        if "lengths" not in m:
            m["lengths"] = _read_only(np.diff(self._offsets).astype(np.int32))
        return m["lengths"]

    @property
    def utf8_tail_missing(self) -> np.ndarray:
        """``int8[n_tokens]``: how many bytes the token's last character still lacks where the
        token ends inside a multi-byte UTF-8 character (byte-level vocabularies split characters
        anywhere), else 0. Read from the trailing bytes: a lead byte followed by fewer
        continuation bytes than it announces."""
        m = self._memo
        if "utf8_tail_missing" not in m:
            lengths = np.diff(self._offsets)
            ends = self._offsets[1:]
            missing = np.zeros(lengths.size, dtype=np.int8)
            open_ = lengths > 0  # every byte after the one looked at is a continuation byte
            for back in range(1, 5):
                here = open_ & (lengths >= back)
                byte = np.zeros(lengths.size, dtype=np.int64)
                byte[here] = self._buffer[ends[here] - back]
                lead = here & (byte >= 0xC0)
                need = np.where(byte >= 0xF0, 4, np.where(byte >= 0xE0, 3, 2))
                missing[lead] = np.maximum(need[lead] - back, 0)
                open_ = here & (byte >= 0x80) & (byte < 0xC0)
            m["utf8_tail_missing"] = _read_only(missing)
        return m["utf8_tail_missing"]

    @property
    def is_text(self) -> np.ndarray:
        """``bool[n_tokens]``: tokens that may appear as text (not special, not empty)."""
        m = self._memo
        if "is_text" not in m:
            m["is_text"] = _read_only((np.diff(self._offsets) > 0) & ~self._is_special)
        return m["is_text"]

    @property
    def max_token_length(self) -> int:
        return int(self.lengths.max(initial=0))

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes token ``token_id`` adds to the text (``b""`` if it is never text)."""
        try:
            token_id = operator.index(token_id)
        except TypeError:
            raise VocabError(f"token id {token_id!r} is not an integer") from None
        n = self.n_tokens
        if not 0 <= token_id < n:
            raise VocabError(f"token id {token_id} is out of range (vocabulary has {n} tokens)")
        o = self._offsets
        return self._buffer[o[token_id] : o[token_id + 1]].tobytes()

    def detokenize(self, token_ids: Iterable[int], *, specials: bool = False) -> bytes:
        """Concatenated bytes of ``token_ids``; special tokens print their form if ``specials``."""
        out = []
        for t in token_ids:
            b = self.token_bytes(int(t))
            if not b and specials and int(t) in self._special_texts:
                b = self._special_texts[int(t)].encode("utf-8")
            out.append(b)
        return b"".join(out)

    def lookup_text(self, text: bytes | str) -> list[int]:
        """Ids whose bytes equal ``text``: text tokens, and special tokens by their printed form
        (so a grammar atom ``<|im_end|>`` resolves to that control token). Ascending."""
        if isinstance(text, str):
            text = text.encode("utf-8")
        m = self._memo
        index = m.get("by_text")
        if index is None:
            index = {}
            buf = self._buffer.tobytes()
            off = self._offsets.tolist()
            for i in np.flatnonzero(self.is_text).tolist():
                index.setdefault(buf[off[i] : off[i + 1]], []).append(i)
            for i, s in self._special_texts.items():
                index.setdefault(s.encode("utf-8"), []).append(i)
            for ids in index.values():
                ids.sort()
            m["by_text"] = index
        return list(index.get(bytes(text), ()))

    @property
    def fingerprint(self) -> str:
        """sha256 hex digest identifying the vocabulary: all token bytes, special flags, printed
        forms of special tokens, end-of-generation ids and logit width (not the name)."""
        m = self._memo
        if "fingerprint" not in m:
            h = hashlib.sha256()
            h.update(b"structgen.vocab/%d\0" % FORMAT_VERSION)
            h.update(np.array([self.n_tokens, self._logit_width], dtype="<i8").tobytes())
            h.update(self._offsets.astype("<i8", copy=False).tobytes())
            h.update(self._buffer.tobytes())
            h.update(np.packbits(self._is_special).tobytes())
            h.update(np.array(self._eos, dtype="<i8").tobytes())
            for i, s in self._special_texts.items():
                e = s.encode("utf-8")
                h.update(np.array([i, len(e)], dtype="<i8").tobytes())
                h.update(e)
            m["fingerprint"] = h.hexdigest()
        return m["fingerprint"]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocab):
            return NotImplemented
        return self.fingerprint == other.fingerprint

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __repr__(self) -> str:
        label = f"{self._name!r}, " if self._name else ""
        return (
            f"Vocab({label}n_tokens={self.n_tokens}, logit_width={self._logit_width}, "
            f"special={int(self._is_special.sum())}, eos={list(self._eos)})"
        )
