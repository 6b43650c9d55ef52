"""SGLang: a grammar backend (``--grammar-backend structgen``) that fills SGLang's vocab masks with
structgen's exact token masks.

Written against SGLang 0.5.23 (``sglang/srt/constrained/base_grammar_backend.py``). Installing
structgen puts :func:`register` under SGLang's ``sglang.srt.plugins`` entry point group, so every
SGLang process (the scheduler runs in its own) registers the backend and adds ``structgen`` to
``--grammar-backend``'s choices; calling :func:`register` by hand does the same in one process::

    python -m sglang.launch_server --model-path MODEL --grammar-backend structgen

Requests use SGLang's own fields: ``json_schema`` (a JSON Schema; ``"$$ANY$$"`` is any JSON
value), ``regex`` (matched against the whole output) and ``ebnf`` (read as llama.cpp GBNF, whose
``root ::= ...`` rules are the EBNF SGLang's other backends take). Structural tags are refused
with a message (structgen has no structural tags); so is anything structgen cannot enforce, as an
:class:`~sglang.srt.constrained.base_grammar_backend.InvalidGrammarObject` that SGLang turns into
the request's error before it is scheduled.

The grammar object (:class:`StructgenGrammar`) is one :class:`~structgen.engine.State`: tokens
are accepted (a token the mask did not allow raises a ``ValueError`` subclass, on which SGLang
aborts that request), rolled back (speculative decoding walks draft trees this way), copied (a
fresh state of the same compiled constraint), and masked in the packed int32 layout. Jump-forward
offers the tokens structgen knows are forced. SGLang's grammar interface carries no token
budget, so the budget closing of :func:`structgen.generate` is not available here.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable

from ..constraint_cache import constraint_for
from ..engine.masks import apply_mask_torch, words_for
from ..errors import StructgenError
from ..grammar import Grammar
from ..output_types import resolve_output

try:
    import torch
    from sglang.srt.constrained.base_grammar_backend import (
        BaseGrammarBackend,
        BaseGrammarObject,
        InvalidGrammarObject,
        register_grammar_backend,
    )
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(f"structgen.integrations.sglang needs SGLang 0.5 (pip install 'structgen[sglang]'): {e}") from e

if TYPE_CHECKING:
    from ..engine import Constraint, State
    from ..vocab import Vocab

#: The name SGLang selects the backend by (``--grammar-backend structgen``).
BACKEND_NAME = "structgen"
#: SGLang's key for "any JSON value" (``response_format={"type": "json_object"}``).
ANY_JSON = "$$ANY$$"


class TokenNotAllowedError(StructgenError, ValueError):
    """A token the mask did not allow. A ``ValueError`` too: SGLang aborts the request on that."""


class StructgenGrammar(BaseGrammarObject):
    """One request's constraint state, as SGLang's grammar object."""

    def __init__(self, constraint: Constraint, key: str) -> None:
        super().__init__()
        self.constraint = constraint
        self.state: State = constraint.start()
        self.key = key

    def __repr__(self) -> str:
        return f"StructgenGrammar({self.key!r}, tokens={self.state.num_tokens})"

    def accept_token(self, token: int) -> None:
        if self.state.is_terminated():
            return  # tokens past the end (SGLang stops the request on is_terminated)
        self.current_token = token
        if not self.state.commit_token(int(token)):
            raise TokenNotAllowedError(
                f"token {int(token)} is not allowed by the structgen constraint at output position "
                f"{self.state.num_tokens} ({self.key})"
            )

    def rollback(self, k: int) -> None:
        self.state.rollback(k)

    def is_terminated(self) -> bool:
        return self.state.is_terminated()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device: Any) -> torch.Tensor:
        return allocate_mask(vocab_size, batch_size)

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
        row = vocab_mask[idx].numpy()
        words = self.state.mask_words()
        row[: words.size] = words
        row[words.size :] = 0

    @staticmethod
    def reset_vocab_mask(vocab_mask: torch.Tensor) -> None:
        vocab_mask.fill_(-1)

    @staticmethod
    def move_vocab_mask(vocab_mask: torch.Tensor, device: Any) -> torch.Tensor:
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
        apply_mask_torch(logits, vocab_mask)

    def copy(self) -> StructgenGrammar:
        """A fresh request of the same compiled constraint (SGLang caches one object per key and
        copies it for each request)."""
        return StructgenGrammar(self.constraint, self.key)

    # -- jump-forward -----------------------------------------------------------------------

    def try_jump_forward(self, tokenizer: Any) -> tuple[list[int], str] | None:
        tokens = self.state.forced_tokens()
        if not tokens:
            return None
        text = self.constraint.vocab.detokenize(tokens).decode("utf-8", errors="replace")
        return tokens, text

    def jump_forward_str_state(self, helper: tuple[list[int], str]) -> tuple[str, int]:
        _tokens, text = helper
        return text, -1

    def jump_and_retokenize(self, old_output_ids: list[int], new_output_ids: list[int], next_state: int) -> None:
        common = 0
        for old, new in zip(old_output_ids, new_output_ids):
            if old != new:
                break
            common += 1
        self.state.rollback(min(len(old_output_ids) - common, self.state.num_tokens))
        for token in new_output_ids[common:]:
            self.accept_token(token)


def allocate_mask(vocab_size: int, batch_size: int) -> torch.Tensor:
    """A ``(batch, ceil(vocab/32))`` int32 mask on the CPU, every token allowed (rows SGLang does
    not fill stay unconstrained)."""
    return torch.full((batch_size, words_for(vocab_size)), -1, dtype=torch.int32)


class StructgenGrammarBackend(BaseGrammarBackend):
    """SGLang's grammar backend over structgen (see the module docstring)."""

    def __init__(self, tokenizer: Any, vocab_size: int, eos_token_ids: Iterable[int] | None = None) -> None:
        from ..vocab import Vocab

        super().__init__()
        ends = sorted({int(e) for e in eos_token_ids or ()})
        self.vocab: Vocab = Vocab.from_hf(tokenizer, logit_width=vocab_size, eos_token_ids=ends or None)
        self.vocab_size = vocab_size

    def _grammar(self, grammar: Grammar, key: str) -> BaseGrammarObject:
        try:
            return StructgenGrammar(constraint_for(grammar, self.vocab), key)
        except StructgenError as e:
            return InvalidGrammarObject(f"structgen cannot enforce {key}: {e}")

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        try:
            schema: Any = {} if key_string == ANY_JSON else json.loads(key_string)
            grammar = resolve_output(schema).grammar
        except json.JSONDecodeError as e:
            return InvalidGrammarObject(f"the JSON schema is not JSON: {e}")
        except StructgenError as e:
            return InvalidGrammarObject(f"structgen cannot enforce this JSON schema: {e}")
        return self._grammar(grammar, "json_schema")

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        try:
            grammar = Grammar.from_regex(key_string, search=False)
        except StructgenError as e:
            return InvalidGrammarObject(f"structgen cannot enforce this regex: {e}")
        return self._grammar(grammar, f"regex /{key_string}/")

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        try:
            grammar = Grammar.from_gbnf(key_string)
        except StructgenError as e:
            return InvalidGrammarObject(f"structgen cannot read this grammar as GBNF: {e}")
        return self._grammar(grammar, "ebnf")

    def dispatch_structural_tag(self, key_string: str) -> BaseGrammarObject:
        return InvalidGrammarObject(
            "structgen does not support structural tags: send a json_schema, regex or ebnf constraint"
        )


def create_backend(
    server_args: Any, tokenizer: Any, vocab_size: int, eos_token_ids: Iterable[int] | None = None
) -> StructgenGrammarBackend:
    """The factory :func:`register` hands SGLang (called as ``(server_args, tokenizer,
    vocab_size, eos_token_ids)``)."""
    return StructgenGrammarBackend(tokenizer, vocab_size, eos_token_ids)


def register(name: str = BACKEND_NAME) -> None:
    """Register the backend with SGLang under ``name`` and add the name to the choices of
    ``--grammar-backend`` (idempotent; SGLang's plugin loader calls it in each process)."""
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES

    register_grammar_backend(name, create_backend)
    if name not in GRAMMAR_BACKEND_CHOICES:
        GRAMMAR_BACKEND_CHOICES.append(name)
