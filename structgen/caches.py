"""Process-wide caches, registered in one place: what each holds, in entries and bytes, and clearing.

Every cache that outlives one object (a module's memo of built automata, the token tries per
vocabulary, the walks shared by the constraints of a process...) registers here when its module
is imported: a name, how many entries it holds, an estimate of its bytes and how to clear it.
:func:`stats` reports them all, :func:`clear` empties them all (a test that wants a cold start, a
server that wants its memory back). Caches owned by an object (a constraint's masks and tables,
a ``ConstraintCache``) are bounded by that object's limits and are not listed.

Bytes are estimates, each made the cheapest way its contents allow, and said at registration
(:func:`describe`): numpy arrays count their buffers, containers and small objects
:func:`sys.getsizeof` (:func:`deep_bytes`); a ``functools.lru_cache``, whose entries cannot be
read, counts its size times a per-entry figure measured on typical entries.

This module is the bottom layer: it imports nothing of structgen.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class _Cache:
    entries: Callable[[], int]
    nbytes: Callable[[], int]
    clear: Callable[[], None]
    estimate: str


_registry: dict[str, _Cache] = {}
_lock = threading.Lock()


def register(
    name: str,
    *,
    entries: Callable[[], int],
    nbytes: Callable[[], int],
    clear: Callable[[], None],
    estimate: str,
) -> None:
    """Register the cache ``name`` (a dotted name: the module's, then what it holds). Registering
    a name again replaces it (a module imported again registers its new cache)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a cache needs a name, not {name!r}")
    with _lock:
        _registry[name] = _Cache(entries, nbytes, clear, estimate)


def register_lru(name: str, func: Any, *, bytes_per_entry: int, estimate: str) -> None:
    """Register a ``functools.lru_cache``-wrapped ``func``: its size from ``cache_info``, its bytes
    as that size times ``bytes_per_entry`` (``estimate`` says where the figure comes from)."""
    register(
        name,
        entries=lambda: func.cache_info().currsize,
        nbytes=lambda: func.cache_info().currsize * bytes_per_entry,
        clear=func.cache_clear,
        estimate=f"{bytes_per_entry} bytes per entry: {estimate}",
    )


def register_dict(
    name: str, cache: dict[Any, Any], *, estimate: str = "deep_bytes of the dict", lock: Any = None
) -> None:
    """Register a module-level dict used as a cache: its length, :func:`deep_bytes` of it, and
    ``dict.clear`` (under ``lock`` where one guards it)."""

    def clear() -> None:
        if lock is None:
            cache.clear()
        else:
            with lock:
                cache.clear()

    def nbytes() -> int:
        if lock is None:
            snapshot = dict(cache)
        else:
            with lock:
                snapshot = dict(cache)
        return deep_bytes(snapshot) if snapshot else 0

    register(name, entries=lambda: len(cache), nbytes=nbytes, clear=clear, estimate=estimate)


def names() -> list[str]:
    """The registered caches, by name."""
    with _lock:
        return sorted(_registry)


def describe() -> dict[str, str]:
    """How each cache's bytes are estimated."""
    with _lock:
        return {name: c.estimate for name, c in sorted(_registry.items())}


def stats() -> dict[str, dict[str, int]]:
    """``{name: {"entries": n, "bytes": b}}`` for every registered cache (bytes estimated)."""
    with _lock:
        items = sorted(_registry.items())
    return {name: {"entries": int(c.entries()), "bytes": int(c.nbytes())} for name, c in items}


def total_bytes() -> int:
    """The estimated bytes of every registered cache together."""
    return sum(s["bytes"] for s in stats().values())


def clear(name: str | None = None) -> None:
    """Empty every registered cache, or the one named (KeyError for a name not registered)."""
    with _lock:
        targets = list(_registry.values()) if name is None else [_registry[name]]
    for cache in targets:
        cache.clear()


def deep_bytes(obj: object, *, limit: int = 1_000_000) -> int:
    """An estimate of the bytes ``obj`` holds: :func:`sys.getsizeof` of it and of everything it
    reaches through containers, ``__dict__`` and ``__slots__``, each object once (a numpy array
    that owns its data counts its buffer there; a view counts its base once). Classes, modules
    and functions are not followed (they are the program, not the cache). At most ``limit``
    objects are visited: a very large cache is under-counted rather than walked for long."""
    seen: set[int] = set()
    total = 0
    stack = [obj]
    visited = 0
    while stack and visited < limit:
        o = stack.pop()
        if id(o) in seen or isinstance(o, _NOT_FOLLOWED):
            continue
        seen.add(id(o))
        visited += 1
        total += sys.getsizeof(o)
        if isinstance(o, np.ndarray):
            if o.base is not None:
                stack.append(o.base)
        elif isinstance(o, (str, bytes, bytearray, int, float, complex, memoryview, range)):
            continue
        elif isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        else:
            d = getattr(o, "__dict__", None)
            if isinstance(d, dict):
                stack.append(d)
            for klass in type(o).__mro__:
                for slot in klass.__dict__.get("__slots__", ()):
                    if isinstance(slot, str) and slot not in ("__dict__", "__weakref__"):
                        value = getattr(o, slot, None)
                        if value is not None:
                            stack.append(value)
    return total


_NOT_FOLLOWED = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)
