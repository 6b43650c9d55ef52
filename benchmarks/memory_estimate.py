"""``Constraint.memory_bytes()`` against what tracemalloc sees a constraint allocate, per schema.

    python benchmarks/memory_estimate.py                    # the schemas of schemas/, Llama 3
    python benchmarks/memory_estimate.py --maskbench 25     # a MaskBench sample instead
    python benchmarks/memory_estimate.py tree any_json      # some of schemas/

Per schema: a throwaway constraint walks the instances first (up to 3, default spacing; masks and
commits), so that the process-wide caches (unit counts, loop regions, shared walks) are filled;
then, under tracemalloc, a fresh constraint is compiled and walks the same instances. Printed:
the estimate at the end, the heap it grew by less the growth of the registered process-wide caches
(``structgen.caches.total_bytes``), their ratio, and the configurations, stacks and terms interned
(what ``MEMORY_PER_CONFIG`` / ``_STACK`` / ``_TERM`` in ``structgen/engine/constraint.py`` are
charged on). The estimate bounds ``EngineLimits.max_memory_bytes``: below 1.0 it counts less than
the constraint holds. ``benchmarks/memory_per_token.py`` compares the growth per token instead.
"""

from __future__ import annotations

import argparse
import gc
import pathlib
import sys
import tracemalloc

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="schemas of schemas/ (all by default)")
    ap.add_argument("--vocab", default="llama-bpe")
    ap.add_argument("--maskbench", type=int, default=0, help="a MaskBench sample of this size instead")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(REPO_ROOT))
    sys.path.insert(1, str(REPO_ROOT / "tests"))
    from engine_support import greedy_tokens, load_vocab

    import structgen.caches as caches
    from benchmarks.inputs import load_named_schemas, maskbench_sample, serialise
    from structgen import Constraint, Grammar

    vocab = load_vocab(args.vocab)
    cases = (
        maskbench_sample(args.maskbench, max_instances=3) if args.maskbench else load_named_schemas(args.names or None)
    )
    print("| schema | estimate | heap | ratio | configs | stacks | terms |")
    print("|---|---|---|---|---|---|---|")
    for case in cases:
        try:
            grammar = Grammar.from_json_schema(case.schema)
            walks = [greedy_tokens(vocab, serialise(i, "default").encode()) for i in case.instances[:3]]
            _walk(Constraint.compile(grammar, vocab), walks)
        except Exception as e:  # a schema the walk cannot take: reported, not measured
            print(f"| {case.name} | skipped: {type(e).__name__} | | | | | |")
            continue
        gc.collect()
        held0 = caches.total_bytes()
        tracemalloc.start()
        heap0 = tracemalloc.get_traced_memory()[0]
        c = Constraint.compile(grammar, vocab)
        _walk(c, walks)
        gc.collect()
        heap = tracemalloc.get_traced_memory()[0] - heap0 - (caches.total_bytes() - held0)
        tracemalloc.stop()
        est, s = c.memory_bytes(), c.stats()
        print(
            f"| {case.name} | {est:,} | {heap:,} | {est / max(heap, 1):.2f} | "
            f"{s['configs']} | {s['stacks']} | {s['terms']} |",
            flush=True,
        )
        del c
    return 0


def _walk(c: object, walks: list[list[int]]) -> None:
    for tokens in walks:
        state = c.start()  # type: ignore[attr-defined]
        for tok in tokens:
            state.mask_words()
            if not state.commit_token(tok):
                raise AssertionError(f"token {tok} refused")


if __name__ == "__main__":
    raise SystemExit(main())
