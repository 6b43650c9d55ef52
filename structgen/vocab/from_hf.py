"""Load a :class:`~structgen.vocab.Vocab` from a Hugging Face tokenizer.

Accepted: a ``tokenizers.Tokenizer``, a ``transformers`` fast tokenizer (its
``backend_tokenizer`` is read), or a slow ``transformers`` tokenizer that is byte-level
(``byte_decoder``, as GPT-2's) or SentencePiece-based (``sp_model``, as Llama 2's). The token
bytes are what the tokenizer's own decoder produces for the token in mid-sequence:

* byte-level (``ByteLevel`` decoder or pre-tokenizer): a token spelled in GPT-2's alphabet
  becomes its raw bytes; a token with any character outside the alphabet is its UTF-8 text, as
  ``tokenizers`` does it;
* SentencePiece (``Metaspace`` decoder, or ``Replace("▁", " ")``): ``▁`` is a space, and with a
  ``ByteFallback`` decoder (or a slow SentencePiece tokenizer) ``<0xNN>`` is one raw byte; the
  start-of-text rules (dropping the first space) do not apply mid-sequence and are ignored;
* anything else (word-level vocabularies): the token's UTF-8 text. WordPiece is refused.

Special tokens: added tokens marked special, the model's unknown token (``unk_token``, or
Unigram's ``unk_id``), and ``all_special_ids``
of a ``transformers`` tokenizer. Added tokens not marked special are text unless they look like a marker (as the GGUF
converter makes them USER_DEFINED: same rule and ``user_defined`` modes as
:mod:`structgen.vocab.from_gguf`). End of generation: ``eos_token_ids`` if given, else the
tokenizer's ``eos_token_id`` plus what llama.cpp's rules (:mod:`structgen.vocab.end_tokens`) make
end tokens among the special tokens: those named ``<|eot_id|>``, ``<|im_end|>``,
``<end_of_turn>``... and the fill-in-the-middle pad / repository / file-separator tokens
(SmolLM2's ``<reponame>``). So the same model gives the same end ids, and the same fingerprint,
whether its GGUF file or its tokenizer was read. Added tokens that are special only by the marker
rule never count as end tokens.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import VocabError
from .end_tokens import llama_cpp_end_tokens
from .token_text import SPIECE_SPACE, decode_byte_level, looks_like_marker, parse_byte_piece
from .vocab import Vocab

_USER_DEFINED_MODES = ("auto", "special", "text")
MAX_TOKEN_ID = (1 << 24) - 1


def _components(node: Any) -> list[dict[str, Any]]:
    """Flatten a decoder / pre-tokenizer JSON node (``Sequence`` nodes included) to a list."""
    out: list[dict[str, Any]] = []
    stack = [node]
    while stack:
        cur = stack.pop()
        if not isinstance(cur, dict):
            continue
        out.append(cur)
        for key in ("decoders", "pretokenizers", "normalizers"):
            children = cur.get(key)
            if isinstance(children, list):
                stack.extend(reversed(children))
    return out


def _scheme_from_json(spec: Mapping[str, Any]) -> tuple[str, bool]:
    """``(scheme, byte_fallback)`` for a tokenizer.json; scheme is byte_level, spiece or plain."""
    model = spec.get("model") or {}
    if model.get("type") == "WordPiece":
        raise VocabError("WordPiece tokenizers (BERT) are not supported: they are encoders, not generators")
    decoders = _components(spec.get("decoder"))
    pre = _components(spec.get("pre_tokenizer"))
    kinds = {d.get("type") for d in decoders}
    if "WordPiece" in kinds:
        raise VocabError("WordPiece tokenizers (BERT) are not supported: they are encoders, not generators")
    byte_fallback = "ByteFallback" in kinds
    if "ByteLevel" in kinds:
        return "byte_level", byte_fallback
    replaces_spiece = any(
        d.get("type") == "Replace"
        and (d.get("pattern") or {}).get("String") == SPIECE_SPACE
        and d.get("content") == " "
        for d in decoders
    )
    if "Metaspace" in kinds or replaces_spiece:
        return "spiece", byte_fallback
    pre_kinds = {p.get("type") for p in pre}
    if "ByteLevel" in pre_kinds:
        return "byte_level", byte_fallback
    if "Metaspace" in pre_kinds:
        return "spiece", byte_fallback
    return "plain", byte_fallback


def _state(component: Any) -> Any:
    # tokenizers components serialise themselves to JSON through __getstate__
    return None if component is None else json.loads(component.__getstate__())


def _light_spec(backend: Any) -> dict[str, Any]:
    """The parts of tokenizer.json this loader reads, without serialising the whole tokenizer
    (``to_str`` writes every merge: ~0.5 s for a 128k vocabulary)."""
    try:
        model_type = type(backend.model).__name__
        model: dict[str, Any] = {"type": model_type}
        if model_type == "Unigram":
            model = _state(backend.model)
        elif isinstance(getattr(backend.model, "unk_token", None), str):
            model["unk_token"] = backend.model.unk_token
        return {"model": model, "decoder": _state(backend.decoder), "pre_tokenizer": _state(backend.pre_tokenizer)}
    except (AttributeError, TypeError, ValueError):
        pass
    try:
        return json.loads(backend.to_str())
    except (AttributeError, TypeError, ValueError) as e:
        raise VocabError(f"cannot read the tokenizer's JSON form: {e}") from e


def _decode(piece: str, scheme: str, byte_fallback: bool, byte_decoder: Mapping[str, int] | None) -> bytes:
    if scheme == "byte_level":
        if byte_decoder is not None:
            if all(c in byte_decoder for c in piece):
                return bytes(byte_decoder[c] for c in piece)
            return piece.encode("utf-8")
        raw = decode_byte_level(piece)
        return raw if raw is not None else piece.encode("utf-8")
    if scheme == "spiece":
        if byte_fallback:
            b = parse_byte_piece(piece.encode("utf-8"))
            if b is not None:
                return b
        return piece.replace(SPIECE_SPACE, " ").encode("utf-8")
    return piece.encode("utf-8")


def _check_id(t: Any, what: str) -> int:
    if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t <= MAX_TOKEN_ID:
        raise VocabError(f"{what}: token id {t!r} is not an integer in 0..{MAX_TOKEN_ID}")
    return t


def _end_ids(tokens: list[bytes | None], special: set[int], declared: Any) -> list[int]:
    """llama.cpp's end-of-generation rules (:mod:`.end_tokens`) over the tokens the tokenizer
    calls special, plus the declared ``eos_token_id``: the same ids :func:`from_gguf` finds in
    the GGUF file converted from this tokenizer. Only special tokens are matched by name (Gemma's
    plain ``"</s>"``, an HTML tag, is no end)."""
    n = len(tokens)
    names = [t if i in special and t is not None else b"" for i, t in enumerate(tokens)]
    declared_ids = [t for t in (declared if isinstance(declared, (list, tuple)) else [declared]) if _valid(t, n)]
    keys = {"eos": declared_ids[0]} if declared_ids else {}
    rules = llama_cpp_end_tokens(names, keys, {})
    return sorted(rules.eog_ids | set(declared_ids))


def _valid(tid: Any, n: int) -> bool:
    return isinstance(tid, int) and not isinstance(tid, bool) and 0 <= tid < n


def load_hf_vocab(
    tokenizer: Any,
    *,
    eos_token_ids: Iterable[int] | None = None,
    logit_width: int | None = None,
    user_defined: str = "auto",
) -> Vocab:
    """See the module docstring."""
    if user_defined not in _USER_DEFINED_MODES:
        raise VocabError(f"user_defined must be one of {_USER_DEFINED_MODES}, not {user_defined!r}")
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None and hasattr(tokenizer, "to_str") and hasattr(tokenizer, "get_added_tokens_decoder"):
        backend = tokenizer
    hf = tokenizer if backend is not tokenizer else None

    byte_decoder: Mapping[str, int] | None = None
    added: dict[int, tuple[str, bool]] = {}  # id -> (content, special)
    unk_piece: str | None = None
    if backend is not None:
        spec = _light_spec(backend)
        scheme, byte_fallback = _scheme_from_json(spec)
        model = spec.get("model") or {}
        unk = model.get("unk_token")
        unk_piece = unk if isinstance(unk, str) else None
        unk_id = model.get("unk_id")
        if model.get("type") == "Unigram" and isinstance(unk_id, int) and not isinstance(unk_id, bool):
            unk_piece = backend.id_to_token(unk_id)
        vocab_map = backend.get_vocab(with_added_tokens=True)
        for tid, tok in backend.get_added_tokens_decoder().items():
            added[int(tid)] = (str(tok.content), bool(tok.special))
    elif hf is not None and hasattr(hf, "get_vocab"):
        vocab_map = hf.get_vocab()
        if getattr(hf, "byte_decoder", None) is not None:
            scheme, byte_fallback, byte_decoder = "byte_level", False, hf.byte_decoder
        elif getattr(hf, "sp_model", None) is not None:
            scheme, byte_fallback = "spiece", True
        else:
            raise VocabError(
                f"unsupported slow tokenizer {type(hf).__name__}: use its fast version or a tokenizers.Tokenizer"
            )
        decoder = getattr(hf, "added_tokens_decoder", None) or {}
        for tid, tok in decoder.items():
            added[int(tid)] = (str(getattr(tok, "content", tok)), bool(getattr(tok, "special", False)))
    else:
        raise VocabError(
            f"from_hf expects a transformers tokenizer or a tokenizers.Tokenizer, not {type(tokenizer).__name__}"
        )

    if not vocab_map:
        raise VocabError("the tokenizer has an empty vocabulary")
    id_to_piece: dict[int, str] = {}
    for piece, tid in vocab_map.items():
        id_to_piece[_check_id(tid, "tokenizer vocabulary")] = piece
    for tid, (content, _special) in added.items():
        id_to_piece[_check_id(tid, "added tokens")] = content
    n = max(id_to_piece) + 1
    tokens: list[bytes | None] = [None] * n
    for tid, piece in id_to_piece.items():
        tokens[tid] = _decode(piece, scheme, byte_fallback, byte_decoder)

    special: set[int] = set()  # what the tokenizer itself calls special
    markers: set[int] = set()  # added tokens not marked special that are never text all the same
    for tid, (content, is_special) in added.items():
        if is_special:
            special.add(tid)
            tokens[tid] = content.encode("utf-8")  # printed form, not decoded
        elif user_defined == "special" or (user_defined == "auto" and looks_like_marker(content.encode("utf-8"))):
            markers.add(tid)
            tokens[tid] = content.encode("utf-8")
    sp_model = getattr(hf, "sp_model", None) if hf is not None else None
    if sp_model is not None and backend is None:
        # A slow SentencePiece tokenizer: its own control / unknown / unused pieces are special.
        for tid in range(min(n, int(sp_model.get_piece_size()))):
            if sp_model.is_control(tid) or sp_model.is_unknown(tid) or sp_model.is_unused(tid):
                special.add(tid)
                tokens[tid] = sp_model.id_to_piece(tid).encode("utf-8")
    if unk_piece is not None and isinstance(vocab_map.get(unk_piece), int):
        # the model's unknown token stands for text it could not spell: never text itself
        tid = vocab_map[unk_piece]
        special.add(tid)
        tokens[tid] = unk_piece.encode("utf-8")
    for tid in getattr(hf, "all_special_ids", None) or ():
        if isinstance(tid, int) and 0 <= tid < n:
            special.add(tid)

    if eos_token_ids is not None:
        eos = list(eos_token_ids)
    else:
        eos = _end_ids(tokens, special, getattr(hf, "eos_token_id", None) if hf is not None else None)
    name = str(getattr(hf, "name_or_path", "") or "") if hf is not None else ""
    return Vocab(tokens, eos_token_ids=eos, special_token_ids=special | markers, logit_width=logit_width, name=name)
