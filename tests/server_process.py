"""The real ``python -m structgen serve`` process on a free loopback port, for tests: started, its
ready line awaited, its stderr drained (a full pipe must never block it), stopped at the end, and
any traceback it logged made a test failure."""

from __future__ import annotations

import os
import re
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
READY = re.compile(r"listening on (http://\S+)/v1 \(model (\S+)\)")


@contextmanager
def server_process(args: list[str], model_name: str, *, start_timeout: float = 180) -> Iterator[str]:
    """``structgen serve ARGS --port 0``; yields the base URL once it listens."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    command = [sys.executable, "-m", "structgen", "serve", *args, "--port", "0"]
    threads = os.environ.get("STRUCTGEN_THREADS")
    if threads:
        command += ["--threads", threads]
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1
    )
    errors: list[str] = []
    try:
        assert process.stdout is not None and process.stderr is not None
        url = None
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + start_timeout  # loading the model and the vocabulary
        while url is None and time.monotonic() < deadline and process.poll() is None:
            if selector.select(timeout=1):
                match = READY.search(process.stdout.readline())
                if match:
                    url = match.group(1)
                    assert match.group(2) == model_name
        if url is None:
            process.kill()
            pytest.fail(f"the server did not start: {process.stderr.read()[-2000:]}")
        stderr = process.stderr
        reader = threading.Thread(target=lambda: errors.extend(stderr), daemon=True)
        reader.start()
        yield url
        assert process.poll() is None, "the server died"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    assert not any("Traceback" in line for line in errors), "".join(errors)[-3000:]
