"""Model-free runtimes for the generation tests: a small byte vocabulary and scripted logits.

:class:`ScriptedRuntime` gives logits that favour writing a target text (the longest token that
continues it), then the end token, with seeded noise everywhere: with a constraint, the output is
the target where the target is valid, and something valid otherwise.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Sequence

import numpy as np

from structgen.integrations import greedy_encode
from structgen.vocab import Vocab

EOS = 256
MULTI = [
    b'{"',
    b'":',
    b'",',
    b'"}',
    b", ",
    b": ",
    b"true",
    b"false",
    b"null",
    b"name",
    b"age",
    b"  ",
    b"\n  ",
    b"ab",
    b"abc",
]


def byte_vocab(*, padding: int = 0) -> Vocab:
    """Every single byte as a token (ids 0-255), an end token (256) and some multi-byte tokens."""
    tokens: list[bytes | None] = [bytes([b]) for b in range(256)] + [b"</s>"] + list(MULTI)
    return Vocab(tokens, eos_token_ids=[EOS], logit_width=len(tokens) + padding, name="bytes")


class ScriptedRuntime:
    """A :class:`structgen.integrations.Runtime` whose model wants to write ``script`` (text, or
    a function of the prompt text).

    ``noise`` scales seeded random logits (a function of the prefix, so runs repeat exactly).
    ``on_feed(n)`` is called before each feed with the number of feeds so far (tests raise from it).
    """

    overlaps_forward_pass = False

    def __init__(
        self,
        vocab: Vocab,
        script: str | bytes | Callable[[str], str],
        *,
        noise: float = 1.0,
        context_length: int | None = None,
        overlap: bool = False,
        width: int | None = None,
        on_feed: Any = None,
    ) -> None:
        self._vocab = vocab
        self._script_source = script
        self.script = b""
        self._set_script("")
        self.noise = noise
        self._context_length = context_length
        self.overlaps_forward_pass = overlap
        self._width = width or vocab.logit_width
        self.on_feed = on_feed
        self.prompt: list[int] = []
        self.output: list[int] = []
        self.feeds = 0
        self.starts = 0
        self._lengths = vocab.lengths
        self._text = vocab.is_text

    @property
    def vocab(self) -> Vocab:
        return self._vocab

    @property
    def context_length(self) -> int | None:
        return self._context_length

    def encode_prompt(self, prompt: Any) -> list[int]:
        if not isinstance(prompt, str):
            prompt = "\n".join(f"{m['role']}: {m['content']}" for m in prompt)
        return greedy_encode(self._vocab, prompt.encode("utf-8"))

    def _set_script(self, prompt_text: str) -> None:
        src = self._script_source
        if callable(src):
            src = src(prompt_text)
        self.script = src.encode("utf-8") if isinstance(src, str) else src

    def start(self, prompt_ids: Sequence[int]) -> None:
        self.starts += 1
        self.prompt = list(prompt_ids)
        self.output = []
        self._set_script(self._vocab.detokenize(self.prompt).decode("utf-8", errors="replace"))

    def feed(self, token_ids: Sequence[int]) -> None:
        if self.on_feed is not None:
            self.on_feed(self.feeds)
        self.feeds += 1
        self.output.extend(int(t) for t in token_ids)

    def logits(self) -> np.ndarray:
        done = self._vocab.detokenize(self.output)
        digest = hashlib.sha256(done).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
        logits = rng.normal(size=self._width).astype(np.float32) * self.noise
        if self.script.startswith(done):
            rest = self.script[len(done) :]
            if not rest:
                logits[EOS] += 50.0
            else:
                best, best_len = None, 0
                for i in np.flatnonzero(self._text).tolist():
                    b = self._vocab.token_bytes(i)
                    if len(b) > best_len and rest.startswith(b):
                        best, best_len = i, len(b)
                if best is not None:
                    logits[best] += 50.0
        return logits
