"""Per-token cost of structgen's masks next to the model's own forward pass, on real models.

    STRUCTGEN_ASSETS=.assets python tools/measure_generation.py [--threads 1] [--models smollm2 gemma3-270m]

For each model and each case of ``tests/model_cases.py`` it generates three times at temperature
1.0 (seed 0 is the first request with that schema, seeds 1 and 2 reuse the compiled constraint)
and prints medians of ``GenerationResult.stats``: the figures in docs/adapters.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["smollm2", "gemma3-270m"])
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--max-tokens", type=int, default=160)
    args = ap.parse_args(argv)

    from model_cases import CASES

    from structgen.generate import generate_result
    from structgen.models import load_llama, require_model

    for name in args.models:
        llm = load_llama(require_model(name), n_ctx=4096, n_threads=args.threads)
        rows: dict[str, list] = {"first request with the schema": [], "schema seen before": []}
        for case in CASES:
            for seed in (0, 1, 2):
                r = generate_result(
                    llm, case.output_type, case.messages(), temperature=1.0, seed=seed, max_tokens=args.max_tokens
                )
                rows["first request with the schema" if seed == 0 else "schema seen before"].append(r.stats)
        for kind, stats in rows.items():
            masks = sorted(s.mask_ms_per_token for s in stats)
            tokens = sum(s.output_tokens for s in stats)
            forced = sum(s.forced_tokens for s in stats)
            print(
                f"{name}, {kind} ({len(stats)} runs): model {statistics.median(s.model_ms_per_token for s in stats):.1f} ms/token, "  # noqa: E501
                f"mask {statistics.median(masks):.2f} ms/token (p90 {masks[int(0.9 * len(masks))]:.2f}), "
                f"added latency {statistics.median(s.overhead_ms_per_token for s in stats):.2f} ms/token, "
                f"forced {forced}/{tokens} tokens ({100 * forced / max(tokens, 1):.0f}%)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
