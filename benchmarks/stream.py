"""The stream mode of ``bench_masks.py`` (``--stream``): one compiled object per engine and schema,
then a stream of distinct requests on it, as a server that compiled a schema once meets them.

Per schema (the named ones, then a seeded MaskBench sample), every engine in turn (each in its own
worker process, all kept alive, so the engines interleave schema by schema): compile (timed), then
walk each of the schema's requests (:mod:`benchmarks.stream_instances`) once, in the same order and
on the same token ids for every engine (the vocabulary's tokenizer, once per text), timing every
mask fill and commit, the first request's included. Figures per engine and schema: compile time,
memory, masks, p50 / p99 / p99.9 / max / mean per mask. Ratios structgen / peer per schema are over
the requests both engines walked to the end (the same masks), with geometric means over schemas.
Last, the structgen workers time ``fill_bitmasks`` for a batch of states of different schemas
against one ``fill_bitmask`` call per state, on the constraints the stream compiled.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import pathlib
import subprocess
import sys
import time
from typing import Any

import numpy as np

from benchmarks import report
from benchmarks.engines import vocab_data
from benchmarks.inputs import (
    SCHEMAS_DIR,
    BatchJob,
    Case,
    StreamJob,
    Tokenizer,
    Walk,
    load_named_schemas,
    maskbench_cases,
    maskbench_sample,
    vocab_path,
)
from benchmarks.runner import WorkerRunner
from benchmarks.stream_instances import InstanceGenerator, StreamSet, StreamTuning, stream_set

RESULTS_DIR = pathlib.Path(__file__).resolve().parent / "results"
FIGURES = ("compile_ms", "memory_bytes", "p50_us", "p99_us", "p999_us", "max_us", "mean_us")
FIGURE_HEADERS = {
    "compile_ms": "compile",
    "memory_bytes": "memory",
    "p50_us": "p50",
    "p99_us": "p99",
    "p999_us": "p99.9",
    "max_us": "max",
    "mean_us": "mean",
}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


# -- figures ---------------------------------------------------------------------------------------


def mask_figures(fills: np.ndarray) -> dict[str, Any]:
    """Per-mask figures (µs) of an array of fill times (ns)."""
    if not len(fills):
        return {"masks": 0}
    us = fills / 1e3
    return {
        "masks": int(len(fills)),
        "p50_us": float(np.percentile(us, 50)),
        "p99_us": float(np.percentile(us, 99)),
        "p999_us": float(np.percentile(us, 99.9)),
        "max_us": float(us.max()),
        "mean_us": float(us.mean()),
    }


def summarise_stream(res: dict[str, Any]) -> dict[str, Any]:
    """One engine's result on one schema as flat figures, plus a line per request."""
    keep = ("status", "error", "walks_planned", "rejected_walks", "capped", "special_leaks", "leaked_ids", "failures")
    out: dict[str, Any] = {k: res[k] for k in keep if res.get(k) is not None}
    if "compile_s" in res:
        out["compile_ms"] = res["compile_s"] * 1e3
    walks = res.get("walks") or []
    if res.get("status") != "ok":
        return out
    out["walks"] = len(walks)
    fills = np.concatenate([w["fill_ns"] for w in walks]) if walks else np.zeros(0, np.int64)
    commits = np.concatenate([w["commit_ns"] for w in walks]) if walks else np.zeros(0, np.int64)
    out.update(mask_figures(fills))
    if len(commits):
        out["commit_p50_us"] = float(np.percentile(commits, 50)) / 1e3
        out["commit_mean_us"] = float(commits.mean()) / 1e3
    if walks:
        out["start_p50_us"] = float(np.median([w["start_ns"] for w in walks])) / 1e3
        first = walks[0]["fill_ns"]
        if len(first):
            out["first_request_mean_us"] = float(first.mean()) / 1e3
            out["first_request_max_us"] = float(first.max()) / 1e3
    for k in ("rss_after_compile_bytes", "rss_after_stream_bytes", "memory_bytes_after_compile"):
        if k in res:
            out[k] = res[k]
    if "memory_bytes_after_stream" in res:
        out["memory_bytes"] = res["memory_bytes_after_stream"]
        out["memory_source"] = "Constraint.memory_bytes() after the stream"
    elif "rss_after_stream_bytes" in res:
        out["memory_bytes"] = res["rss_after_stream_bytes"]
        out["memory_source"] = "RSS held after the stream, less before the compile"
    out["per_request"] = [
        [
            w["instance"],
            int(len(w["fill_ns"])),
            bool(w["ok"]),
            float(w["fill_ns"].mean()) / 1e3 if len(w["fill_ns"]) else None,
            float(w["fill_ns"].max()) / 1e3 if len(w["fill_ns"]) else None,
        ]
        for w in walks
    ]
    return out


def pair_ratios(sg: dict[str, Any], peer: dict[str, Any], sg_raw: dict[str, Any], peer_raw: dict[str, Any]) -> dict:
    """structgen / peer on one schema: per-mask figures over the requests both walked to the end,
    compile time, and memory (structgen's ``memory_bytes()`` over the peer's held RSS)."""
    if sg.get("status") != "ok" or peer.get("status") != "ok":
        return {}
    ok_sg = {w["instance"]: w["fill_ns"] for w in sg_raw.get("walks", []) if w["ok"]}
    ok_peer = {w["instance"]: w["fill_ns"] for w in peer_raw.get("walks", []) if w["ok"]}
    common = sorted(set(ok_sg) & set(ok_peer))
    out: dict[str, Any] = {"common_requests": len(common)}
    if sg.get("compile_ms") and peer.get("compile_ms"):
        out["compile_ms"] = sg["compile_ms"] / peer["compile_ms"]
    if sg.get("memory_bytes") and (peer.get("memory_bytes") or 0) > 0:
        out["memory_bytes"] = sg["memory_bytes"] / peer["memory_bytes"]
    if common:
        a = mask_figures(np.concatenate([ok_sg[i] for i in common]))
        b = mask_figures(np.concatenate([ok_peer[i] for i in common]))
        for k in ("p50_us", "p99_us", "p999_us", "max_us", "mean_us"):
            if a.get(k) and b.get(k):
                out[k] = a[k] / b[k]
    return out


# -- the run ----------------------------------------------------------------------------------------


def build_stream_jobs(
    cases: list[Case], sets: list[StreamSet], tok: Tokenizer, walk_cap_s: float
) -> tuple[list[StreamJob], dict[str, Any]]:
    jobs, info = [], {}
    for case, ss in zip(cases, sets):
        walks = []
        methods: dict[str, int] = {}
        for k, text in enumerate(ss.texts):
            ids, how = tok.tokenize(text)
            methods[how] = methods.get(how, 0) + 1
            walks.append(Walk(k, "default", ids, len(text.encode("utf-8")), how))
        jobs.append(StreamJob(case.name, case.group, case.schema, walks, walk_cap_s))
        info[case.name] = {
            "group": case.group,
            "requests": len(walks),
            "tokens": sum(len(w.ids) for w in walks),
            "bytes": sum(w.text_bytes for w in walks),
            "counts": ss.counts,
            "generation_error": ss.generation_error,
            "tokenized_by": methods,
            "sources": ss.sources,
        }
    return jobs, info


def batch_requests(
    engine: str, raw: dict[str, dict[str, dict[str, Any]]], jobs: list[StreamJob], rows: int
) -> list[tuple[str, list[int]]]:
    """``rows`` (case, ids) for a batch: schemas this engine walked, one after another, each row
    a request the engine accepted, different schemas as far as there are enough."""
    by_case = {j.case: j for j in jobs}
    usable = []
    for case, per_engine in raw.items():
        res = per_engine.get(engine) or {}
        ok = [w["instance"] for w in res.get("walks", []) if w["ok"]]
        if res.get("status") == "ok" and ok:
            usable.append((case, ok))
    out = []
    for r in range(rows if usable else 0):
        case, ok = usable[r % len(usable)]
        out.append((case, by_case[case].walks[ok[(r // len(usable)) % len(ok)]].ids))
    return out


def run_stream(args: Any, root: pathlib.Path) -> dict[str, Any]:
    vocab = args.vocab.split(",")[0]
    engines = [e for e in args.engines.split(",") if e]
    names = None if args.schemas == "all" else ([] if args.schemas == "none" else args.schemas.split(","))
    # names of schemas/ first, in their order; other names are MaskBench's (Github_easy---o9924)
    named = sorted(p.stem for p in SCHEMAS_DIR.glob("*.json"))
    if names is None:
        cases = load_named_schemas()
    else:
        ours, theirs = [n for n in names if n in named], [n for n in names if n not in named]
        cases = (load_named_schemas(ours) if ours else []) + (maskbench_cases(theirs) if theirs else [])
    cases += maskbench_sample(args.maskbench, max_instances=10_000) if args.maskbench > 0 else []
    tuning = StreamTuning(
        instances=args.stream_instances, seed=args.stream_seed, generation_cap_s=args.stream_generation_cap
    )
    out: dict[str, Any] = {
        "mode": "stream",
        "command": " ".join(["benchmarks/bench_masks.py"] + sys.argv[1:]),
        "machine": {
            "nproc": os.cpu_count(),
            "python": sys.version.split()[0],
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
        },
        "uptime_start": uptime(),
        "vocab": vocab,
        "engines": engines,
        "tuning": dataclasses.asdict(tuning),
        "options": {k: v for k, v in vars(args).items()},
        "serialisation": 'json.dumps(value, ensure_ascii=False): ", " and ": " separators, keys in schema order',
    }
    log(f"[stream] {out['uptime_start']}")
    path = vocab_path(vocab)
    if path is None:
        raise SystemExit(f"vocabulary {vocab!r} missing: run `python tools/fetch_assets.py --dest .assets`")
    t = time.monotonic()
    generator = InstanceGenerator()
    sets = []
    try:
        for case in cases:
            sets.append(stream_set(case.name, case.schema, case.instances, tuning, generator))
            log(f"[stream] {case.name}: {len(sets[-1].texts)} requests {sets[-1].counts}")
    finally:
        generator.close()
    out["generation_s"] = time.monotonic() - t
    vd = vocab_data(vocab, path)
    tok = Tokenizer(vocab, path, vd)
    jobs, out["requests"] = build_stream_jobs(cases, sets, tok, args.stream_walk_cap)
    del tok
    options = {
        "repo_root": str(root),
        "structgen_grammars": args.structgen_grammars,
        "structgen_tuning": args.structgen_tuning,
        "structgen_limits": args.structgen_limits,
        "tracemalloc": False,
    }
    if args.structgen_from:
        sg_root = pathlib.Path(args.structgen_from).resolve()
        if not (sg_root / "structgen" / "__init__.py").is_file():
            raise SystemExit(f"--structgen-from {args.structgen_from}: no structgen package there")
        options["structgen_root"] = str(sg_root)
    runners: dict[str, WorkerRunner] = {}
    out["prepare"], out["versions"] = {}, {}
    for engine in engines:
        runner = WorkerRunner(engine, vocab, path, options, args.prepare_timeout)
        if runner.start():
            runners[engine] = runner
            out["prepare"][engine] = runner.info
            out["versions"][engine] = (runner.info or {}).get("version")
            log(f"[stream] {engine}: prepared in {(runner.info or {}).get('prepare_s', 0):.2f} s")
        else:
            out["prepare"][engine] = {"error": runner.error}
            log(f"[stream] {engine}: {runner.error}")
    raw: dict[str, dict[str, dict[str, Any]]] = {}
    out["schemas"] = {}
    for job in jobs:
        named = job.group == "schemas"
        compile_timeout = args.compile_timeout if named else args.maskbench_compile_timeout
        hard = compile_timeout + args.stream_walk_cap + 60
        for engine, runner in runners.items():
            job.keep = engine.startswith("structgen")
            t = time.monotonic()
            res = runner.run(job, compile_timeout, hard)
            raw.setdefault(job.case, {})[engine] = res
            s = summarise_stream(res)
            out["schemas"].setdefault(job.case, {})[engine] = s
            log(
                f"[stream] {job.case} {engine}: {s.get('status')} {s.get('masks', 0)} masks, "
                f"{s.get('rejected_walks', 0)} rejected ({time.monotonic() - t:.1f} s)"
            )
    out["ratios"] = all_ratios(out["schemas"], raw, engines)
    out["batch"] = {}
    for engine, runner in runners.items():
        if not engine.startswith("structgen"):
            continue
        reqs = batch_requests(engine, raw, jobs, args.stream_batch_rows)
        res = runner.run(BatchJob(reqs, args.stream_batch_steps), 60, 300)
        out["batch"][engine] = res
        log(f"[stream] batch {engine}: {res.get('status')}")
    for runner in runners.values():
        runner.stop()
    out["restarts"] = {e: r.restarts for e, r in runners.items()}
    out["uptime_end"] = uptime()
    log(f"[stream] {out['uptime_end']}")
    return out


def all_ratios(
    schemas: dict[str, dict[str, Any]], raw: dict[str, dict[str, dict[str, Any]]], engines: list[str]
) -> dict[str, Any]:
    """Per (structgen engine, peer): per-schema ratios and their geometric means."""
    sgs = [e for e in engines if e.startswith("structgen")]
    peers = [e for e in engines if not e.startswith("structgen")]
    out: dict[str, Any] = {}
    for sg in sgs:
        for peer in peers:
            per_schema = {}
            for case, entries in schemas.items():
                if sg in entries and peer in entries:
                    r = pair_ratios(entries[sg], entries[peer], raw[case][sg], raw[case][peer])
                    if r:
                        per_schema[case] = r
            geo = {}
            for k in FIGURES:
                vals = [r[k] for r in per_schema.values() if r.get(k)]
                geo[k] = {"geomean": report.geomean(vals), "schemas": len(vals)}
            out[f"{sg}/{peer}"] = {"per_schema": per_schema, "geomean": geo}
    return out


# -- report -----------------------------------------------------------------------------------------


def _mb(v: Any) -> Any:
    return None if v is None else v / 2**20


def markdown(out: dict[str, Any]) -> str:
    lines: list[str] = []
    p = lines.append
    engines = out["engines"]
    p("# Stream of distinct requests\n")
    p(f"Command: `{out['command']}`  ")
    p(f"Machine: {out['machine']['nproc']} CPUs, Python {out['machine']['python']}, {out['machine']['date']}  ")
    p(f"Load at start: `{out['uptime_start']}`  ")
    p(f"Load at end: `{out['uptime_end']}`  ")
    p("Versions: " + ", ".join(f"{k} {v}" for k, v in out["versions"].items()) + "  ")
    p(f"Vocabulary: {out['vocab']}. Requests serialised as {out['serialisation']}.")
    reqs = out["requests"]
    n_named = sum(1 for r in reqs.values() if r["group"] == "schemas")
    few = [f"{c} ({r['requests']})" for c, r in reqs.items() if r["requests"] < 20]
    p(
        f"\n{len(reqs)} schemas ({n_named} of `schemas/`, {len(reqs) - n_named} MaskBench), "
        f"{sum(r['requests'] for r in reqs.values())} requests, {sum(r['tokens'] for r in reqs.values())} tokens "
        f"(masks per engine: tokens + one end-of-generation mask per request). "
        f"Instances generated in {out['generation_s']:.0f} s."
        + (f" Schemas with fewer than 20 requests: {', '.join(few)}." if few else "")
    )
    p("\n## Geometric means over schemas: structgen / peer (above 1: structgen slower or larger)\n")
    p(
        "Per-mask figures over the requests both engines walked to the end; compile: the one compile; "
        "memory: structgen's `Constraint.memory_bytes()` after the stream over the peer's RSS held after the "
        "stream (less before its compile). `n`: schemas with the figure for both.\n"
    )
    rows = []
    for pair, d in out["ratios"].items():
        g = d["geomean"]
        rows.append([pair] + [report.fmt(g[k]["geomean"]) + f" (n {g[k]['schemas']})" for k in FIGURES])
    p(report.table(["structgen / peer"] + [FIGURE_HEADERS[k] for k in FIGURES], rows))
    p("\n## Every mask pooled, per engine (µs; compile ms: median over schemas)\n")
    rows = []
    for eng in engines:
        ok = [e[eng] for e in out["schemas"].values() if e.get(eng, {}).get("status") == "ok"]
        means = [s for s in ok if s.get("masks")]
        total = sum(s["masks"] for s in means)
        status = {}
        for e in out["schemas"].values():
            st = e.get(eng, {}).get("status", "missing")
            status[st] = status.get(st, 0) + 1
        rows.append(
            [
                eng,
                len(ok),
                ", ".join(f"{k} {v}" for k, v in status.items() if k != "ok") or "–",
                sum(s.get("rejected_walks", 0) for s in ok),
                sum(s.get("walks", 0) for s in ok),
                total,
                float(np.median([s["compile_ms"] for s in ok])) if ok else None,
                sum(s["mean_us"] * s["masks"] for s in means) / total if total else None,
                max((s["max_us"] for s in means), default=None),
            ]
        )
    p(
        report.table(
            [
                "engine",
                "schemas ok",
                "not ok",
                "requests rejected",
                "requests walked",
                "masks",
                "compile p50 ms",
                "mean per mask",
                "max",
            ],
            rows,
        )
    )
    p("\n## Worst schemas for structgen: mean per mask against the fastest peer on that schema\n")
    for sg in [e for e in engines if e.startswith("structgen")]:
        worst = []
        for case in out["schemas"]:
            cands = [
                (d["per_schema"][case].get("mean_us"), d["per_schema"][case].get("p99_us"), pair.split("/")[1])
                for pair, d in out["ratios"].items()
                if pair.startswith(sg + "/") and case in d["per_schema"] and d["per_schema"][case].get("mean_us")
            ]
            if cands:
                worst.append((case, *max(cands, key=lambda c: c[0])))
        worst.sort(key=lambda w: -w[1])
        p(f"\n### {sg}\n")
        rows = [[case, f"{report.fmt(mean)} ({peer})", report.fmt(p99)] for case, mean, p99, peer in worst[:8]]
        p(report.table(["schema", "mean ratio (fastest peer)", "p99 ratio (same peer)"], rows))
    p("\n## Batch fill (structgen): `fill_bitmasks` against one `fill_bitmask` per state (µs per step)\n")
    p(
        "States of different schemas on the constraints the stream compiled (the stream met these "
        "requests already, so most masks are cached: the figures are mostly the cost of the calls). Each "
        "step times both, alternating which goes first.\n"
    )
    rows = []
    for eng, b in out["batch"].items():
        if b.get("status") != "ok":
            rows.append([eng, "–", "–", "–", "–", "–", "–", b.get("status", "?")])
            continue
        rows.append(
            [
                eng,
                f"{b['rows']} ({b['schemas']} schemas)",
                b["steps"],
                b["batch_p50_us"],
                b["single_p50_us"],
                b["batch_first_p50_us"],
                b["single_first_p50_us"],
                report.fmt(b["batch_over_single_p50"]),
            ]
        )
    p(
        report.table(
            [
                "engine",
                "states",
                "steps",
                "fill_bitmasks p50",
                "single calls p50",
                "fill_bitmasks p50, first",
                "single calls p50, first",
                "batch / single",
            ],
            rows,
        )
    )
    p("\n## Per schema and engine (µs per mask; memory MB)\n")
    p(
        "memory: structgen `memory_bytes()` after the stream; peers ΔRSS held after the stream. "
        "ΔRSS is given for structgen too. first req: mean per mask of the first request.\n"
    )
    rows = []
    for case, entries in out["schemas"].items():
        r = reqs[case]
        for eng in engines:
            s = entries.get(eng) or {}
            rows.append(
                [
                    case,
                    r["requests"],
                    eng,
                    s.get("compile_ms"),
                    _mb(s.get("memory_bytes")),
                    _mb(s.get("rss_after_stream_bytes")),
                    s.get("masks"),
                    s.get("p50_us"),
                    s.get("p99_us"),
                    s.get("p999_us"),
                    s.get("max_us"),
                    s.get("mean_us"),
                    s.get("first_request_mean_us"),
                    status_text(s),
                ]
            )
    p(
        report.table(
            [
                "schema",
                "requests",
                "engine",
                "compile ms",
                "memory MB",
                "ΔRSS MB",
                "masks",
                "p50",
                "p99",
                "p99.9",
                "max",
                "mean",
                "first req",
                "status",
            ],
            rows,
        )
    )
    p("\n## Requests per schema\n")
    rows = []
    for case, r in reqs.items():
        c = r["counts"]
        note = r["generation_error"] or ""
        rows.append(
            [
                case,
                r["requests"],
                c.get("given", 0),
                c.get("generated", 0),
                c.get("invalid_given", 0) + c.get("invalid_generated", 0),
                "yes" if c.get("unrolled") else "",
                r["tokens"],
                note.replace("|", "/").replace("\n", " ")[:80],
            ]
        )
    p(
        report.table(
            ["schema", "requests", "given", "generated", "invalid (left out)", "unrolled", "tokens", "generator"],
            rows,
        )
    )
    return "\n".join(lines) + "\n"


def status_text(s: dict[str, Any]) -> str:
    st = s.get("status", "–")
    if st != "ok":
        return f"{st}: {(s.get('error') or '').replace('|', '/')[:70]}"
    bits = []
    if s.get("rejected_walks"):
        f = (s.get("failures") or [{}])[0]
        after = (f.get("after") or "")[-14:].replace("|", "/").replace("\n", "\\n").replace("`", "'")
        bits.append(f"{s['rejected_walks']} rejected (first: {f.get('token', '')[:14]} after `{after}`)")
    if s.get("capped"):
        bits.append(f"capped after {s.get('walks')} of {s.get('walks_planned')}")
    if s.get("special_leaks"):
        bits.append(f"{s['special_leaks']} masks allowed special ids")
    return "; ".join(bits) or "ok"


def write_outputs(out: dict[str, Any], md: str, json_path: str | None, label: str | None) -> list[str]:
    paths = []
    targets = []
    if label:
        stem = RESULTS_DIR / f"{datetime.date.today().isoformat()}-stream-{label}"
        targets.append((str(stem) + ".json", str(stem) + ".md"))
    if json_path:
        targets.append((json_path, None))
    for jp, mp_ in targets:
        with open(jp, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))
        paths.append(jp)
        if mp_:
            pathlib.Path(mp_).write_text(md, encoding="utf-8")
            paths.append(mp_)
    return paths


def main(args: Any, root: pathlib.Path) -> int:
    out = run_stream(args, root)
    md = markdown(out)
    print(md)
    for path in write_outputs(out, md, args.json, args.label):
        log(f"wrote {path}")
    return 0
