"""OpenAI-style error responses: ``{"error": {"message", "type", "param", "code"}}`` with a status.

:class:`ApiError` is what the request handlers raise; :func:`from_structgen` turns the exceptions
:func:`structgen.chat.prepare_chat` raises into one, so that an unenforceable schema is a 400 whose
message names the keyword and the JSON pointer (both also given as fields of the error object).
"""

from __future__ import annotations

from typing import Any

from ..errors import GenerationError, LimitError, SchemaError, StructgenError

#: The ``type`` OpenAI gives each status (clients map the status to an exception class).
_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "server_error",
}


class ApiError(Exception):
    """An error answer: HTTP ``status`` and the fields of OpenAI's error object."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.extra = dict(extra or {})

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {
            "message": self.message,
            "type": _TYPES.get(self.status, "invalid_request_error" if self.status < 500 else "server_error"),
            "param": self.param,
            "code": self.code,
        }
        error.update(self.extra)
        return {"error": error}


def invalid(message: str, param: str | None = None, code: str | None = None) -> ApiError:
    """A 400 about the request itself."""
    return ApiError(400, message, param=param, code=code)


def from_structgen(e: StructgenError, *, schema_param: str | None = None) -> ApiError:
    """The 400 for an error ``prepare_chat`` raised; ``schema_param`` names the request field
    whose schema a :class:`SchemaError` is about, where the request has only one."""
    if isinstance(e, SchemaError):
        param = "tools" if getattr(e, "tool", None) is not None else schema_param
        extra: dict[str, Any] = {"keyword": e.keyword, "pointer": e.pointer}
        tool = getattr(e, "tool", None)
        if tool is not None:
            extra["tool"] = tool
        return ApiError(400, f"schema cannot be enforced: {e}", param=param, code="unsupported_schema", extra=extra)
    if isinstance(e, LimitError):
        return ApiError(400, str(e), code="limit_exceeded", extra={"limit": e.limit})
    if isinstance(e, GenerationError):
        return ApiError(400, str(e), param="max_tokens", code="max_tokens_too_small")
    return ApiError(400, str(e), code="invalid_request")
