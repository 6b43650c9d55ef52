"""Build a :class:`~structgen.vocab.Vocab` from a tiktoken encoding's tables.

tiktoken stores token bytes raw: ``mergeable_ranks`` maps each token's bytes to its id (its
rank), ``special_tokens`` maps the printed form of each special token to its id
(``enc._mergeable_ranks`` and ``enc._special_tokens`` of a ``tiktoken.Encoding``). Ids nobody
names are holes (never text). End-of-generation ids: ``eos_token_ids`` when given, else the
special tokens whose name llama.cpp treats as end of generation (``<|endoftext|>``,
``<|eot_id|>``, ``<|im_end|>``...; :data:`structgen.vocab.end_tokens.EOG_NAMES`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..errors import VocabError
from .end_tokens import EOG_NAMES
from .vocab import Vocab

#: Largest token id accepted: a table naming id 10**9 would otherwise allocate a huge vocabulary.
MAX_TOKEN_ID = (1 << 24) - 1


def _check_id(t: object, what: str) -> int:
    if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t <= MAX_TOKEN_ID:
        raise VocabError(f"{what}: token id {t!r} is not an integer in 0..{MAX_TOKEN_ID}")
    return t


def load_tiktoken_vocab(
    mergeable_ranks: Mapping[bytes, int],
    special_tokens: Mapping[str, int],
    *,
    eos_token_ids: Iterable[int] | None = None,
    logit_width: int | None = None,
    name: str = "",
) -> Vocab:
    """See the module docstring."""
    ids = {}
    for raw, rank in mergeable_ranks.items():
        if not isinstance(raw, (bytes, bytearray)):
            raise VocabError(f"mergeable_ranks key {raw!r} is not bytes")
        ids[_check_id(rank, "mergeable_ranks")] = bytes(raw)
    if len(ids) != len(mergeable_ranks):
        raise VocabError("mergeable_ranks gives the same id to two tokens")
    specials: dict[int, bytes] = {}
    for text, tid in special_tokens.items():
        if not isinstance(text, str):
            raise VocabError(f"special_tokens key {text!r} is not a str")
        tid = _check_id(tid, "special_tokens")
        if tid in ids or tid in specials:
            raise VocabError(f"special token {text!r} reuses id {tid}")
        specials[tid] = text.encode("utf-8")
    if not ids and not specials:
        raise VocabError("empty tiktoken tables")
    n = max(max(ids, default=-1), max(specials, default=-1)) + 1
    tokens: list[bytes | None] = [None] * n
    for tid, raw in ids.items():
        tokens[tid] = raw
    for tid, raw in specials.items():
        tokens[tid] = raw
    if eos_token_ids is None:
        eos = sorted(tid for tid, raw in specials.items() if raw in EOG_NAMES)
    else:
        eos = list(eos_token_ids)
    return Vocab(tokens, eos_token_ids=eos, special_token_ids=specials, logit_width=logit_width, name=name)
