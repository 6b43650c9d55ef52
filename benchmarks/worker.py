"""The measuring side: one process per (engine, vocabulary), driven over a pipe.

Running each engine in its own process keeps their memory apart (RSS growth is that engine's
alone) and lets the parent kill a compile or a walk that runs past its timeout, native code
included. Messages: the parent sends a :class:`~benchmarks.inputs.Job` (or ``None`` to stop); the
worker answers ``("compiled", info)`` as soon as the compile returns, then ``("done", result)``.

Per job: compile once (timed), then a COLD walk along the first walk (first use of the freshly
compiled grammar: ``start()`` plus every mask and commit timed), then WARM walks along every walk
of the job again. Each step fills a zeroed int32 row, checks that the instance's next token is in
the mask, and commits it; after the last token, the end-of-generation token must be allowed and
committed. A refusal is recorded as a failure and ends that walk; nothing raises out of a walk.
"""

from __future__ import annotations

import gc
import os
import resource
import shutil
import sys
import tempfile
import time
import tracemalloc
from typing import Any

import numpy as np

_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class WalkLog:
    """Per-token timings (ns) of some walks, and their failures."""

    def __init__(self) -> None:
        self.fill: list[int] = []
        self.mask_words: list[int] = []
        self.commit: list[int] = []
        self.start: list[int] = []
        self.walks = 0
        self.tokens = 0
        self.failures: list[dict[str, Any]] = []
        self.special_leaks = 0  #: masks that allowed a special (non-end) token or padding
        self.leaked_ids: list[int] = []

    def arrays(self) -> dict[str, Any]:
        return {
            "fill_ns": np.asarray(self.fill, dtype=np.int64),
            "mask_words_ns": np.asarray(self.mask_words, dtype=np.int64),
            "commit_ns": np.asarray(self.commit, dtype=np.int64),
            "start_ns": np.asarray(self.start, dtype=np.int64),
            "walks": self.walks,
            "tokens": self.tokens,
            "failures": self.failures,
            "special_leaks": self.special_leaks,
            "leaked_ids": self.leaked_ids,
        }


def run_walk(
    engine: Any,
    compiled: Any,
    walk: Any,
    eos: int,
    row: np.ndarray,
    log: WalkLog,
    vd: Any,
    never: np.ndarray | None = None,
    time_mask_words: bool = True,
) -> int | None:
    """Walk one instance; returns the first mask's time (start + fill, ns), None on failure.

    ``never``: packed ids no mask may contain (special tokens, padding); checked untimed.
    ``time_mask_words``: also time structgen's ``mask_words()`` after each fill."""
    now = time.perf_counter_ns
    mask_words = getattr(engine, "mask_words", None) if time_mask_words else None
    ids = list(walk.ids) + [eos]
    log.walks += 1
    t0 = now()
    state = engine.start(compiled)
    t_start = now() - t0
    log.start.append(t_start)
    first = None
    for pos, tok in enumerate(ids):
        row.fill(0)
        t = now()
        engine.fill(state, row)
        dt = now() - t
        log.fill.append(dt)
        if first is None:
            first = t_start + dt
        if never is not None:
            leak = np.bitwise_and(row, never)
            if leak.any():
                log.special_leaks += 1
                if not log.leaked_ids:
                    log.leaked_ids = np.flatnonzero(np.unpackbits(leak.view(np.uint8), bitorder="little"))[:10].tolist()
        if mask_words is not None:
            t = now()
            mask_words(state)
            log.mask_words.append(now() - t)
        if not (int(row[tok >> 5]) >> (tok & 31)) & 1:
            log.failures.append(_failure(walk, pos, tok, len(ids), "token not in mask", vd))
            return None
        t = now()
        ok = engine.commit(state, tok)
        log.commit.append(now() - t)
        log.tokens += 1
        if not ok:
            log.failures.append(_failure(walk, pos, tok, len(ids), "commit refused", vd))
            return None
    return first


def _failure(walk: Any, pos: int, tok: int, n: int, why: str, vd: Any) -> dict[str, Any]:
    before = b"".join(vd.tokens[i] for i in walk.ids[max(0, pos - 6) : pos])
    what = "EOS" if pos == n - 1 else repr(vd.tokens[tok])
    return {
        "instance": walk.instance,
        "spacing": walk.spacing,
        "position": pos,
        "tokens": n,
        "token": what,
        "after": before.decode("utf-8", "replace")[-40:],
        "why": why,
    }


def _compile(engine: Any, job: Any, result: dict[str, Any], send: Any, *, time_skips: bool) -> Any:
    """The engine's compiled object for ``job``, its time in ``result["compile_s"]`` and told to
    the parent; None where the engine refused or failed (the status and error are in ``result``).
    ``time_skips``: whether a schema the engine skips has its time recorded too."""
    from benchmarks.engines import CompileError

    now = time.perf_counter_ns
    t = now()
    try:
        compiled = engine.compile(job.schema)
    except CompileError as e:
        status = "skipped" if str(e).startswith("skipped:") else "compile_error"
        result.update(status=status, error=str(e))
        if status == "compile_error" or time_skips:
            result["compile_s"] = (now() - t) / 1e9
        send(("compiled", {"error": str(e)}))
        return None
    except Exception as e:  # noqa: BLE001 - an engine bug must not end the run
        result.update(status="compile_error", error=f"{type(e).__name__}: {e}"[:300], compile_s=(now() - t) / 1e9)
        send(("compiled", {"error": str(e)[:300]}))
        return None
    result["compile_s"] = (now() - t) / 1e9
    send(("compiled", {"compile_s": result["compile_s"]}))
    return compiled


def measure_job(engine: Any, job: Any, vd: Any, options: dict[str, Any], send: Any) -> dict[str, Any]:

    walks = [w for w in job.walks if w.spacing in engine.spacings]
    result: dict[str, Any] = {"case": job.case, "group": job.group, "walks_planned": len(walks)}
    gc.collect()
    rss0 = rss_bytes()
    compiled = _compile(engine, job, result, send, time_skips=False)
    if compiled is None:
        return result
    row = np.zeros(vd.words, dtype=np.int32)
    eos = vd.primary_eos
    never = vd.never_words()
    cold, warm = WalkLog(), WalkLog()
    if walks:
        gc.collect()
        first = run_walk(engine, compiled, walks[0], eos, row, cold, vd, never)
        result["first_mask_s"] = cold.start[0] / 1e9 + (cold.fill[0] / 1e9 if cold.fill else 0.0)
        del first
        for w in walks:
            gc.collect()
            run_walk(engine, compiled, w, eos, row, warm, vd, never)
    if options.get("hot") and walks:
        hot = WalkLog()  # a third pass: every configuration of these walks has been met before
        for w in walks:
            gc.collect()
            run_walk(engine, compiled, w, eos, row, hot, vd, never)
        result["hot"] = hot.arrays()
    result["cold"] = cold.arrays()
    result["warm"] = warm.arrays()
    failures = cold.failures + warm.failures
    result["status"] = "ok" if not failures else "rejected"
    result["failures"] = failures[:5]
    result["failed_walks"] = len(warm.failures)
    result["special_leaks"] = cold.special_leaks + warm.special_leaks
    result["leaked_ids"] = cold.leaked_ids or warm.leaked_ids
    gc.collect()
    result["rss_growth_bytes"] = rss_bytes() - rss0
    del compiled
    if options.get("tracemalloc") and job.group == "schemas" and walks:
        result["tracemalloc"] = traced_pass(engine, job, walks[0], vd)
    return result


def _release_free_memory() -> None:
    """Hand freed heap pages back to the system (glibc), so that an RSS difference measures what
    is held rather than what an earlier schema left free for reuse."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _held_rss() -> int:
    gc.collect()
    _release_free_memory()
    return rss_bytes()


def measure_stream(engine: Any, job: Any, vd: Any, send: Any, kept: dict[str, Any]) -> dict[str, Any]:
    """One schema of the stream: one compile (timed), then every walk once on that compiled
    object, every mask and commit timed (``start()`` too, apart), the first request included.

    A walk the engine refuses ends at the refusal (its masks so far still count) and the stream
    goes on with the next request. Memory: RSS held after the compile and after the stream, less
    RSS before the compile (glibc's free pages handed back each time), and for structgen also
    ``Constraint.memory_bytes()``."""

    result: dict[str, Any] = {"case": job.case, "group": job.group, "walks_planned": len(job.walks)}
    rss0 = _held_rss()
    compiled = _compile(engine, job, result, send, time_skips=True)
    if compiled is None:
        return result
    result["rss_after_compile_bytes"] = _held_rss() - rss0
    memory_bytes = getattr(compiled, "memory_bytes", None)
    if memory_bytes is not None:
        result["memory_bytes_after_compile"] = int(memory_bytes())
    row = np.zeros(vd.words, dtype=np.int32)
    never = vd.never_words()
    walks_out = []
    leaks, leaked, failures = 0, [], []
    stop_at = time.monotonic() + job.walk_cap_s
    for w in job.walks:
        if time.monotonic() > stop_at:
            result["capped"] = True
            break
        gc.collect()  # between requests, as in the other modes: a collection inside a walk still counts
        log = WalkLog()
        ok = run_walk(engine, compiled, w, vd.primary_eos, row, log, vd, never, time_mask_words=False) is not None
        walks_out.append(
            {
                "instance": w.instance,
                "ok": ok,
                "fill_ns": np.asarray(log.fill, dtype=np.int64),
                "commit_ns": np.asarray(log.commit, dtype=np.int64),
                "start_ns": int(log.start[0]),
            }
        )
        failures += log.failures
        leaks += log.special_leaks
        leaked = leaked or log.leaked_ids
    result["walks"] = walks_out
    result["failures"] = failures[:5]
    result["rejected_walks"] = sum(1 for w in walks_out if not w["ok"])
    result["special_leaks"] = leaks
    result["leaked_ids"] = leaked
    result["status"] = "ok"
    result["rss_after_stream_bytes"] = _held_rss() - rss0
    if memory_bytes is not None:
        result["memory_bytes_after_stream"] = int(memory_bytes())
    if job.keep:
        kept[job.case] = compiled
    del compiled
    return result


def measure_batch(job: Any, vd: Any, send: Any, kept: dict[str, Any]) -> dict[str, Any]:
    """``fill_bitmasks`` against single fills on the constraints kept from the stream."""
    from benchmarks.batch_bitmask import time_fill_bitmasks

    send(("compiled", {}))
    rows = [(kept[case], ids) for case, ids in job.requests if case in kept]
    result: dict[str, Any] = {"case": job.case, "group": job.group}
    if not rows:
        return {**result, "status": "skipped", "error": "no constraint kept"}
    gc.collect()
    result.update(time_fill_bitmasks(rows, vd.words, job.steps))
    result["schemas"] = len({case for case, _ids in job.requests if case in kept})
    result["status"] = "ok"
    return result


def traced_pass(engine: Any, job: Any, walk: Any, vd: Any) -> dict[str, int]:
    """Python-side memory of a fresh compile and one walk (untimed: tracemalloc slows Python)."""
    gc.collect()
    tracemalloc.start()
    try:
        compiled = engine.compile(job.schema)
        after_compile = tracemalloc.get_traced_memory()[0]
        run_walk(engine, compiled, walk, vd.primary_eos, np.zeros(vd.words, dtype=np.int32), WalkLog(), vd)
        current, peak = tracemalloc.get_traced_memory()
    except Exception:  # noqa: BLE001
        return {}
    finally:
        tracemalloc.stop()
    return {"after_compile": after_compile, "after_walk": current, "peak": peak}


def worker_main(conn: Any, engine_name: str, vocab_name: str, path: str, options: dict[str, Any]) -> None:
    root = options["repo_root"]
    if root not in sys.path:
        sys.path.insert(0, root)
    structgen_root = options.get("structgen_root")
    if structgen_root:
        # the benchmark's own modules first, then structgen from the other checkout ahead of them
        import benchmarks.engines  # noqa: F401
        import benchmarks.inputs  # noqa: F401

        sys.path.insert(0, structgen_root)
    temp_cache = None
    try:
        is_structgen = engine_name.startswith("structgen")
        if is_structgen:
            # a fresh cache directory: the first preprocessing is cold
            temp_cache = tempfile.mkdtemp(prefix="structgen-bench-cache-")
            os.environ["STRUCTGEN_CACHE_DIR"] = temp_cache
        rss_start = rss_bytes()
        t = time.perf_counter_ns()
        from benchmarks.engines import make_engine, vocab_data

        engine = make_engine(engine_name, options)
        engine.version()  # imports the engine's package
        import_s = (time.perf_counter_ns() - t) / 1e9
        if is_structgen:
            from benchmarks.engines import VocabData

            gc.collect()
            rss0 = rss_bytes()
            parts = engine.prepare(VocabData(vocab_name, path, [], np.zeros(0, bool), {}, [], 0, 0))
            prep_s = parts["cold_s"]
            vd = vocab_data(vocab_name, path)
        else:
            vd = vocab_data(vocab_name, path)
            gc.collect()
            rss0 = rss_bytes()
            parts = engine.prepare(vd)
            # the engine's own calls only: not the adaptation of the shared token list, nor
            # loading llama.cpp's tokenizer for llguidance (the model runtime has it loaded)
            prep_s = sum(v for k, v in parts.items() if k.endswith("_s"))
        gc.collect()
        info = {
            "version": engine.version(),
            "import_s": import_s,
            "prepare_s": prep_s,
            "prepare_parts": parts,
            "rss_import_bytes": rss0 - rss_start,
            "rss_prepare_bytes": rss_bytes() - rss0,
        }
        conn.send(("ready", info))
        from benchmarks.inputs import BatchJob, StreamJob

        kept: dict[str, Any] = {}  # compiled objects a StreamJob asked to keep, by case
        while True:
            job = conn.recv()
            if job is None:
                break
            if isinstance(job, StreamJob):
                result = measure_stream(engine, job, vd, conn.send, kept)
            elif isinstance(job, BatchJob):
                result = measure_batch(job, vd, conn.send, kept)
            else:
                result = measure_job(engine, job, vd, options, conn.send)
            result["rss_total_bytes"] = rss_bytes()
            result["peak_rss_bytes"] = peak_rss_bytes()
            conn.send(("done", result))
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        pass
    except Exception as e:  # noqa: BLE001 - tell the parent, then stop
        import traceback

        try:
            conn.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}"))
        except (OSError, BrokenPipeError):
            pass
    finally:
        if temp_cache:
            shutil.rmtree(temp_cache, ignore_errors=True)
