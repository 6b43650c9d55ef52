"""Batch bitmask fill: the time a serving engine spends per decoding step filling the packed int32
``[batch, ceil(V/32)]`` bitmask of a whole batch, structgen against xgrammar (vLLM's default
backend) and llguidance.

    python benchmarks/batch_bitmask.py [--batches 8,32,128] [--steps 24] [--vocab llama-bpe]
        [--engines structgen,xgrammar,llguidance] [--json out.json]
    python benchmarks/batch_bitmask.py --fill-bitmasks [ROWS] [--steps 24]

Every request of a batch has its own schema (the named schemas of ``schemas/`` first, then a
deterministic MaskBench sample) and its own output (one valid instance of its schema, tokenized
with the vocabulary; a request whose output is finished starts over). Only schemas every engine
compiles are used, so the engines fill the same rows. Per step the script times the loop that
fills every row (what vLLM's and SGLang's grammar stages do on the host) and then commits each
request's next token (not timed). Steps start right after compiling, so the first steps include
cold masks, as a fresh batch in a server does ("cold"); then the same schemas run again on the
same compiled grammars with other outputs (a second valid instance, or the first one spaced
differently): "warm", what a server sees once its schemas repeat. The default vocabulary, llama.cpp's
``llama-bpe``, is Llama 3's (128,256 tokens). One process, engines one after the other: a short
side-by-side on this machine, not an isolated benchmark (see ``bench_masks.py`` for that).
Needs the peers: ``pip install -e '.[bench]'``.

``--fill-bitmasks`` is structgen alone: per step, one ``structgen.fill_bitmasks`` call for the
whole batch against one ``State.fill_bitmask`` call per row (:func:`time_fill_bitmasks`, which
``bench_masks.py --stream`` also runs on the constraints its stream compiled).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.engines import CompileError, make_engine, vocab_data  # noqa: E402
from benchmarks.inputs import Case, Tokenizer, load_named_schemas, maskbench_sample, serialise, vocab_path  # noqa: E402


@dataclass
class Request:
    """One row of the batch: its schema's name and the tokens of its cold and warm outputs."""

    case: str
    ids: list[int]
    warm_ids: list[int]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batches", default="8,32,128", help="comma list of batch sizes")
    p.add_argument("--steps", type=int, default=24, help="decoding steps timed per batch size")
    p.add_argument("--vocab", default="llama-bpe", help="vocabulary asset (llama-bpe is Llama 3's)")
    p.add_argument("--engines", default="structgen,xgrammar,llguidance", help="comma list of engines")
    p.add_argument("--json", metavar="OUT", help="write the figures to this JSON file")
    p.add_argument(
        "--fill-bitmasks",
        type=int,
        nargs="?",
        const=64,
        default=None,
        metavar="ROWS",
        help="structgen only: fill_bitmasks for a batch of ROWS (default 64) against one fill_bitmask call per row",
    )
    return p.parse_args(argv)


def candidate_cases(n: int) -> list[Case]:
    """The named schemas, then MaskBench schemas, more than ``n`` (some will not compile)."""
    cases = load_named_schemas()
    cases += maskbench_sample(n + n // 2 + 16, max_instances=2)
    return cases


def requests_for(cases: list[Case], tokenizer: Tokenizer) -> list[Request]:
    out = []
    for case in cases:
        first = serialise(case.instances[0], "compact")
        second = serialise(case.instances[1], "compact") if len(case.instances) > 1 else first
        if second == first:
            second = serialise(case.instances[0], "default")
        ids, _how = tokenizer.tokenize(first)
        warm_ids, _how = tokenizer.tokenize(second)
        if ids and warm_ids:
            out.append(Request(case.name, ids, warm_ids))
    return out


def compile_all(engine: Any, cases: list[Case]) -> dict[str, Any]:
    compiled = {}
    for case in cases:
        try:
            compiled[case.name] = engine.compile(case.schema)
        except CompileError:
            continue
    return compiled


def check_walk(engine: Any, compiled: Any, ids: list[int]) -> bool:
    state = engine.start(compiled)
    return all(engine.commit(state, t) for t in ids)


def run_batch(
    engine: Any, compiled: dict[str, Any], outputs: list[tuple[str, list[int]]], steps: int, words: int
) -> list[float]:
    """Seconds per step to fill the whole batch's bitmask; ``outputs`` are (schema, tokens) per row."""
    bitmask = np.zeros((len(outputs), words), dtype=np.int32)
    states = [engine.start(compiled[case]) for case, _ids in outputs]
    done = [0] * len(outputs)
    times = []
    for _ in range(steps):
        t = time.perf_counter_ns()
        for i, state in enumerate(states):
            engine.fill(state, bitmask[i])
        times.append((time.perf_counter_ns() - t) / 1e9)
        for i, (case, ids) in enumerate(outputs):
            if done[i] == len(ids):  # this output is finished: the slot starts a new request
                states[i] = engine.start(compiled[case])
                done[i] = 0
            engine.commit(states[i], ids[done[i]])
            done[i] += 1
    return times


def time_fill_bitmasks(requests: list[tuple[Any, list[int]]], words: int, steps: int) -> dict[str, Any]:
    """Per step, ``fill_bitmasks(states, out)`` once against ``state.fill_bitmask(out, i)`` for
    every row; ``requests`` are (compiled ``Constraint``, token ids) per row.

    Each step times both, alternating which goes first: the first computes the masks of
    configurations met for the first time, the second finds them cached, so the figures are
    reported per position (first, second) as well as per call. Then every row commits its next
    token (untimed); a finished row starts its output again from a fresh state."""
    from structgen import fill_bitmasks

    now = time.perf_counter_ns
    out = np.zeros((len(requests), words), dtype=np.int32)
    states = [c.start() for c, _ids in requests]
    done = [0] * len(requests)
    timed: dict[str, list[int]] = {"batch_first": [], "batch_second": [], "single_first": [], "single_second": []}

    def batch() -> int:
        t = now()
        fill_bitmasks(states, out)
        return now() - t

    def singles() -> int:
        t = now()
        for i, st in enumerate(states):
            st.fill_bitmask(out, i)
        return now() - t

    for step in range(steps):
        if step % 2 == 0:
            timed["batch_first"].append(batch())
            timed["single_second"].append(singles())
        else:
            timed["single_first"].append(singles())
            timed["batch_second"].append(batch())
        for i, (c, ids) in enumerate(requests):
            if done[i] == len(ids):
                states[i] = c.start()
                done[i] = 0
            states[i].commit_token(ids[done[i]])
            done[i] += 1
    res: dict[str, Any] = {"rows": len(requests), "steps": steps}
    for k, v in timed.items():
        res[f"{k}_p50_us"] = statistics.median(v) / 1e3 if v else None
        res[f"{k}_mean_us"] = statistics.fmean(v) / 1e3 if v else None
    for call in ("batch", "single"):
        both = timed[f"{call}_first"] + timed[f"{call}_second"]
        res[f"{call}_p50_us"] = statistics.median(both) / 1e3
        res[f"{call}_mean_us"] = statistics.fmean(both) / 1e3
    res["batch_over_single_p50"] = res["batch_p50_us"] / res["single_p50_us"] if res["single_p50_us"] else None
    return res


def fill_bitmasks_main(args: argparse.Namespace, vd: Any, tokenizer: Tokenizer) -> int:
    """``--fill-bitmasks``: structgen's batch call against one call per row, one batch size."""
    batch = args.fill_bitmasks
    engine = make_engine("structgen", {})
    engine.prepare(vd)
    cases = candidate_cases(batch)
    compiled = compile_all(engine, cases)
    requests = [r for r in requests_for(cases, tokenizer) if r.case in compiled]
    requests = [r for r in requests if check_walk(engine, compiled[r.case], r.ids)]
    if not requests:
        raise SystemExit("no schema compiled")
    rows = [(compiled[r.case], r.ids) for r in (requests * (batch // len(requests) + 1))[:batch]]
    res = time_fill_bitmasks(rows, vd.words, args.steps)
    res["schemas"] = len({r.case for r in requests[:batch]})
    print(
        f"{res['rows']} rows ({res['schemas']} schemas), {res['steps']} steps: fill_bitmasks p50 "
        f"{res['batch_p50_us']:.1f} µs, {res['rows']} fill_bitmask calls p50 {res['single_p50_us']:.1f} µs "
        f"(first of the step: {res['batch_first_p50_us']:.1f} / {res['single_first_p50_us']:.1f} µs)"
    )
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(res, indent=1), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    batches = [int(b) for b in args.batches.split(",")]
    names = args.engines.split(",")
    path = vocab_path(args.vocab)
    if path is None:
        raise SystemExit(f"vocabulary {args.vocab!r} not found: run python tools/fetch_assets.py")
    vd = vocab_data(args.vocab, path)
    tokenizer = Tokenizer(args.vocab, path, vd)
    if args.fill_bitmasks is not None:
        return fill_bitmasks_main(args, vd, tokenizer)
    cases = candidate_cases(max(batches))
    engines = {}
    compiled: dict[str, dict[str, Any]] = {}
    for name in names:
        engine = make_engine(name, {})
        engine.prepare(vd)
        t = time.perf_counter()
        compiled[name] = compile_all(engine, cases)
        print(f"{name}: compiled {len(compiled[name])}/{len(cases)} schemas in {time.perf_counter() - t:.1f} s")
        engines[name] = engine
    requests = [
        r
        for r in requests_for(cases, tokenizer)
        if all(
            r.case in compiled[n]
            and all(check_walk(engines[n], compiled[n][r.case], ids) for ids in (r.ids, r.warm_ids))
            for n in names
        )
    ]
    print(f"{len(requests)} requests with a schema and an output every engine takes (vocabulary {args.vocab})")
    results: dict[str, Any] = {"vocab": args.vocab, "logit_width": vd.logit_width, "steps": args.steps, "runs": []}
    print(f"\nper step, the whole batch's bitmask ({vd.words} words per row); p50 / mean over {args.steps} steps")
    print(f"{'batch':>6} {'pass':>5} " + " ".join(f"{n:>26}" for n in names))
    for batch in batches:
        if batch > len(requests):
            print(f"{batch:>6} skipped: only {len(requests)} distinct requests")
            continue
        rows: dict[str, list[str]] = {"cold": [], "warm": []}
        for name in names:
            # a fresh compile per batch size: every run starts cold, as a new batch in a server
            fresh = compile_all(engines[name], [c for c in cases if c.name in {r.case for r in requests[:batch]}])
            for phase in ("cold", "warm"):
                outputs = [(r.case, r.ids if phase == "cold" else r.warm_ids) for r in requests[:batch]]
                times = run_batch(engines[name], fresh, outputs, args.steps, vd.words)
                p50, mean = statistics.median(times), statistics.fmean(times)
                results["runs"].append(
                    {"engine": name, "batch": batch, "pass": phase, "p50_s": p50, "mean_s": mean, "times_s": times}
                )
                rows[phase].append(f"{p50 * 1e3:8.2f} / {mean * 1e3:8.2f} ms")
        for phase, row in rows.items():
            print(f"{batch:>6} {phase:>5} " + " ".join(f"{c:>26}" for c in row))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
