"""The model queue: one thread runs the requests one at a time, in arrival order.

A model holds one sequence at a time, so requests wait their turn instead of interleaving on it.
Each :class:`Job` prepares its request (validation and the compiled constraint, before any model
call) and then streams it; what happens is posted to the job's asyncio queue on the server's event
loop: ``("prepared", request)``, then ``("delta", ChatDelta)`` for each piece (only when the client
streams), then ``("done", ChatResult)``, or ``("error", ApiError)`` at any point. A job cancelled
(its client went away) is skipped if it has not started and stopped between two tokens if it has.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from typing import Any

from ..chat import prepare_chat
from ..errors import StructgenError
from .errors import ApiError, from_structgen

log = logging.getLogger("structgen.server")

_STOP = object()


class Job:
    """One request on its way through the queue."""

    def __init__(self, prepare_kwargs: dict[str, Any], *, stream_deltas: bool, schema_param: str | None) -> None:
        self.prepare_kwargs = prepare_kwargs
        self.stream_deltas = stream_deltas
        self.schema_param = schema_param
        self.events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def post(self, kind: str, payload: Any) -> None:
        try:
            self._loop.call_soon_threadsafe(self.events.put_nowait, (kind, payload))
        except RuntimeError:  # the event loop is closed: the server is shutting down
            self.cancel()


class ModelWorker:
    """The thread that serves :class:`Job` s for one model; ``max_queued`` bounds the wait."""

    def __init__(self, model: Any, *, max_queued: int) -> None:
        self.model = model
        self.max_queued = max_queued
        self._queue: queue.Queue[Any] = queue.Queue()
        self._waiting = 0
        self._cancelled = 0
        self._current: Job | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name="structgen-model", daemon=True)
        self._thread.start()

    @property
    def waiting(self) -> int:
        """Requests queued or running."""
        with self._lock:
            return self._waiting

    @property
    def cancelled(self) -> int:
        """Jobs stopped or skipped because their client went away, since the start."""
        with self._lock:
            return self._cancelled

    def _count_cancelled(self) -> None:
        with self._lock:
            self._cancelled += 1

    def submit(self, job: Job) -> None:
        """Queue ``job``; a 429 if the queue is full (the one running does not count)."""
        with self._lock:
            if self._waiting > self.max_queued:
                raise ApiError(429, "the server is busy: too many requests are waiting for the model", code="busy")
            self._waiting += 1
        self._queue.put(job)

    def close(self, timeout: float = 30.0) -> bool:
        """Cancel the running job and those queued, and stop the thread; True once it has
        stopped (only then may the model be freed: the thread may be inside a forward pass)."""
        with self._lock:
            current = self._current
        if current is not None:
            current.cancel()
        self._queue.put(_STOP)
        self._thread.join(timeout=timeout)
        return not self._thread.is_alive()

    def _serve(self) -> None:
        while True:
            job = self._queue.get()
            if job is _STOP:
                self._drain()
                return
            with self._lock:
                self._current = job
            try:
                if job.cancelled:
                    self._count_cancelled()
                else:
                    self._run(job)
            except Exception:  # noqa: BLE001 - the worker must outlive every request
                log.exception("a request failed")
                job.post("error", ApiError(500, "internal error while generating", code="internal_error"))
            finally:
                with self._lock:
                    self._waiting -= 1
                    self._current = None

    def _drain(self) -> None:
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return
            if job is not _STOP:
                job.cancel()
                job.post("error", ApiError(503, "the server is shutting down", code="shutting_down"))

    def _run(self, job: Job) -> None:
        try:
            request = prepare_chat(self.model, **job.prepare_kwargs)
        except StructgenError as e:
            job.post("error", from_structgen(e, schema_param=job.schema_param))
            return
        job.post("prepared", request)
        stream = request.stream()
        try:
            for delta in stream:
                if job.cancelled:
                    self._count_cancelled()
                    return
                if job.stream_deltas:
                    job.post("delta", delta)
            result = stream.result
        except StructgenError as e:
            # prepare_chat has checked everything that depends on the request; a failure here is
            # the server's, and it is reported, never answered with output that does not validate
            log.error("generation failed: %s", e)
            job.post("error", ApiError(500, f"generation failed: {e}", code="generation_failed"))
            return
        finally:
            stream.close()
        job.post("done", result)
