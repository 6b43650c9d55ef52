"""Which tokens end generation: llama.cpp's rules, for loaders that have no runtime to ask.

llama.cpp (``llama-vocab.cpp``, the version vendored by llama-cpp-python 0.3.36) builds its set of
end-of-generation (EOG) ids from the GGUF keys ``eos``/``eot``/``eom``/``fim_pad``/``fim_rep``/
``fim_sep`` and, because converters often leave these keys out, from the token texts: every token
named in :data:`EOG_NAMES` ends generation, and the first token named in each of the EOT, EOM and
FIM lists fills a key the file left out. Tokens found by name are turned into control tokens. Two
corrections follow: when ``<|return|>`` and ``<|call|>`` (or ``<|calls|>`` and ``<|flush|>``) are
present, ``<|end|>`` is not an end token (gpt-oss, solar-open), and when ``<|tool_response>`` or
``<|plamo:eos|>`` is present, ``</s>`` is an ordinary text token (Gemma 4, PLaMo).

This module reproduces those rules on plain data; :mod:`structgen.vocab.from_gguf` applies them.
Where llama.cpp takes "the first" name match it iterates a hash map, so the pick is arbitrary; here
the lowest id wins, and every name match is made a control token either way (never text).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

EOG_NAMES: frozenset[bytes] = frozenset(
    s.encode("utf-8")
    for s in (
        "<|eot_id|>",
        "<|im_end|>",
        "<|end|>",
        "<|return|>",
        "<|call|>",
        "<|flush|>",
        "<|calls|>",
        "<end_of_turn>",
        "<|endoftext|>",
        "</s>",
        "<|eom_id|>",
        "<EOT>",
        "_<EOT>",
        "[EOT]",
        "[EOS]",
        "<|end_of_text|>",
        "<end_of_utterance>",
        "<eos>",
        "<turn|>",
        "<|tool_response>",
        "<\uff5cend\u2581of\u2581sentence\uff5c>",
        "[e~[",
    )
)

_EOT_NAMES = tuple(
    s.encode("utf-8")
    for s in (
        "<|eot_id|>",
        "<|im_end|>",
        "<|end|>",
        "<end_of_turn>",
        "<|endoftext|>",
        "<|end_of_text|>",
        "<EOT>",
        "_<EOT>",
        "[EOT]",
        "<\uff5cend\u2581of\u2581sentence\uff5c>",
        "<end_of_utterance>",
    )
)
_EOM_NAMES = (b"<|eom_id|>",)
_FIM_NAMES: dict[str, tuple[bytes, ...]] = {
    "fim_pre": tuple(
        s.encode("utf-8")
        for s in (
            "<|fim_prefix|>",
            "<fim-prefix>",
            "<fim_prefix>",
            "<\uff5cfim\u2581begin\uff5c>",
            "<PRE>",
            "\u2581<PRE>",
            "<|code_prefix|>",
            "<|prefix|>",
        )
    ),
    "fim_suf": tuple(
        s.encode("utf-8")
        for s in (
            "<|fim_suffix|>",
            "<fim-suffix>",
            "<fim_suffix>",
            "<\uff5cfim\u2581hole\uff5c>",
            "<SUF>",
            "\u2581<SUF>",
            "<|code_suffix|>",
            "<|suffix|>",
        )
    ),
    "fim_mid": tuple(
        s.encode("utf-8")
        for s in (
            "<|fim_middle|>",
            "<fim-middle>",
            "<fim_middle>",
            "<\uff5cfim\u2581end\uff5c>",
            "<MID>",
            "\u2581<MID>",
            "<|code_middle|>",
            "<|middle|>",
        )
    ),
    "fim_pad": (b"<|fim_pad|>", b"<fim-pad>", b"<fim_pad>", b"<PAD>", b"[PAD]"),
    "fim_rep": (b"<|fim_repo|>", b"<|repo_name|>", b"<fim-repo>", b"<REPO>", b"<reponame>"),
    "fim_sep": (b"<|file_sep|>",),
}
# Tokens llama.cpp always renders as user-defined text (gpt-oss); never end tokens.
_FORCED_USER_DEFINED = frozenset({b"<|channel|>", b"<|message|>", b"<|start|>", b"<|constrain|>"})


@dataclass(frozen=True)
class EndTokenRules:
    """What llama.cpp's rules decide for one vocabulary."""

    #: Every end-of-generation id.
    eog_ids: frozenset[int]
    #: Ids llama.cpp turns into control tokens because of their name (never text).
    forced_control: frozenset[int]
    #: Ids llama.cpp turns back into normal text tokens (``</s>`` in Gemma 4 / PLaMo vocabularies).
    forced_normal: frozenset[int]
    #: Ids llama.cpp forces to user-defined (gpt-oss channel markers).
    forced_user_defined: frozenset[int]
    #: The id of each special role that was found (``eos``, ``eot``, ``eom``, ``bos``...).
    roles: Mapping[str, int]


def llama_cpp_end_tokens(
    texts: Sequence[bytes],
    key_ids: Mapping[str, int],
    default_ids: Mapping[str, int],
) -> EndTokenRules:
    """Apply llama.cpp's end-of-generation rules.

    ``texts`` are the token strings as stored in the GGUF file; ``key_ids`` the special ids the
    file names (role -> id: ``bos``, ``eos``, ``eot``, ``eom``, ``fim_pad``...); ``default_ids``
    the ids llama.cpp assumes for this tokenizer model when the file names none.
    """
    n = len(texts)
    roles: dict[str, int] = {}
    for role, tid in default_ids.items():
        if 0 <= tid < n:
            roles[role] = tid
    for role, tid in key_ids.items():
        if 0 <= tid < n:
            roles[role] = tid
    # llama.cpp looks names up in a text -> id map filled in id order, so for a text that several
    # tokens share, the highest id is the one it finds.
    wanted = EOG_NAMES.union(*_FIM_NAMES.values(), _EOT_NAMES, _EOM_NAMES, _FORCED_USER_DEFINED)
    name_to_id: dict[bytes, int] = {}
    for i, t in enumerate(texts):
        if t in wanted:
            name_to_id[t] = i

    forced_control: set[int] = set()
    for role, names in (("eot", _EOT_NAMES), ("eom", _EOM_NAMES), *_FIM_NAMES.items()):
        hits = [name_to_id[name] for name in names if name in name_to_id]
        if role not in roles and hits:
            roles[role] = min(hits)
        # Every name match becomes a control token, picked or not (see the module docstring).
        forced_control.update(hits)

    eog: set[int] = {roles[r] for r in ("fim_pad", "fim_rep", "fim_sep") if r in roles}
    for name in EOG_NAMES:
        if name in name_to_id:
            eog.add(name_to_id[name])
            forced_control.add(name_to_id[name])
    for r in ("eos", "eot", "eom"):
        if r in roles:
            eog.add(roles[r])

    forced_user_defined = {name_to_id[name] for name in _FORCED_USER_DEFINED if name in name_to_id}
    forced_control -= forced_user_defined

    eog_texts = {texts[i]: i for i in sorted(eog, reverse=True)}
    has = eog_texts.__contains__
    has_call = has(b"<|call|>") or has(b"<|calls|>")
    if has(b"<|end|>") and has_call and (has(b"<|return|>") or has(b"<|flush|>")):
        end_id = eog_texts[b"<|end|>"]
        eog.discard(end_id)
        forced_control.discard(end_id)
        forced_user_defined.add(end_id)
    forced_normal: set[int] = set()
    if has(b"</s>") and (has(b"<|tool_response>") or has(b"<|plamo:eos|>")):
        s_id = eog_texts[b"</s>"]
        eog.discard(s_id)
        forced_control.discard(s_id)
        forced_normal.add(s_id)
    return EndTokenRules(
        eog_ids=frozenset(eog),
        forced_control=frozenset(forced_control),
        forced_normal=frozenset(forced_normal),
        forced_user_defined=frozenset(forced_user_defined),
        roles=dict(roles),
    )
