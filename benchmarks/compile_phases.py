"""Where a lazy compile's time goes, per phase and schema, against llguidance's compile.

The stream benchmark (``bench_masks.py --stream``) times structgen's compile as
``Grammar.from_json_schema`` plus ``Constraint.compile(..., mode="lazy")`` and llguidance's as
``grammar_from_json_schema`` plus ``LLMatcher`` (benchmarks/engines.py); the first mask falls in
the first request's walk. This script splits structgen's side into its phases:

* ``translate``: JSON Schema -> Grammar (structgen/schema/);
* ``lower``: the grammar lowered to machines (``build_machines``);
* ``setup``: the configuration system and the constraint object (the rest of ``compile``);
* ``first``: ``start()`` and the first mask (``fill_bitmask``), for both engines.

Two process states, both of which a server meets:

* ``--warm`` (default): one process, the schemas in the stream benchmark's order (``schemas/``
  first, then the MaskBench sample), each compiled once, as the benchmark's worker does;
* ``--fresh``: each schema in a fresh process (imports and the vocabulary loaded untimed):
  the cost of the first schema a process meets.

Usage::

    STRUCTGEN_ASSETS=/work/main/.assets python benchmarks/compile_phases.py [--fresh] \\
        [--maskbench 50] [--schemas a,b] [--repeat 3] [--json out.json]

``--repeat N`` runs the whole sequence N times in N processes and prints medians per figure
(shared machines move single figures by up to 2x). Not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("translate", "lower", "setup", "first", "sg_compile", "ll_compile", "ll_first")


def _cases(args: argparse.Namespace) -> list[Any]:
    from benchmarks.inputs import SCHEMAS_DIR, load_named_schemas, maskbench_cases, maskbench_sample

    if args.schemas:
        names = args.schemas.split(",")
        named = {p.stem for p in SCHEMAS_DIR.glob("*.json")}
        ours, theirs = [n for n in names if n in named], [n for n in names if n not in named]
        return (load_named_schemas(ours) if ours else []) + (maskbench_cases(theirs) if theirs else [])
    return load_named_schemas() + maskbench_sample(args.maskbench, max_instances=1)


#: the clock of every figure: wall time as the benchmark measures it, or this process's CPU
#: time (``--clock cpu``: steadier on a machine shared with other work)
_clock = time.perf_counter_ns


def _ms(t0: int) -> float:
    return (_clock() - t0) / 1e6


def _structgen(schema: Any, vocab: Any, row: Any) -> dict[str, float]:
    """The phases of ``Grammar.from_json_schema`` + ``Constraint.compile(mode="lazy")`` + first mask,
    done as ``compile`` does them (its lazy path, under the same deadline scope)."""
    from structgen import Grammar
    from structgen.deadline import deadline_scope
    from structgen.engine.configs import ConfigSystem
    from structgen.engine.constraint import DEFAULT_ENGINE_LIMITS, DEFAULT_ENGINE_TUNING, DynamicConstraint
    from structgen.engine.machines import build_machines

    limits = DEFAULT_ENGINE_LIMITS
    out: dict[str, float] = {}
    t = _clock()
    grammar = Grammar.from_json_schema(schema)
    out["translate"] = _ms(t)
    with deadline_scope(limits.deadline_s, limit="deadline_s"):
        t = _clock()
        machines = build_machines(grammar)
        out["lower"] = _ms(t)
        t = _clock()
        system = ConfigSystem(
            machines, max_stacks_per_config=limits.max_stacks_per_config, max_configs=limits.max_configs
        )
        c = DynamicConstraint(grammar, vocab, machines, system, limits, DEFAULT_ENGINE_TUNING)
        out["setup"] = _ms(t)
    t = _clock()
    c.start().fill_bitmask(row)
    out["first"] = _ms(t)
    out["sg_compile"] = out["translate"] + out["lower"] + out["setup"]
    return out


def _llguidance(engine: Any, schema: Any, row: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    t = _clock()
    compiled = engine.compile(schema)
    out["ll_compile"] = _ms(t)
    t = _clock()
    engine.fill(engine.start(compiled), row)
    out["ll_first"] = _ms(t)
    return out


def _run_here(args: argparse.Namespace, only: str | None = None) -> dict[str, dict[str, float | str]]:
    """Every case (or the one named ``only``) in this process, in order."""
    import numpy as np

    from benchmarks.engines import CompileError, make_engine, vocab_data
    from benchmarks.inputs import vocab_path

    path = vocab_path(args.vocab)
    if path is None:
        raise SystemExit(f"vocabulary {args.vocab!r} missing (STRUCTGEN_ASSETS)")
    vd = vocab_data(args.vocab, path)
    sg = make_engine("structgen-lazy", {})
    sg.version()  # the imports the benchmark's worker does before its first compile
    sg.prepare(vd)
    ll = make_engine("llguidance", {}) if not args.no_llguidance else None
    if ll is not None:
        ll.version()
        ll.prepare(vd)
    row = np.zeros(vd.words, dtype=np.int32)
    out: dict[str, dict[str, float | str]] = {}
    from structgen.errors import StructgenError

    for case in _cases(args):
        if only is not None and case.name != only:
            continue
        fig: dict[str, float | str] = {}
        try:
            fig.update(_structgen(case.schema, sg.vocab, row))
        except (StructgenError, NotImplementedError) as e:
            fig["sg_error"] = type(e).__name__
        if ll is not None:
            try:
                fig.update(_llguidance(ll, case.schema, row))
            except CompileError as e:
                fig["ll_error"] = str(e)[:60]
        out[case.name] = fig
    return out


def _child(args: argparse.Namespace, only: str | None) -> dict[str, dict[str, float | str]]:
    cmd = [sys.executable, __file__, "--child", "--vocab", args.vocab, "--maskbench", str(args.maskbench)]
    if args.schemas:
        cmd += ["--schemas", args.schemas]
    if args.no_llguidance:
        cmd += ["--no-llguidance"]
    cmd += ["--clock", args.clock]
    if args.structgen_from:
        cmd += ["--structgen-from", args.structgen_from]
    if only is not None:
        cmd += ["--only", only]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT, env=os.environ)
    return json.loads(res.stdout.strip().splitlines()[-1])


def _median(runs: list[dict[str, dict[str, float | str]]]) -> dict[str, dict[str, float | str]]:
    out: dict[str, dict[str, float | str]] = {}
    for name in runs[0]:
        fig: dict[str, float | str] = {}
        for key in {k for r in runs for k in r.get(name, {})}:
            vals = [r[name][key] for r in runs if key in r.get(name, {})]
            fig[key] = statistics.median(vals) if all(isinstance(v, float) for v in vals) else vals[0]
        out[name] = fig
    return out


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def _print(figs: dict[str, dict[str, float | str]], label: str) -> None:
    def f(v: float | str | None) -> str:
        return f"{v:.2f}" if isinstance(v, float) else (str(v) if v is not None else "-")

    print(f"\n## {label}\n")
    print(
        "| schema | translate ms | lower ms | setup ms | first mask ms | structgen compile ms | "
        "llguidance compile ms | llguidance first ms | compile ratio | compile+first ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    ratios, ratios_first = [], []
    for name, fig in figs.items():
        sgc, llc = fig.get("sg_compile"), fig.get("ll_compile")
        r = r2 = None
        if isinstance(sgc, float) and isinstance(llc, float):
            r = sgc / llc
            r2 = (sgc + float(fig["first"])) / (llc + float(fig["ll_first"]))
            ratios.append(r)
            ratios_first.append(r2)
        print(
            f"| {name} | {f(fig.get('translate'))} | {f(fig.get('lower'))} | {f(fig.get('setup'))} | "
            f"{f(fig.get('first'))} | {f(sgc if sgc is not None else fig.get('sg_error'))} | "
            f"{f(llc if llc is not None else fig.get('ll_error'))} | {f(fig.get('ll_first'))} | {f(r)} | {f(r2)} |"
        )
    totals = {p: sum(float(v[p]) for v in figs.values() if isinstance(v.get(p), float)) for p in PHASES}
    print("\nTotals (ms): " + ", ".join(f"{p} {totals[p]:.1f}" for p in PHASES))
    print(
        f"Geometric mean structgen/llguidance over {len(ratios)} schemas: compile {_geomean(ratios):.2f}, "
        f"compile + first mask {_geomean(ratios_first):.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", default="llama-bpe")
    ap.add_argument("--maskbench", type=int, default=50, help="MaskBench schemas after schemas/ (default 50)")
    ap.add_argument("--schemas", default="", help="comma list of names (schemas/ or MaskBench) instead")
    ap.add_argument("--fresh", action="store_true", help="each schema in a fresh process")
    ap.add_argument("--repeat", type=int, default=1, help="runs (processes); medians are printed")
    ap.add_argument("--no-llguidance", action="store_true")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="wall (as the benchmark) or process CPU")
    ap.add_argument("--json", help="write the figures (medians) here")
    ap.add_argument("--structgen-from", help="import structgen from this checkout (another revision)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--only", help=argparse.SUPPRESS)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.structgen_from:
        sys.path.insert(0, str(Path(args.structgen_from).resolve()))
    if args.child:
        global _clock
        _clock = time.process_time_ns if args.clock == "cpu" else time.perf_counter_ns
        print(json.dumps(_run_here(args, args.only)))
        return
    print(f"Load: {os.popen('uptime').read().strip()}")
    print(f"structgen from: {args.structgen_from or ROOT}")
    runs = []
    for _ in range(args.repeat):
        if args.fresh:
            names = [c.name for c in _cases(args)]
            run: dict[str, dict[str, float | str]] = {}
            for name in names:
                run.update(_child(args, name))
            runs.append(run)
        else:
            runs.append(_child(args, None))
    figs = _median(runs)
    where = "fresh process per schema" if args.fresh else "one warm process"
    _print(figs, f"{where}, median of {args.repeat}, {args.clock} clock")
    print(f"Load: {os.popen('uptime').read().strip()}")
    if args.json:
        Path(args.json).write_text(json.dumps({"fresh": args.fresh, "repeat": args.repeat, "figures": figs}, indent=1))


if __name__ == "__main__":
    main()
