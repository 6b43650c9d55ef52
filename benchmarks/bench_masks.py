"""Token-mask benchmark: structgen and its peers side by side, in one run, on the same tokens.

    python benchmarks/bench_masks.py [--vocab llama-bpe,qwen2,llama-spm,gemma3] [--schemas NAMES]
        [--engines structgen,xgrammar,llguidance,glrmask,outlines] [--maskbench N] [--quick]
        [--json out.json]
    python benchmarks/bench_masks.py --stream [--vocab llama-bpe] [--schemas NAMES] [--maskbench N]
        [--engines structgen-lazy,structgen-aot,glrmask,llguidance,xgrammar] [--label LABEL]

For every vocabulary, every engine runs in its own worker process (one at a time: the machine
has 2 cores) and measures: vocabulary preprocessing (once), then for each schema the compile
time, the time to the first mask, per-token mask time (p50 / p99 / max) on a COLD walk (the first
use of the freshly compiled grammar) and on WARM walks (every instance again, compact and
default-spaced), commit time, and memory (RSS growth of the worker; tracemalloc for the Python
side, in a separate untimed pass). ``docs/performance.md`` records a run and explains the columns.

``--stream`` is another measurement (:mod:`benchmarks.stream`): per schema one compiled object per
engine, then at least 20 distinct requests walked once each on it, every mask timed. There the
defaults are the llama-bpe vocabulary, the engines above, and 50 MaskBench schemas when
``--schemas`` is ``all`` (none when it names schemas); ``--label`` writes
``benchmarks/results/DATE-stream-LABEL.{json,md}``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import platform
import sys
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import report  # noqa: E402
from benchmarks.engines import (  # noqa: E402
    ENGINES,
    PEERS,
    STREAM_ENGINES,
    structgen_has_schema_translator,
    vocab_data,
)
from benchmarks.inputs import VOCAB_ASSETS, Tokenizer, build_jobs, load_named_schemas, maskbench_sample, vocab_path  # noqa: E402
from benchmarks.runner import WorkerRunner  # noqa: E402

ALL_VOCABS = list(VOCAB_ASSETS)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--vocab", default=None, help=f"comma list of {', '.join(ALL_VOCABS)} (default all; --stream: llama-bpe)"
    )
    p.add_argument("--schemas", default="all", help="comma list of schemas/NAME.json names, 'all' or 'none'")
    p.add_argument(
        "--engines",
        default=None,
        help=f"comma list of {', '.join(ENGINES)} (default all); --stream: of {', '.join(STREAM_ENGINES)}",
    )
    p.add_argument(
        "--maskbench",
        type=int,
        default=None,
        metavar="N",
        help="MaskBench schemas to sample (0: none; default 50, --stream with named --schemas: 0)",
    )
    p.add_argument(
        "--maskbench-vocab",
        default="first",
        help="vocabularies for the MaskBench sample: 'first', 'all' or a comma list",
    )
    p.add_argument("--maskbench-instances", type=int, default=3, help="valid instances walked per MaskBench schema")
    p.add_argument(
        "--quick",
        action="store_true",
        help="llama-bpe only, 2 instances per schema, 5 MaskBench schemas, no tracemalloc",
    )
    p.add_argument("--json", metavar="OUT", help="write every figure to this JSON file")
    p.add_argument(
        "--compile-timeout", type=float, default=60.0, help="seconds per compile of a named schema (default 60)"
    )
    p.add_argument(
        "--schema-timeout", type=float, default=180.0, help="seconds per named schema, compile and walks (default 180)"
    )
    p.add_argument(
        "--maskbench-compile-timeout", type=float, default=20.0, help="seconds per MaskBench compile (default 20)"
    )
    p.add_argument(
        "--maskbench-schema-timeout", type=float, default=60.0, help="seconds per MaskBench schema (default 60)"
    )
    p.add_argument(
        "--prepare-timeout", type=float, default=600.0, help="seconds for an engine's vocabulary preprocessing"
    )
    p.add_argument(
        "--structgen-grammars",
        choices=["auto", "schema", "standin"],
        default="auto",
        help="auto: Grammar.from_json_schema where structgen has it, else only {} (any-JSON grammar); "
        "standin: the any-JSON grammar for every schema "
        "(engine mechanics on the same walks, not the schema's language)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run every named schema N times, each engine in a fresh worker per run, and report the "
        "median of each figure (single runs on a shared machine move by up to 2x)",
    )
    p.add_argument("--structgen-mode", choices=["lazy", "aot"], default="lazy")
    p.add_argument("--no-tracemalloc", action="store_true", help="skip the untimed tracemalloc pass")
    s = p.add_argument_group("stream mode (--stream)")
    s.add_argument("--stream", action="store_true", help="the stream of distinct requests (benchmarks/stream.py)")
    s.add_argument("--stream-instances", type=int, default=24, help="distinct requests per schema (default 24)")
    s.add_argument("--stream-seed", type=int, default=20261201, help="seed of the instance generator")
    s.add_argument(
        "--stream-generation-cap", type=float, default=20.0, help="seconds of instance generation per schema"
    )
    s.add_argument(
        "--stream-walk-cap",
        type=float,
        default=90.0,
        help="seconds of walking per engine and schema; the requests left are not walked (default 90)",
    )
    s.add_argument("--stream-batch-rows", type=int, default=64, help="states of the batch-fill figure")
    s.add_argument("--stream-batch-steps", type=int, default=32, help="steps of the batch-fill figure")
    s.add_argument("--label", help="write benchmarks/results/DATE-stream-LABEL.json and .md")
    s.add_argument(
        "--structgen-from",
        metavar="DIR",
        help="the structgen workers import structgen from this checkout (default: this script's)",
    )
    p.add_argument(
        "--hot", action="store_true", help="also a third pass over every walk (HOT: every configuration seen before)"
    )
    p.add_argument(
        "--tuning",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="an EngineTuning field of the structgen engines (repeatable; true/false or an int)",
    )
    p.add_argument(
        "--limits",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="an EngineLimits field of the structgen engines (repeatable; an int, e.g. aot_max_configs=0)",
    )
    a = p.parse_args(argv)
    if a.vocab is None:
        a.vocab = "llama-bpe" if a.stream else ",".join(ALL_VOCABS)
    if a.engines is None:
        a.engines = ",".join(STREAM_ENGINES if a.stream else ENGINES)
    if a.maskbench is None:
        a.maskbench = 0 if a.stream and a.schemas != "all" else 50
    a.structgen_tuning = parse_fields(p, "--tuning", a.tuning)
    a.structgen_limits = parse_fields(p, "--limits", a.limits)
    known = STREAM_ENGINES if a.stream else ENGINES
    for e in a.engines.split(","):
        if e and e not in known:
            p.error(f"unknown engine {e!r}: {', '.join(known)}")
    if a.quick:
        if a.vocab == ",".join(ALL_VOCABS):
            a.vocab = "llama-bpe"
        a.maskbench = min(a.maskbench, 5)
        a.no_tracemalloc = True
    return a


def parse_fields(p: argparse.ArgumentParser, flag: str, items: list[str]) -> dict[str, bool | int]:
    """``FIELD=VALUE`` pairs as EngineTuning (``--tuning``) or EngineLimits (``--limits``)
    keyword arguments, checked by building one."""
    from structgen.engine.limits import EngineLimits
    from structgen.engine.tuning import EngineTuning
    from structgen.errors import StructgenError

    out: dict[str, bool | int] = {}
    for item in items:
        name, _, text = item.partition("=")
        value = {"true": True, "false": False}.get(text.lower())
        out[name] = value if value is not None else int(text) if text.lstrip("-").isdigit() else text  # type: ignore[assignment]
    try:
        (EngineTuning if flag == "--tuning" else EngineLimits)(**out)  # type: ignore[arg-type]
    except (TypeError, StructgenError) as e:
        p.error(f"{flag}: {e}")
    return out


def machine() -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
    }


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    vocabs = [v for v in args.vocab.split(",") if v]
    engines = [e for e in args.engines.split(",") if e]
    for v in vocabs:
        if v not in VOCAB_ASSETS:
            raise SystemExit(f"unknown vocabulary {v!r}: {', '.join(ALL_VOCABS)}")
    for e in engines:
        if e not in ENGINES:
            raise SystemExit(f"unknown engine {e!r}: {', '.join(ENGINES)}")
    names = None if args.schemas == "all" else ([] if args.schemas == "none" else args.schemas.split(","))
    cases = load_named_schemas(names) if names != [] else []
    if args.quick:
        for c in cases:
            c.instances = c.instances[:2]
    mb_vocabs = (
        vocabs[:1]
        if args.maskbench_vocab == "first"
        else (vocabs if args.maskbench_vocab == "all" else args.maskbench_vocab.split(","))
    )
    mb_cases = maskbench_sample(args.maskbench, args.maskbench_instances) if args.maskbench > 0 and mb_vocabs else []
    options = {
        "repo_root": str(ROOT),
        "structgen_grammars": args.structgen_grammars,
        "structgen_mode": args.structgen_mode,
        "structgen_tuning": args.structgen_tuning,
        "structgen_limits": args.structgen_limits,
        "tracemalloc": not args.no_tracemalloc,
        "hot": args.hot,
    }
    out: dict[str, Any] = {
        "command": " ".join(
            [os.path.relpath(sys.argv[0], ROOT) if sys.argv[0].endswith(".py") else sys.argv[0]] + sys.argv[1:]
        ),
        "machine": machine(),
        "load_start": os.getloadavg(),
        "options": {k: v for k, v in vars(args).items()},
        "structgen_schema_translator": structgen_has_schema_translator(),
        "versions": {},
        "prepare": {},
        "tokens": {},
        "schemas": {},
        "maskbench": {},
        "maskbench_cases": [c.name for c in mb_cases],
    }
    log(f"load average at start: {out['load_start']}")
    for vocab in vocabs:
        path = vocab_path(vocab)
        if path is None:
            log(f"[{vocab}] asset missing: run `python tools/fetch_assets.py --dest .assets --models`; skipped")
            out["prepare"][vocab] = {"error": "asset missing"}
            continue
        vd = vocab_data(vocab, path)
        tok = Tokenizer(vocab, path, vd)
        jobs = build_jobs(cases, tok) + (build_jobs(mb_cases, tok) if vocab in mb_vocabs else [])
        walks = [w for j in jobs for w in j.walks]
        out["tokens"][vocab] = {
            "load_at_start": os.getloadavg()[0],
            "walks": len(walks),
            "tokens": sum(len(w.ids) for w in walks),
            "bytes": sum(w.text_bytes for w in walks),
            "tokenizer": {m: sum(1 for w in walks if w.tokenizer == m) for m in ("llama.cpp", "greedy")},
        }
        del tok
        out["prepare"][vocab] = {}
        out["schemas"][vocab] = {}
        mb_raw: dict[str, list[dict[str, Any]]] = {}
        runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
        # runs one after another, not an engine's runs back to back: a slow phase of the machine
        # then touches every engine
        for rep, engine in [(r, e) for r in range(max(args.repeat, 1)) for e in engines]:
            if rep and "error" in out["prepare"][vocab].get(engine, {"error": None}):
                continue  # it did not start in the first run
            log(f"[{vocab}] {engine}: preparing" + (f" (run {rep + 1})" if args.repeat > 1 else ""))
            runner = WorkerRunner(engine, vocab, path, options, args.prepare_timeout)
            if not runner.start():
                log(f"[{vocab}] {engine}: {runner.error}")
                out["prepare"][vocab][engine] = {"error": runner.error}
                continue
            info = runner.info or {}
            if not rep:
                out["prepare"][vocab][engine] = info
                out["versions"][engine] = info.get("version")
            log(f"[{vocab}] {engine}: prepared in {info.get('prepare_s', 0):.2f} s")
            for job in jobs if not rep else [j for j in jobs if j.group == "schemas"]:
                t = time.monotonic()
                if job.group == "schemas":
                    res = runner.run(job, args.compile_timeout, args.schema_timeout)
                else:
                    res = runner.run(job, args.maskbench_compile_timeout, args.maskbench_schema_timeout)
                s = report.summarise(res)
                if job.group == "schemas":
                    runs.setdefault((job.case, engine), []).append(s)
                    out["schemas"][vocab].setdefault(job.case, {})[engine] = report.median_of_runs(
                        runs[(job.case, engine)]
                    )
                else:
                    mb_raw.setdefault(engine, []).append(res)
                    out["maskbench"].setdefault(vocab, {}).setdefault("per_schema", {}).setdefault(job.case, {})[
                        engine
                    ] = {
                        k: s.get(k)
                        for k in ("status", "error", "compile_ms", "warm_p50_us", "warm_p99_us", "failures")
                        if s.get(k) is not None
                    }
                log(f"[{vocab}] {engine}: {job.case}: {s.get('status')} ({time.monotonic() - t:.1f} s)")
            runner.stop()
            if not rep:
                out["prepare"][vocab][engine]["restarts"] = runner.restarts
        if mb_raw:
            out["maskbench"].setdefault(vocab, {})["pooled"] = pool_maskbench(mb_raw)
    out["load_end"] = os.getloadavg()
    log(f"load average at end: {out['load_end']}")
    return out


def pool_maskbench(raw: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    pooled: dict[str, Any] = {}
    statuses = ("ok", "rejected", "compile_error", "timeout", "crash", "worker_error", "skipped")
    for engine, results in raw.items():
        counts = {s: sum(1 for r in results if r.get("status") == s) for s in statuses}
        pooled[engine] = {"counts": counts, "all_ok": report.pool(r for r in results if r.get("status") == "ok")}
    # the schemas every engine passed: the only set on which their figures compare directly
    ran = [results for results in raw.values() if any(r.get("status") != "skipped" for r in results)]
    ok_sets = [{r["case"] for r in results if r.get("status") == "ok"} for results in ran]
    common = set.intersection(*ok_sets) if ok_sets else set()
    for engine, results in raw.items():
        pooled[engine]["common"] = report.pool(r for r in results if r["case"] in common)
    pooled["common_schemas"] = len(common)
    return pooled


# -- printing --------------------------------------------------------------------------------------


def print_report(out: dict[str, Any]) -> None:
    p = print
    m = out["machine"]
    p("# Token-mask benchmark\n")
    p(f"Command: `{out['command']}`  ")
    p(f"Machine: {m['nproc']} CPUs ({m['affinity']} usable), {m['platform']}, Python {m['python']}, {m['date']}  ")
    la, lb = out["load_start"], out.get("load_end", (0, 0, 0))
    p(
        f"Load average (1/5/15 min): start {la[0]:.2f} / {la[1]:.2f} / {la[2]:.2f}, "
        f"end {lb[0]:.2f} / {lb[1]:.2f} / {lb[2]:.2f}  "
    )
    p("Versions: " + ", ".join(f"{k} {v}" for k, v in out["versions"].items()))
    how = out["options"]["structgen_grammars"]
    if how == "standin" or not out["structgen_schema_translator"]:
        if how == "standin":
            p(
                "\n**structgen ran the any-JSON grammar for every schema (`--structgen-grammars standin`)**: "
                "its timings measure the engine on the same token walks, not the schema's language; "
                "its ratios are not like for like."
            )
        else:
            p(
                "\n**structgen's JSON Schema translator is not on this branch yet**: structgen runs only `{}` "
                "(any_json, with an any-JSON grammar); its other schema rows say `skipped`."
            )
    p(
        "\nglrmask runs only the default-spaced walks: "
        'its JSON Schema grammars accept only `", "` / `": "` separators. '
        "Per-token times are the packed fill of one int32 mask row "
        "(structgen: `State.fill_bitmask`; peers: their packed fill); "
        "structgen's `mask_words()` alone is in the JSON output (`warm_mask_words_*`)."
    )
    if out["options"].get("repeat", 1) > 1:
        p(
            f"\nEvery named schema ran {out['options']['repeat']} times, each engine in a fresh worker per run "
            "(runs interleaved across engines); each figure of the schema tables is the median of the runs, "
            "the JSON output has every run's (`runs`). Preprocessing and MaskBench are from the first run."
        )
    p("\n## Tokens walked\n")
    rows = [
        [
            v,
            t["walks"],
            t["tokens"],
            t["bytes"],
            ", ".join(f"{k} {n}" for k, n in t["tokenizer"].items() if n),
            t.get("load_at_start"),
        ]
        for v, t in out["tokens"].items()
    ]
    p(
        report.table(
            ["vocabulary", "walks", "tokens", "bytes", "tokenised by", "1-min load when its engines started"], rows
        )
    )
    print_prepare(out)
    for vocab, per_case in out["schemas"].items():
        if not per_case:
            continue
        p(f"\n## Schemas, {vocab}\n")
        rows = []
        for case, entries in per_case.items():
            for eng, s in entries.items():
                rows.append(
                    [case, eng] + [s.get(k) for k, _ in report.MEASURES] + [s.get("py_peak_kb"), report.status_cell(s)]
                )
        p(report.table(["schema", "engine"] + [h for _, h in report.MEASURES] + ["py peak KB", "status"], rows))
    print_structgen_mask_words(out)
    print_hot(out)
    for vocab, mb in out["maskbench"].items():
        pooled = mb.get("pooled")
        if not pooled:
            continue
        p(f"\n## MaskBench sample ({len(out['maskbench_cases'])} schemas), {vocab}\n")
        rows = []
        for eng, d in pooled.items():
            if eng == "common_schemas":
                continue
            c, a = d["counts"], d["all_ok"]
            rows.append(
                [
                    eng,
                    c["ok"],
                    c["rejected"],
                    c["compile_error"],
                    c["timeout"],
                    c["crash"] + c["worker_error"],
                    c["skipped"],
                    a.get("compile_ms_p50"),
                    a.get("compile_ms_p90"),
                    a.get("compile_ms_max"),
                    a.get("first_mask_us_p50"),
                    a.get("cold_p50_us"),
                    a.get("cold_p99_us"),
                    a.get("cold_max_us"),
                    a.get("warm_p50_us"),
                    a.get("warm_p99_us"),
                    a.get("warm_max_us"),
                    a.get("commit_p50_us"),
                ]
            )
        p(
            report.table(
                [
                    "engine",
                    "passed",
                    "valid rejected",
                    "compile error",
                    "timeout",
                    "crash",
                    "skipped",
                    "compile p50 ms",
                    "compile p90 ms",
                    "compile max ms",
                    "first mask p50 µs",
                    "cold p50",
                    "cold p99",
                    "cold max",
                    "warm p50",
                    "warm p99",
                    "warm max",
                    "commit p50",
                ],
                rows,
            )
        )
        p(
            "\nFigures over each engine's own passed schemas. "
            f"On the {pooled['common_schemas']} schemas every engine passed:\n"
        )
        rows = []
        for eng, d in pooled.items():
            if eng == "common_schemas":
                continue
            a = d["common"]
            rows.append(
                [
                    eng,
                    a.get("compile_ms_p50"),
                    a.get("compile_ms_p90"),
                    a.get("first_mask_us_p50"),
                    a.get("cold_p50_us"),
                    a.get("cold_p99_us"),
                    a.get("warm_p50_us"),
                    a.get("warm_p99_us"),
                    a.get("commit_p50_us"),
                ]
            )
        p(
            report.table(
                [
                    "engine",
                    "compile p50 ms",
                    "compile p90 ms",
                    "first mask p50 µs",
                    "cold p50",
                    "cold p99",
                    "warm p50",
                    "warm p99",
                    "commit p50",
                ],
                rows,
            )
        )
    print_ratios(out)


def print_hot(out: dict[str, Any]) -> None:
    rows = []
    for vocab, per_case in out["schemas"].items():
        for case, entries in per_case.items():
            for eng, s in entries.items():
                if s.get("hot_tokens"):
                    rows.append(
                        [
                            vocab,
                            case,
                            eng,
                            s.get("warm_p50_us"),
                            s.get("warm_p99_us"),
                            s.get("warm_max_us"),
                            s.get("hot_p50_us"),
                            s.get("hot_p99_us"),
                            s.get("hot_max_us"),
                            report.status_cell(s),
                        ]
                    )
    if rows:
        print("\n## Hot walks (`--hot`: a third pass, every configuration met before), µs per mask\n")
        print(
            report.table(
                [
                    "vocabulary",
                    "schema",
                    "engine",
                    "warm p50",
                    "warm p99",
                    "warm max",
                    "hot p50",
                    "hot p99",
                    "hot max",
                    "status",
                ],
                rows,
            )
        )


def print_structgen_mask_words(out: dict[str, Any]) -> None:
    rows = []
    for vocab, per_case in out["schemas"].items():
        for case, entries in per_case.items():
            s = entries.get("structgen") or {}
            if s.get("status") == "ok":
                rows.append(
                    [
                        vocab,
                        case,
                        s.get("warm_p50_us"),
                        s.get("warm_p99_us"),
                        s.get("warm_mask_words_p50_us"),
                        s.get("warm_mask_words_p99_us"),
                        s.get("warm_mask_words_max_us"),
                        s.get("start_p50_us"),
                    ]
                )
    if rows:
        print("\n## structgen: `fill_bitmask` and `mask_words()` on warm walks (µs)\n")
        print(
            "`mask_words()` is timed right after `fill_bitmask` on the same step, "
            "so its configuration is always cached: "
            "it is the cost of reading the packed mask without a copy. `start` is `Constraint.start()`.\n"
        )
        print(
            report.table(
                [
                    "vocabulary",
                    "schema",
                    "fill p50",
                    "fill p99",
                    "mask_words p50",
                    "mask_words p99",
                    "mask_words max",
                    "start p50",
                ],
                rows,
            )
        )


def print_prepare(out: dict[str, Any]) -> None:
    print("\n## Vocabulary preprocessing (once per engine and vocabulary)\n")
    vocabs = list(out["prepare"])
    engines = sorted({e for v in vocabs for e in out["prepare"][v] if e != "error"}, key=ENGINES.index)
    rows = []
    for eng in engines:
        row: list[Any] = [eng]
        for v in vocabs:
            info = out["prepare"][v].get(eng) or {}
            if "error" in info:
                row.append("error")
                continue
            parts = info.get("prepare_parts", {})
            if eng == "structgen":
                row.append(f"{report.fmt(parts.get('cold_s'))} cold / {report.fmt(parts.get('cached_s'))} cached")
            elif eng == "glrmask":
                row.append(
                    f"{report.fmt(parts.get('vocab_s'))} + {report.fmt(parts.get('first_compile_s'))} first compile"
                )
            else:
                row.append(report.fmt(info.get("prepare_s")))
            row.append(report.fmt((info.get("rss_prepare_bytes") or 0) / 2**20))
        rows.append(row)
    headers = ["engine"] + [h for v in vocabs for h in (f"{v} s", "ΔRSS MB")]
    print(report.table(headers, rows))


def print_ratios(out: dict[str, Any]) -> None:
    print("\n## Ratios: structgen / best peer (above 1: structgen slower)\n")
    print("Best peer per cell: the fastest peer whose run passed; in brackets.\n")
    for vocab in out["prepare"]:
        prep = out["prepare"][vocab]
        sg = (prep.get("structgen") or {}).get("prepare_parts")
        peers = {
            e: i.get("prepare_s") for e, i in prep.items() if e in PEERS and isinstance(i, dict) and i.get("prepare_s")
        }
        if sg and peers:
            best = min(peers.items(), key=lambda kv: kv[1])
            print(
                f"- {vocab} preprocessing: cold {report.fmt(sg['cold_s'] / best[1])}, "
                f"cached {report.fmt(sg['cached_s'] / best[1])} ({best[0]})"
            )
    for vocab, per_case in out["schemas"].items():
        rows, cols = [], {k: [] for k in report.RATIO_MEASURES}
        for case, entries in per_case.items():
            row: list[Any] = [case]
            for k in report.RATIO_MEASURES:
                cell, r = report.ratio_cell(entries, k)
                row.append(cell)
                if r is not None:
                    cols[k].append(r)
            if any(c != "–" for c in row[1:]):
                rows.append(row)
        if not rows:
            print(f"\n### {vocab}: no schema where structgen and a peer both passed")
            continue
        rows.append(["**geometric mean**"] + [report.fmt(report.geomean(cols[k])) for k in report.RATIO_MEASURES])
        print(f"\n### {vocab}\n")
        print(report.table(["schema"] + [dict(report.MEASURES)[k] for k in report.RATIO_MEASURES], rows))
    for vocab, mb in out["maskbench"].items():
        pooled = mb.get("pooled") or {}
        if "structgen" not in pooled:
            continue
        row = []
        for k in [
            "compile_ms_p50",
            "first_mask_us_p50",
            "cold_p50_us",
            "cold_p99_us",
            "warm_p50_us",
            "warm_p99_us",
            "commit_p50_us",
        ]:
            sgv = pooled["structgen"]["common"].get(k)
            peer_vals = [(e, d["common"].get(k)) for e, d in pooled.items() if e in PEERS and d["common"].get(k)]
            if sgv is None or not peer_vals:
                row.append("–")
                continue
            e, v = min(peer_vals, key=lambda kv: kv[1])
            row.append(f"{report.fmt(sgv / v)} ({e})")
        print(f"\n### MaskBench sample, {vocab}, {pooled.get('common_schemas', 0)} schemas every engine passed\n")
        print(
            report.table(
                ["compile p50", "first mask p50", "cold p50", "cold p99", "warm p50", "warm p99", "commit p50"], [row]
            )
        )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.stream:
        from benchmarks import stream

        return stream.main(args, ROOT)
    out = run(args)
    print_report(out)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
