"""Room for the recursion of derivatives on deeply nested grammars, and a clear error past it.

Derivatives, nullability and byte classes recurse over a term's head; a schema nested hundreds of
levels deep makes terms that deep. The engine's entry points run under :func:`deep_recursion`,
which raises Python's recursion limit for the call (pure Python frames do not use the C stack on
CPython 3.11+) and turns a RecursionError into a LimitError that names the limit.
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any, Callable, TypeVar

from ..errors import LimitError

F = TypeVar("F", bound=Callable[..., Any])

RECURSION_LIMIT = 20_000
_lock = threading.Lock()


def deep_recursion(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if sys.getrecursionlimit() < RECURSION_LIMIT:  # raised once; the lock only to raise it
            with _lock:
                if sys.getrecursionlimit() < RECURSION_LIMIT:
                    sys.setrecursionlimit(RECURSION_LIMIT)
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            raise LimitError("grammar nested too deeply for the mask engine", limit="max_nesting") from None

    return wrapper  # type: ignore[return-value]
