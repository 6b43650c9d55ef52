"""Positions per CPU second of ``Constraint.compile(mode="aot")`` with the clock budget lifted.

Each schema is compiled with ``EngineLimits(aot_budget_ms=600000, aot_max_configs=0)``, so only
the exploration of positions runs (structgen/engine/ahead.py ``_explore``) and it runs to its
end (or to ``aot_max_positions`` / ``aot_max_bytes``, printed as ``stop``). Printed per schema:
the compile's CPU time (``time.process_time``: steadier than wall time on a shared machine),
the positions explored and positions per CPU second, and the work counts (bottom masks,
relative parts, transitions computed, configurations). The default schemas are the ones whose
aot compile ended at the 1.5 s budget in the stream benchmark at 0e79c25.

    STRUCTGEN_ASSETS=/work/main/.assets STRUCTGEN_CORPORA=/work/shared/corpora \\
        python benchmarks/aot_positions.py [--schemas a,b] [--profile out.prof] [--json out.json]

Run from the checkout whose ``structgen`` to measure (it is imported from the working
directory). Compare revisions by alternating fresh processes, never one figure against an
older one. Not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import sys
import time

sys.path.insert(0, os.getcwd())

from benchmarks.inputs import load_named_schemas, maskbench_cases  # noqa: E402
from structgen import Constraint, Grammar  # noqa: E402
from structgen.engine.limits import EngineLimits  # noqa: E402
from structgen.vocab import Vocab  # noqa: E402

#: mostly bottom positions (whole masks of one-stack configurations), then mostly relative parts
SCHEMAS = (
    "realistic_model,Github_easy---o9924,Github_easy---o21490,Snowplow---sp_251_Normalized,"
    "Github_medium---o42568,Github_medium---o91089,Github_medium---o5027,Snowplow---sp_121_Normalized,"
    "Github_hard---o27793,Github_hard---o64563"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schemas", default=SCHEMAS, help="comma-separated: schemas/ names or MaskBench short names")
    ap.add_argument("--profile", help="write a cProfile of the compiles here")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    names = args.schemas.split(",")
    ours = [n for n in names if "---" not in n]
    theirs = [n for n in names if "---" in n]
    cases = (load_named_schemas(ours) if ours else []) + (maskbench_cases(theirs) if theirs else [])
    assets = os.environ.get("STRUCTGEN_ASSETS", ".assets")
    vocab = Vocab.from_gguf(os.path.join(assets, "vocab", "ggml-vocab-llama-bpe.gguf"))
    limits = EngineLimits(aot_budget_ms=600_000, aot_max_configs=0)
    prof = cProfile.Profile() if args.profile else None
    out: dict[str, dict[str, object]] = {}
    total_cpu = 0.0
    total_positions = 0
    for case in cases:
        grammar = Grammar.from_json_schema(case.schema)
        t0 = time.process_time()
        if prof:
            prof.enable()
        c = Constraint.compile(grammar, vocab, mode="aot", limits=limits)
        if prof:
            prof.disable()
        cpu = time.process_time() - t0
        r = c.report
        total_cpu += cpu
        total_positions += r.positions
        out[case.name] = {
            "cpu_s": cpu,
            "positions": r.positions,
            "stopped_by": r.stopped_by,
            "bottom_masks": r.bottom_masks,
            "relative_parts": r.relative_parts,
            "transitions": c._table.filled,
            "configs": len(c._system.configs),
        }
        print(
            f"{case.name:32s} cpu {cpu:6.2f}s positions {r.positions:6d} ({r.positions / cpu:5.0f}/s)"
            f" stop {r.stopped_by} bottom {r.bottom_masks} relative {r.relative_parts}"
            f" transitions {c._table.filled} configs {len(c._system.configs)}",
            flush=True,
        )
    print(f"TOTAL cpu {total_cpu:.2f}s positions {total_positions} ({total_positions / total_cpu:.0f}/s)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
    if prof:
        prof.dump_stats(args.profile)


if __name__ == "__main__":
    main()
