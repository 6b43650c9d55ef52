"""Interpreter work of a lazy compile's translate and lower phases, counted: the same figure in
every run, whatever else the machine is doing.

``compile_phases.py`` times the phases; on a shared two-core machine its figures move by 10-30%
between runs minutes apart, more than most single changes are worth. This script runs the same
phases over the same schemas (the stream benchmark's: ``schemas/`` then the MaskBench sample, in
that order, in one process) and counts, per phase, the bytecode instructions executed
(``sys.settrace`` opcode events) and the calls into C (``sys.setprofile``). With ``--top N`` it
also lists the N functions that execute the most instructions in each phase.

    STRUCTGEN_ASSETS=/work/main/.assets PYTHONHASHSEED=0 python benchmarks/compile_opcodes.py
    python benchmarks/compile_opcodes.py --structgen-from /path/to/other/checkout
    python benchmarks/compile_opcodes.py --schemas realistic_model,tool_call --top 20

Instructions are a proxy: a C call on a large dict counts as one, like an addition. Modules a
phase imports on first use count in it (``regex`` at the first pattern), as in the timings. Set
``PYTHONHASHSEED`` for repeatable counts (set iteration orders follow string hashes). Tracing makes
the run 20-50x slower than the phases themselves. Not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("translate", "lower")


def _count(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.inputs import SCHEMAS_DIR, load_named_schemas, maskbench_cases, maskbench_sample
    from structgen import Grammar
    from structgen.deadline import deadline_scope
    from structgen.engine.machines import build_machines
    from structgen.errors import StructgenError

    if args.schemas:
        names = args.schemas.split(",")
        named = {p.stem for p in SCHEMAS_DIR.glob("*.json")}
        ours, theirs = [n for n in names if n in named], [n for n in names if n not in named]
        cases = (load_named_schemas(ours) if ours else []) + (maskbench_cases(theirs) if theirs else [])
    else:
        cases = load_named_schemas() + maskbench_sample(args.maskbench, max_instances=1)
    opcodes = dict.fromkeys(PHASES, 0)
    c_calls = dict.fromkeys(PHASES, 0)
    per_function: dict[str, collections.Counter[tuple[str, int, str]]] = {p: collections.Counter() for p in PHASES}
    phase = PHASES[0]
    top = args.top > 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            opcodes[phase] += 1
            if top:
                code = frame.f_code
                where = (code.co_filename.rpartition("structgen/")[2], code.co_firstlineno, code.co_name)
                per_function[phase][where] += 1
        return tracer

    def profiler(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call":
            c_calls[phase] += 1

    def traced(fn: Any, *a: Any) -> Any:
        sys.settrace(tracer)
        sys.setprofile(profiler)
        try:
            return fn(*a)
        finally:
            sys.settrace(None)
            sys.setprofile(None)

    compiled = 0
    for case in cases:
        try:
            phase = "translate"
            grammar = traced(Grammar.from_json_schema, case.schema)
            phase = "lower"
            with deadline_scope(3600, limit="deadline_s"):
                traced(build_machines, grammar)
            compiled += 1
        except StructgenError:
            continue
    out: dict[str, Any] = {"schemas": len(cases), "compiled": compiled, "opcodes": opcodes, "c_calls": c_calls}
    if top:
        out["top"] = {
            p: [[f"{f}:{line} {name}", n] for (f, line, name), n in per_function[p].most_common(args.top)]
            for p in PHASES
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--maskbench", type=int, default=50, help="MaskBench schemas after schemas/ (default 50)")
    ap.add_argument("--schemas", default="", help="comma list of names (schemas/ or MaskBench) instead")
    ap.add_argument("--structgen-from", help="import structgen from this checkout (another revision)")
    ap.add_argument("--top", type=int, default=0, help="list the N functions executing the most instructions")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.structgen_from:
        sys.path.insert(0, str(Path(args.structgen_from).resolve()))
    import structgen

    out = _count(args)
    print(f"structgen from: {Path(structgen.__file__).parent}")
    print(f"{out['compiled']} of {out['schemas']} schemas compiled")
    for p in PHASES:
        print(f"{p}: {out['opcodes'][p]:,} instructions, {out['c_calls'][p]:,} C calls")
        total = out["opcodes"][p] or 1
        for where, n in out.get("top", {}).get(p, []):
            print(f"  {n / total * 100:5.1f}% {n:>11,}  {where}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
