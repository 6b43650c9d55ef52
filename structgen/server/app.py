"""The Starlette application: routes, authentication, body limits, and the two ways of answering.

``POST /v1/chat/completions`` checks the request (:mod:`.validation`), queues it on the model
worker (:mod:`.worker`), waits until ``prepare_chat`` has accepted it - so that an unenforceable
schema or a ``max_tokens`` too small is a 400 even when the client asked for a stream - and then
answers with one ``chat.completion`` object or with server-sent events. A client that goes away
cancels its job: between two tokens if it is running, before it starts if it is queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
from typing import Any, AsyncIterator

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .config import ServerConfig
from .errors import ApiError, invalid
from .responses import ChunkWriter, completion, completion_id, model_card, now
from .validation import check_chat_request, parse_body
from .worker import Job, ModelWorker

log = logging.getLogger("structgen.server")


def create_app(model: Any, config: ServerConfig | None = None) -> Starlette:
    """The ASGI app serving ``model`` (a ``llama_cpp.Llama``, a transformers pair, or a runtime).

    After shutdown ``app.state.model_idle`` says whether the model thread has stopped, so that
    the caller may free the model."""
    config = config or ServerConfig()
    started = now()
    worker_box: dict[str, ModelWorker] = {}

    def worker() -> ModelWorker:
        # started lazily on the first request as well as at startup, so that test clients that
        # skip the lifespan still get one
        if "worker" not in worker_box:
            worker_box["worker"] = ModelWorker(model, max_queued=config.max_queued)
        return worker_box["worker"]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        worker()
        yield
        w = worker_box.pop("worker", None)
        app.state.model_idle = True if w is None else await asyncio.to_thread(w.close)

    async def health(request: Request) -> Response:
        w = worker()
        return JSONResponse(
            {"status": "ok", "model": config.model_name, "waiting": w.waiting, "cancelled": w.cancelled}
        )

    async def list_models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [model_card(config.model_name, started)]})

    async def get_model(request: Request) -> Response:
        name = request.path_params["name"]
        if name != config.model_name:
            raise ApiError(404, f"the model {name!r} does not exist", param="model", code="model_not_found")
        return JSONResponse(model_card(name, started))

    async def chat_completions(request: Request) -> Response:
        try:
            return await _chat_completions(request)
        except ClientGone:
            return Response(status_code=499)  # nobody reads it; nginx's "client closed request"

    async def _chat_completions(request: Request) -> Response:
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            # also keeps web pages from making the model run with a "simple" cross-site request
            raise ApiError(415, "the request body must be JSON (Content-Type: application/json)")
        body = await _read_body(request, config.max_body_bytes)
        call = check_chat_request(parse_body(body), config)
        job = Job(call.prepare_kwargs, stream_deltas=call.stream, schema_param=call.schema_param)
        worker().submit(job)
        try:
            kind, payload = await _next_event(job, request, config)
        except BaseException:
            job.cancel()
            raise
        if kind == "error":
            raise payload
        id_, created = completion_id(), now()
        if call.stream:
            writer = ChunkWriter(id_=id_, created=created, model=config.model_name, include_usage=call.include_usage)
            return _JobStream(
                job,
                _sse(job, writer),
                media_type="text/event-stream",
                headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        try:
            while kind != "done":
                kind, payload = await _next_event(job, request, config)
                if kind == "error":
                    raise payload
        finally:
            job.cancel()  # a no-op once done; stops the generation if the wait was interrupted
        return JSONResponse(completion(payload, id_=id_, created=created, model=config.model_name))

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/v1/models/{name:path}", get_model, methods=["GET"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={ApiError: _api_error, HTTPException: _http_error, Exception: _internal_error},
    )
    app.add_middleware(BearerAuth, api_key=config.api_key)
    return app


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"the request body is larger than {limit} bytes", code="body_too_large")
    chunks = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ApiError(413, f"the request body is larger than {limit} bytes", code="body_too_large")
            chunks.append(chunk)
    except ClientDisconnect:
        raise ClientGone from None
    if not size:
        raise invalid("the request body is empty")
    return b"".join(chunks)


class ClientGone(Exception):
    """The client disconnected before its answer was ready."""


async def _next_event(job: Job, request: Request, config: ServerConfig) -> tuple[str, Any]:
    """The job's next event; cancels the job if the client disconnects while waiting."""
    while True:
        try:
            return await asyncio.wait_for(job.events.get(), timeout=config.disconnect_poll_seconds)
        except asyncio.TimeoutError:
            if await request.is_disconnected():
                job.cancel()
                raise ClientGone from None


async def _sse(job: Job, writer: ChunkWriter) -> AsyncIterator[bytes]:
    """The events of a streamed answer. Starlette stops iterating (cancels this generator) when
    the client disconnects; the ``finally`` then cancels the generation."""
    try:
        yield writer.first()
        while True:
            kind, payload = await job.events.get()
            if kind == "delta":
                chunk = writer.delta(payload)
                if chunk is not None:
                    yield chunk
            elif kind == "done":
                for chunk in writer.last(payload):
                    yield chunk
                return
            elif kind == "error":
                # the status line is sent: the error goes in the stream, as OpenAI's does
                yield b"data: " + json.dumps(payload.body()).encode("utf-8") + b"\n\n"
                return
    finally:
        job.cancel()


class _JobStream(StreamingResponse):
    """A streamed answer that cancels its job however the response ends (finished, failed, or
    the client gone), not only when the event generator happens to be closed."""

    def __init__(self, job: Job, content: AsyncIterator[bytes], **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self.job = job

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.job.cancel()


# -- errors -----------------------------------------------------------------------------------


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return JSONResponse(exc.body(), status_code=exc.status, headers=headers)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = {404: f"no route {request.url.path}", 405: f"method {request.method} not allowed here"}.get(
        exc.status_code, str(exc.detail)
    )
    return JSONResponse(ApiError(exc.status_code, message).body(), status_code=exc.status_code)


async def _internal_error(request: Request, exc: Exception) -> Response:
    log.error("internal error", exc_info=exc)
    return JSONResponse(ApiError(500, "internal server error", code="internal_error").body(), status_code=500)


class BearerAuth:
    """Pure ASGI middleware: with an API key, every HTTP request needs ``Authorization: Bearer``."""

    def __init__(self, app: ASGIApp, api_key: str | None) -> None:
        self.app = app
        self.expected = f"Bearer {api_key}".encode("utf-8") if api_key else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.expected is not None and scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                error = ApiError(401, "a valid API key is needed: Authorization: Bearer <key>", code="invalid_api_key")
                response = JSONResponse(error.body(), status_code=401, headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
