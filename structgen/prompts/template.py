"""A model's chat template rendered as the ecosystem renders it.

Chat templates are Jinja2 programs shipped with the model (a GGUF's ``tokenizer.chat_template``,
a Hugging Face tokenizer's ``chat_template``). :class:`ChatTemplate` renders one the way
``transformers``' ``apply_chat_template`` does, so the prompt is the text the model was trained
on: an immutable sandboxed environment (a template cannot reach Python objects or files),
``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension, a ``tojson`` filter that
keeps non-ASCII text, and the globals templates call (``raise_exception``, ``strftime_now``).
Variables: ``messages``, ``tools`` (OpenAI tool definitions, or absent), ``add_generation_prompt``,
``bos_token``, ``eos_token``, and any extra keywords (``enable_thinking`` for Qwen 3...).

Jinja2 is an optional dependency (``structgen[chat]``; llama-cpp-python and transformers bring
it): it is imported when a template is first built.
"""

from __future__ import annotations

import datetime
import functools
import json
from typing import Any, Mapping, Sequence

from .. import caches
from ..errors import StructgenError


class ChatTemplate:
    """One compiled chat template; :meth:`render` gives the prompt text."""

    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = "") -> None:
        if not isinstance(source, str) or not source.strip():
            raise StructgenError("a chat template is a non-empty Jinja2 text")
        try:
            import jinja2
            import jinja2.meta
            from jinja2.sandbox import ImmutableSandboxedEnvironment
        except ImportError as e:  # pragma: no cover - every runtime structgen adapts brings Jinja2
            raise StructgenError("rendering a chat template needs Jinja2: pip install 'structgen[chat]'") from e
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        env = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
        )
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = _strftime_now
        try:
            parsed = env.parse(source)
            self._template = env.from_string(source)
        except jinja2.TemplateError as e:
            raise StructgenError(f"the chat template does not compile: {e}") from e
        self.variables = frozenset(jinja2.meta.find_undeclared_variables(parsed))
        self._errors: tuple[type[BaseException], ...] = (jinja2.TemplateError,)

    @property
    def supports_tools(self) -> bool:
        """Whether the template reads a ``tools`` variable (renders tool definitions itself)."""
        return "tools" in self.variables

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        **extra: Any,
    ) -> str:
        """The prompt text for ``messages`` (and ``tools``, where the template renders them)."""
        variables: dict[str, Any] = {
            "messages": [dict(m) for m in messages],
            "add_generation_prompt": add_generation_prompt,
            "bos_token": self.bos_token,
            "eos_token": self.eos_token,
            **extra,
        }
        if tools:
            variables["tools"] = [dict(t) for t in tools]
        try:
            return self._template.render(**variables)
        except _TemplateRaised as e:
            raise StructgenError(f"the model's chat template refused these messages: {e}") from e
        except self._errors as e:
            raise StructgenError(f"the model's chat template failed on these messages: {e}") from e
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
            # templates index and concatenate freely; a message shape they do not expect lands here
            raise StructgenError(f"the model's chat template failed on these messages: {e!r}") from e


@functools.lru_cache(maxsize=32)
def compiled_template(source: str, bos_token: str = "", eos_token: str = "") -> ChatTemplate:
    """The :class:`ChatTemplate` of ``source``, compiled once per process (a server renders the
    same model's template for every request; 32 covers the models one process serves)."""
    return ChatTemplate(source, bos_token=bos_token, eos_token=eos_token)


class _TemplateRaised(Exception):
    """``raise_exception(...)`` called by a template."""


def _raise(message: str) -> None:
    raise _TemplateRaised(message)


def _tojson(value: Any, indent: int | None = None, ensure_ascii: bool = False, sort_keys: bool = False) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.datetime.now().strftime(fmt)


caches.register_lru(
    "prompts.compiled_template",
    compiled_template,
    bytes_per_entry=30_000,
    estimate="a compiled Jinja template and its environment: 24-30 KB traced (tracemalloc) per compile of SmolLM2's",
)
