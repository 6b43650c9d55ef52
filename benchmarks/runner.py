"""The parent side of a worker process: start it, feed it jobs, enforce the timeouts.

A worker that runs past the compile timeout or the per-schema timeout is killed (native code
cannot be interrupted any other way) and the job is recorded as a timeout; the next job starts a
new worker, which prepares the vocabulary again (that second preparation is not reported). A
worker that dies (a segfault in an engine) is recorded as a crash the same way.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from typing import Any

from benchmarks.worker import worker_main


class WorkerRunner:
    def __init__(
        self, engine: str, vocab: str, path: str, options: dict[str, Any], prepare_timeout: float = 600.0
    ) -> None:
        self.engine = engine
        self.vocab = vocab
        self.path = path
        self.options = options
        self.prepare_timeout = prepare_timeout
        self.ctx = mp.get_context("spawn")
        self.proc: Any = None
        self.conn: Any = None
        self.info: dict[str, Any] | None = None  #: the first worker's "ready" report
        self.restarts = 0
        self.error: str | None = None

    # -- process lifetime ---------------------------------------------------------------------

    def _spawn(self) -> bool:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(
            target=worker_main, args=(child, self.engine, self.vocab, self.path, self.options), daemon=True
        )
        self.proc.start()
        child.close()
        self.conn = parent
        msg = self._wait(self.prepare_timeout)
        if msg is None or msg[0] != "ready":
            self.error = msg[1] if msg and msg[0] == "error" else "worker did not become ready (timeout or crash)"
            self._kill()
            return False
        if self.info is None:
            self.info = msg[1]
        return True

    def _wait(self, timeout: float) -> tuple[str, Any] | None:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                if self.conn.poll(min(left, 1.0)):
                    return self.conn.recv()
            except (EOFError, OSError):
                return None
            if not self.proc.is_alive() and not self.conn.poll(0):
                return None

    def _kill(self) -> None:
        if self.proc is not None:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join(10)
        if self.conn is not None:
            self.conn.close()
        self.proc = self.conn = None

    def start(self) -> bool:
        return self._spawn()

    def stop(self) -> None:
        if self.conn is not None:
            try:
                self.conn.send(None)
                self.proc.join(30)
            except (OSError, BrokenPipeError):
                pass
        self._kill()

    # -- jobs -----------------------------------------------------------------------------------

    def run(self, job: Any, compile_timeout: float, schema_timeout: float) -> dict[str, Any]:
        base = {"case": job.case, "group": job.group}
        if self.proc is None or not self.proc.is_alive():
            self.restarts += 1
            if not self._spawn():
                return {**base, "status": "worker_error", "error": self.error}
        started = time.monotonic()
        try:
            self.conn.send(job)
        except (OSError, BrokenPipeError):
            self._kill()
            return {**base, "status": "crash", "error": "worker pipe closed"}
        msg = self._wait(compile_timeout)
        if msg is None:
            crashed = self.proc is not None and not self.proc.is_alive()
            self._kill()
            if crashed:
                return {**base, "status": "crash", "error": "worker died while compiling"}
            return {**base, "status": "timeout", "error": f"compile ran past {compile_timeout:g} s"}
        if msg[0] == "error":
            self._kill()
            return {**base, "status": "crash", "error": msg[1]}
        left = max(1.0, schema_timeout - (time.monotonic() - started))
        done = self._wait(left)
        if done is None:
            crashed = self.proc is not None and not self.proc.is_alive()
            self._kill()
            status = "crash" if crashed else "timeout"
            out = {
                **base,
                "status": status,
                "error": f"schema ran past {schema_timeout:g} s" if status == "timeout" else "worker died",
            }
            if isinstance(msg[1], dict) and "compile_s" in msg[1]:
                out["compile_s"] = msg[1]["compile_s"]
            return out
        if done[0] != "done":
            self._kill()
            return {**base, "status": "crash", "error": str(done[1])[:500]}
        return done[1]
