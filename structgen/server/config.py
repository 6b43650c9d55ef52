"""`ServerConfig`: every tunable of the server, with its default and the reason for it."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import StructgenError


@dataclass(frozen=True)
class ServerConfig:
    """How the server behaves; the defaults suit one small model on a laptop."""

    #: The name ``/v1/models`` lists and responses carry; requests may name it or leave it out.
    model_name: str = "structgen"
    #: When set, every request needs ``Authorization: Bearer <api_key>`` (``/health`` included:
    #: nothing about the server is told to a caller who cannot use it).
    api_key: str | None = None
    #: Largest request body read, in bytes: chat histories of a few hundred kilobytes are normal,
    #: megabytes are not, and the body is parsed in memory.
    max_body_bytes: int = 4 * 1024 * 1024
    #: Largest JSON text of one schema (``response_format`` or a tool's parameters), in bytes: the
    #: translator's own bound is sixteen times larger, and a server should refuse earlier.
    max_schema_bytes: int = 512 * 1024
    #: Most tools one request may define (each becomes a branch of the constraint).
    max_tools: int = 128
    #: Most messages in one request.
    max_messages: int = 1024
    #: Most ``stop`` strings (OpenAI allows 4).
    max_stop: int = 4
    #: ``max_tokens`` when the request gives none: enough for a tool call or a small object.
    default_max_tokens: int = 512
    #: Requests waiting for the model beyond the one being served; more get HTTP 429 at once
    #: rather than waiting unboundedly (each waiting request holds its body and constraint).
    max_queued: int = 64
    #: Seconds between checks whether a client waiting on a non-streamed answer has gone away.
    disconnect_poll_seconds: float = 0.25

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_schema_bytes", "max_tools", "max_messages", "default_max_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise StructgenError(f"ServerConfig.{name} must be a positive integer, not {value!r}")
        if isinstance(self.max_queued, bool) or not isinstance(self.max_queued, int) or self.max_queued < 0:
            raise StructgenError(f"ServerConfig.max_queued must be an integer >= 0, not {self.max_queued!r}")
        if not self.disconnect_poll_seconds > 0:
            raise StructgenError("ServerConfig.disconnect_poll_seconds must be > 0")
        if self.api_key is not None and not self.api_key:
            raise StructgenError("ServerConfig.api_key must be a non-empty string or None")
