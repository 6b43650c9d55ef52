"""Summaries and tables: raw per-token timings in, percentiles and Markdown tables out.

Per-token figures are in microseconds, compile times in milliseconds, preprocessing in seconds.
Ratios are structgen / best peer, where the best peer is the fastest (smallest) peer whose run of
that case passed (compiled, every valid instance accepted to the end); above 1 means structgen
is slower.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

MEASURES = [
    # key, header, unit formatter
    ("compile_ms", "compile ms"),
    ("first_mask_us", "first mask µs"),
    ("cold_p50_us", "cold p50"),
    ("cold_p99_us", "cold p99"),
    ("cold_max_us", "cold max"),
    ("warm_p50_us", "warm p50"),
    ("warm_p99_us", "warm p99"),
    ("warm_max_us", "warm max"),
    ("commit_p50_us", "commit p50"),
    ("rss_mb", "ΔRSS MB"),
]
RATIO_MEASURES = [
    "compile_ms",
    "first_mask_us",
    "cold_p50_us",
    "cold_p99_us",
    "cold_max_us",
    "warm_p50_us",
    "warm_p99_us",
    "commit_p50_us",
]


def pct(a: np.ndarray, q: float) -> float | None:
    return float(np.percentile(a, q)) / 1e3 if len(a) else None


def summarise(res: dict[str, Any]) -> dict[str, Any]:
    """One job's result (from the worker) as flat figures; raw arrays dropped."""
    keys = (
        "case",
        "group",
        "status",
        "error",
        "failures",
        "failed_walks",
        "walks_planned",
        "special_leaks",
        "leaked_ids",
    )
    out: dict[str, Any] = {k: res.get(k) for k in keys}
    out = {k: v for k, v in out.items() if v is not None}
    if "compile_s" in res:
        out["compile_ms"] = res["compile_s"] * 1e3
    if "first_mask_s" in res:
        out["first_mask_us"] = res["first_mask_s"] * 1e6
    for phase in ("cold", "warm", "hot"):
        log = res.get(phase)
        if not log:
            continue
        fill = log["fill_ns"]
        out[f"{phase}_p50_us"] = pct(fill, 50)
        out[f"{phase}_p99_us"] = pct(fill, 99)
        out[f"{phase}_max_us"] = float(fill.max()) / 1e3 if len(fill) else None
        out[f"{phase}_tokens"] = int(len(fill))
        if phase == "warm" and len(log["mask_words_ns"]):
            mw = log["mask_words_ns"]
            out["warm_mask_words_p50_us"] = pct(mw, 50)
            out["warm_mask_words_p99_us"] = pct(mw, 99)
            out["warm_mask_words_max_us"] = float(mw.max()) / 1e3
        if phase == "warm" and len(log["start_ns"]):
            out["start_p50_us"] = pct(log["start_ns"], 50)
    commits = np.concatenate([res[p]["commit_ns"] for p in ("cold", "warm") if res.get(p)] or [np.zeros(0, np.int64)])
    if len(commits):
        out["commit_p50_us"] = pct(commits, 50)
        out["commit_p99_us"] = pct(commits, 99)
    if "rss_growth_bytes" in res:
        out["rss_mb"] = res["rss_growth_bytes"] / 2**20
    if res.get("tracemalloc"):
        out["py_peak_kb"] = res["tracemalloc"].get("peak", 0) / 1024
        out["py_retained_kb"] = res["tracemalloc"].get("after_walk", 0) / 1024
    return out


#: figures of a summary that count things rather than measure them: equal in every run
_COUNTS = ("walks_planned", "failed_walks", "special_leaks")


def median_of_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Summaries of one schema run several times (``summarise``) as one: the median of each
    measured figure, the status of the first run that was not ok (else ok), every run's figures
    under ``runs``."""
    if len(runs) == 1:
        return runs[0]
    bad = [r for r in runs if r.get("status") != "ok"]
    out = dict(bad[0] if bad else runs[0])
    measured = sorted(
        {
            k
            for r in runs
            for k, v in r.items()
            if isinstance(v, (int, float))
            and not isinstance(v, bool)
            and k not in _COUNTS
            and not k.endswith("_tokens")
        }
    )
    per_run: dict[str, list[Any]] = {}
    for k in measured:
        vals = [r.get(k) for r in runs]
        per_run[k] = vals
        nums = [v for v in vals if v is not None]
        if nums:
            out[k] = float(np.median(nums))
    out["runs"] = per_run
    out["repeats"] = len(runs)
    return out


def pool(results: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Pooled figures over several jobs' raw results (MaskBench)."""
    results = list(results)
    out: dict[str, Any] = {"schemas": len(results)}
    compiles = np.asarray(
        [r["compile_s"] * 1e3 for r in results if "compile_s" in r and r.get("status") in ("ok", "rejected")]
    )
    if len(compiles):
        out["compile_ms_p50"] = float(np.percentile(compiles, 50))
        out["compile_ms_p90"] = float(np.percentile(compiles, 90))
        out["compile_ms_max"] = float(compiles.max())
    firsts = np.asarray([r["first_mask_s"] * 1e6 for r in results if "first_mask_s" in r])
    if len(firsts):
        out["first_mask_us_p50"] = float(np.percentile(firsts, 50))
    for phase in ("cold", "warm"):
        arrs = [r[phase]["fill_ns"] for r in results if r.get(phase)]
        fill = np.concatenate(arrs) if arrs else np.zeros(0, np.int64)
        if len(fill):
            out[f"{phase}_p50_us"] = pct(fill, 50)
            out[f"{phase}_p99_us"] = pct(fill, 99)
            out[f"{phase}_max_us"] = float(fill.max()) / 1e3
            out[f"{phase}_tokens"] = int(len(fill))
    arrs = [r[p]["commit_ns"] for r in results for p in ("cold", "warm") if r.get(p)]
    if arrs:
        out["commit_p50_us"] = pct(np.concatenate(arrs), 50)
    return out


def fmt(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v == 0:
            return "0"
        mag = math.floor(math.log10(abs(v)))
        if mag >= digits - 1:
            return f"{v:,.0f}"
        return f"{v:.{max(0, digits - 1 - mag)}f}"
    return str(v)


def table(headers: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(fmt(c) if not isinstance(c, str) else c for c in r) + " |")
    return "\n".join(lines)


def status_cell(s: dict[str, Any]) -> str:
    st = s.get("status", "?")
    leaks = f"; {s['special_leaks']} masks allowed special ids {s.get('leaked_ids')}" if s.get("special_leaks") else ""
    return _status(s, st) + leaks


def _status(s: dict[str, Any], st: str) -> str:
    if st == "ok":
        return "ok"
    if st == "rejected":
        f = (s.get("failures") or [{}])[0]
        after = (f.get("after") or "")[-16:].replace("|", "/").replace("\n", "\\n")
        return (
            f"REJECTED {s.get('failed_walks', 0)}/{s.get('walks_planned', 0)} walks "
            f"(first: {f.get('spacing')} instance {f.get('instance')}, "
            f"token {f.get('position')}/{f.get('tokens')} {f.get('token', '')[:20]} after `{after}`: {f.get('why')})"
        )
    if st == "skipped":
        return "skipped (no JSON Schema translator)"
    err = (s.get("error") or "").replace("|", "/").replace("\n", " ")
    return f"{st}: {err[:90]}"


def best_peer(entries: dict[str, dict[str, Any]], key: str) -> tuple[str, float] | None:
    best = None
    for eng, s in entries.items():
        if eng == "structgen" or s.get("status") != "ok":
            continue
        v = s.get(key)
        if v is None:
            continue
        if best is None or v < best[1]:
            best = (eng, v)
    return best


def ratio_cell(entries: dict[str, dict[str, Any]], key: str) -> tuple[str, float | None]:
    sg = entries.get("structgen")
    if not sg or sg.get("status") != "ok" or sg.get(key) is None:
        return "–", None
    bp = best_peer(entries, key)
    if bp is None or bp[1] <= 0:
        return "– (no peer)", None
    r = sg[key] / bp[1]
    return f"{fmt(r)} ({bp[0]})", r


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None
