"""Compiled constraints shared across requests, one per (grammar, vocabulary fingerprint).

What a constraint holds - automaton transitions and masks - is worth keeping: the next request
with the same schema and model reuses all of it. A :class:`ConstraintCache` keeps constraints in
LRU order, bounded by a count and by the bytes they hold (:meth:`Constraint.memory_bytes`, which
grows as they serve requests, so the bound is checked on every lookup). The constraint a lookup
returns is never the one evicted.

A first request must not wait for precomputation, and later ones should not pay for masks met for
the first time. So a miss returns a dynamic (lazy) constraint at once and, with
``compile_ahead``, queues the same grammar for an ahead-of-time compile (``mode="aot"``) on one
background thread; when it finishes, the compiled constraint replaces the dynamic one for the
requests that start afterwards (a request in flight keeps the constraint it started on: a state
belongs to one constraint). With ``disk_dir``, compiled constraints are also saved there, keyed by
the grammar's and the vocabulary's fingerprints and sealed with an HMAC key kept in that
directory, so another process starts with them compiled: a saved compiled constraint holds its
per-position parts and its report, and is not compiled again (one saved before those were kept is
served at once and compiled again in the background); a file that fails to load is deleted and
recompiled, never served. :func:`constraint_for` uses the process's default
cache; :func:`configure` sets its tuning.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import secrets
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import caches
from .engine import Constraint, EngineLimits
from .errors import LimitError, StructgenError
from .grammar.serialize import grammar_to_data

if TYPE_CHECKING:
    from .grammar import Grammar
    from .vocab import Vocab


@dataclass(frozen=True)
class ConstraintCacheTuning:
    """Bounds and policy of a :class:`ConstraintCache`.

    ``max_constraints``: 32 covers the schemas of an agent's tool set, its response formats and
    the server's recent requests. ``max_bytes``: 2 GiB, half of one constraint's own default
    ``EngineLimits.max_memory_bytes``: a 24 GB machine serving with a model loaded keeps room.
    ``compile_ahead``: compile each new grammar ahead of time in the background (see the module
    docstring). ``ahead_deadline_s``: an ahead-of-time compile past this many seconds is dropped
    and the dynamic constraint kept (it stays exact, only slower on first meetings).
    ``max_pending``: grammars waiting for the background compile; more are not queued (a burst of
    one-off schemas must not build an unbounded backlog). ``disk_dir``: where compiled
    constraints are kept between processes (None: nowhere); ``max_disk_bytes`` bounds the files
    there, the oldest removed first.
    """

    max_constraints: int = 32
    max_bytes: int = 2 << 30
    compile_ahead: bool = True
    ahead_deadline_s: float = 60.0
    max_pending: int = 64
    disk_dir: str | None = None
    max_disk_bytes: int = 1 << 30

    def __post_init__(self) -> None:
        for name in ("max_constraints", "max_bytes", "max_pending", "max_disk_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise LimitError(f"{name} must be a positive integer, not {value!r}", limit=name)
        if not isinstance(self.compile_ahead, bool):
            raise LimitError(f"compile_ahead must be a bool, not {self.compile_ahead!r}", limit="compile_ahead")
        deadline = self.ahead_deadline_s
        if isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or not deadline > 0:
            raise LimitError(f"ahead_deadline_s must be a positive number, not {deadline!r}", limit="ahead_deadline_s")
        if self.disk_dir is not None and not isinstance(self.disk_dir, (str, os.PathLike)):
            raise LimitError(f"disk_dir must be a path or None, not {self.disk_dir!r}", limit="disk_dir")


def grammar_fingerprint(grammar: Grammar) -> str:
    """A stable digest of ``grammar`` (its serialised rules), the same in every process."""
    text = json.dumps(grammar_to_data(grammar), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ConstraintCache:
    """An LRU of constraints per (grammar, vocabulary), bounded in count and bytes, upgraded to
    ahead-of-time compiled constraints in the background."""

    def __init__(self, tuning: ConstraintCacheTuning = ConstraintCacheTuning()) -> None:
        self.tuning = tuning
        self._cache: OrderedDict[tuple[Grammar, str], Constraint] = OrderedDict()
        self._compiled: set[tuple[Grammar, str]] = set()
        self._lock = threading.Lock()
        self._pending: queue.Queue[tuple[Grammar, Vocab] | None] = queue.Queue()
        self._queued: set[tuple[Grammar, str]] = set()
        self._worker: threading.Thread | None = None
        self._idle = threading.Condition(self._lock)
        self.hits = 0
        self.misses = 0
        self.disk_hits = 0
        self.compiled_ahead = 0
        self.ahead_failures = 0

    # -- lookups --------------------------------------------------------------------------

    def get(self, grammar: Grammar, vocab: Vocab) -> Constraint:
        """The cached constraint for ``grammar`` and ``vocab``: on a miss, the compiled one from
        disk if there is one, else a dynamic one compiled now (and queued for the ahead-of-time
        compile)."""
        key = (grammar, vocab.fingerprint)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self.hits += 1
                self._cache.move_to_end(key)
                self._evict()
                return hit
        compiled = self._from_disk(grammar, vocab)
        found = compiled is not None
        # a saved compiled constraint holds what its compile ahead computed (its per-position
        # parts, restored with its report): it is compiled. One without a report (a dynamic one,
        # or one saved before the parts were) serves at once and is compiled in the background
        ahead = compiled is not None and compiled.report is not None
        if compiled is None:
            compiled = Constraint.compile(grammar, vocab)
        with self._lock:
            self.misses += 1
            self.disk_hits += found
            hit = self._cache.setdefault(key, compiled)
            self._cache.move_to_end(key)
            if ahead and hit is compiled:
                self._compiled.add(key)
            self._evict()
            if key not in self._compiled:
                self._queue(key, grammar, vocab)
        return hit

    def is_compiled(self, grammar: Grammar, vocab: Vocab) -> bool:
        """Whether the constraint a lookup now returns was compiled ahead of time."""
        with self._lock:
            return (grammar, vocab.fingerprint) in self._compiled

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no ahead-of-time compile is queued or running; False if ``timeout`` passed."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._queued, timeout)

    def _evict(self) -> None:
        cache = self._cache
        while len(cache) > self.tuning.max_constraints:
            self._compiled.discard(cache.popitem(last=False)[0])
        held = sum(c.memory_bytes() for c in cache.values())
        while len(cache) > 1 and held > self.tuning.max_bytes:
            key, oldest = cache.popitem(last=False)
            self._compiled.discard(key)
            held -= oldest.memory_bytes()

    # -- the background compile -----------------------------------------------------------

    def _queue(self, key: tuple[Grammar, str], grammar: Grammar, vocab: Vocab) -> None:
        # called with the lock held
        if not self.tuning.compile_ahead or key in self._queued or len(self._queued) >= self.tuning.max_pending:
            return
        self._queued.add(key)
        self._pending.put((grammar, vocab))
        if self._worker is None or not self._worker.is_alive():
            # a daemon: a process that exits does not wait for compiles nobody will use
            self._worker = threading.Thread(target=self._work, name="structgen-compile-ahead", daemon=True)
            self._worker.start()

    def _work(self) -> None:
        while True:
            try:
                item = self._pending.get(timeout=5.0)
            except queue.Empty:
                with self._lock:
                    if self._pending.empty():
                        self._worker = None
                        return
                continue
            if item is None:
                return
            grammar, vocab = item
            key = (grammar, vocab.fingerprint)
            compiled: Constraint | None = None
            try:
                limits = EngineLimits(deadline_s=self.tuning.ahead_deadline_s)
                compiled = Constraint.compile(grammar, vocab, mode="aot", limits=limits)
            except StructgenError:
                # past the deadline or a limit: the dynamic constraint serves, exactly as before
                pass
            with self._lock:
                if compiled is None:
                    self.ahead_failures += 1
                elif key in self._cache:
                    self._cache[key] = compiled  # keeps its place in the LRU order
                    self._compiled.add(key)
                    self.compiled_ahead += 1
                    self._evict()
            if compiled is not None:
                self._to_disk(grammar, vocab, compiled)
            with self._idle:
                self._queued.discard(key)
                self._idle.notify_all()

    # -- the on-disk store ----------------------------------------------------------------

    def _path(self, grammar: Grammar, vocab: Vocab) -> Path | None:
        if self.tuning.disk_dir is None:
            return None
        digest = hashlib.sha256(f"{grammar_fingerprint(grammar)}\0{vocab.fingerprint}".encode()).hexdigest()
        return Path(self.tuning.disk_dir) / f"{digest[:32]}.sgc"

    def _disk_key(self) -> bytes | None:
        """The HMAC key files in ``disk_dir`` are sealed with (made on first use, owner-only)."""
        directory = Path(self.tuning.disk_dir)  # type: ignore[arg-type]
        path = directory / "seal.key"
        try:
            return path.read_bytes()
        except FileNotFoundError:
            pass
        except OSError:
            return None
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32))
            return path.read_bytes()
        except FileExistsError:
            return path.read_bytes()
        except OSError:
            return None

    def _from_disk(self, grammar: Grammar, vocab: Vocab) -> Constraint | None:
        path = self._path(grammar, vocab)
        if path is None or not path.is_file():
            return None
        key = self._disk_key()
        if key is None:
            return None
        try:
            return Constraint.load(path.read_bytes(), vocab, key=key)
        except (StructgenError, OSError):
            # damaged, altered or from another version: never served; compiled again
            try:
                path.unlink()
            except OSError:
                pass
            return None

    def _to_disk(self, grammar: Grammar, vocab: Vocab, compiled: Constraint) -> None:
        path = self._path(grammar, vocab)
        key = self._disk_key() if path is not None else None
        if path is None or key is None:
            return
        try:
            blob = compiled.save(key=key)
            if len(blob) > self.tuning.max_disk_bytes:
                return
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, path)
            self._trim_disk(path.parent)
        except (StructgenError, OSError):
            # a store that cannot be written only costs the next process a compile
            return

    def _trim_disk(self, directory: Path) -> None:
        files = sorted(directory.glob("*.sgc"), key=lambda p: p.stat().st_mtime)
        total = sum(p.stat().st_size for p in files)
        for oldest in files:
            if total <= self.tuning.max_disk_bytes:
                break
            total -= oldest.stat().st_size
            oldest.unlink(missing_ok=True)

    # -- housekeeping ---------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """Constraints held, their bytes, how many are compiled ahead, hits, misses and the
        background compile's counts."""
        with self._lock:
            held = sum(c.memory_bytes() for c in self._cache.values())
            return {
                "constraints": len(self._cache),
                "bytes": held,
                "compiled": len(self._compiled),
                "hits": self.hits,
                "misses": self.misses,
                "disk_hits": self.disk_hits,
                "pending": len(self._queued),
                "compiled_ahead": self.compiled_ahead,
                "ahead_failures": self.ahead_failures,
            }

    def clear(self) -> None:
        """Forget every cached constraint (compiles under way finish and are dropped)."""
        with self._lock:
            self._cache.clear()
            self._compiled.clear()


#: The process's cache, used by every front end.
DEFAULT_CACHE = ConstraintCache()
caches.register(
    "constraint_cache.default",
    entries=lambda: DEFAULT_CACHE.stats()["constraints"],
    nbytes=lambda: DEFAULT_CACHE.stats()["bytes"],
    clear=DEFAULT_CACHE.clear,
    estimate="Constraint.memory_bytes() of each constraint held",
)


def configure(tuning: ConstraintCacheTuning) -> None:
    """Set the default cache's tuning (it takes effect for the lookups that follow; what is
    cached stays)."""
    if not isinstance(tuning, ConstraintCacheTuning):
        raise LimitError(f"configure takes a ConstraintCacheTuning, not {type(tuning).__name__}", limit="tuning")
    DEFAULT_CACHE.tuning = tuning


def constraint_for(grammar: Grammar, vocab: Vocab) -> Constraint:
    """The :class:`~structgen.engine.Constraint` for ``grammar`` and ``vocab`` from the default cache."""
    return DEFAULT_CACHE.get(grammar, vocab)


def clear() -> None:
    """Forget every constraint of the default cache."""
    DEFAULT_CACHE.clear()
