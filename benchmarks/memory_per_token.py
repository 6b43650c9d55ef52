"""Memory per token where the parse state grows with the output (issue 23 item 8).

    python benchmarks/memory_per_token.py                       # all three cases, 2,000 tokens each
    python benchmarks/memory_per_token.py --case string --tokens 5000 --warmup 1000
    python benchmarks/memory_per_token.py --structgen-from /tmp/old   # another checkout's engine
    python benchmarks/memory_per_token.py --case string --tuning count_offsets=false

Three reproducers on a real vocabulary (Llama 3 by default), each walked by one state
(``mask_words`` then ``commit_token`` per token):

- ``string``: ``{"type": "string", "maxLength": 1000000}`` over repeated English text, tokenized
  by longest match (tokens cross word boundaries as real ones do);
- ``nested``: any JSON (``{}``) as arrays nested N deep, ``[[[[...``, one ``[`` per token;
- ``regex``: ``(a|b)*a(a|b){24}`` over random ``a``/``b`` text, one byte per token.

After ``--warmup`` tokens (the mask cache and the first configurations fill), the growth over
the next ``--tokens`` tokens is reported per token: new configurations, stacks and terms, the
growth of ``Constraint.memory_bytes()`` (the engine's own estimate, what ``max_memory_bytes``
bounds), of the Python heap (tracemalloc, which slows the walk several times) and of the process's
RSS. A state's history holds one int per token (for rollback): 8 bytes of list slot, the ints
are small and shared, so flat means a few bytes per token. The mask cache is bounded by
``EngineLimits.max_cached_masks``; ``--cached-masks`` (256 by default) sets it low, so that it is
full after the warm-up and its growth does not count as the walk's. Table rows are allocated by
doubling, so ``memory_bytes`` and RSS jump where a doubling falls in the window. ``--tuning
FIELD=VALUE`` (repeatable) compiles under an ``EngineTuning``: ``count_offsets=false`` gives back a
configuration a token inside the long string (``structgen/engine/count_offsets.py``).
"""

from __future__ import annotations

import argparse
import gc
import json
import pathlib
import random
import sys
import tracemalloc
from typing import Any

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent

TEXT = (
    "The quick brown fox jumps over the lazy dog, and the committee agreed that the report "
    "should be finished before the end of the month. "
)


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def case_tokens(case: str, vocab: Any, n: int) -> tuple[Any, list[int]]:
    """The grammar of ``case`` and at least ``n`` tokens of a valid prefix."""
    from engine_support import greedy_tokens  # the tests' longest-match tokenizer (tests/ is on the path)

    from structgen import Grammar
    from structgen.schema import json_schema_to_grammar

    if case == "string":
        g = json_schema_to_grammar({"type": "string", "maxLength": 1_000_000})
        text = b'"'
        ids: list[int] = []
        while len(ids) < n:
            text += TEXT.encode() * 8
            ids = greedy_tokens(vocab, text)
        return g, ids[:n]
    if case == "nested":
        g = json_schema_to_grammar({})
        bracket = greedy_tokens(vocab, b"[")
        return g, bracket * n
    if case == "regex":
        g = Grammar.from_regex("(a|b)*a(a|b){24}")
        rng = random.Random(0)
        a, b = greedy_tokens(vocab, b"a"), greedy_tokens(vocab, b"b")
        return g, [rng.choice((a, b))[0] for _ in range(n)]
    raise ValueError(case)


def counts(c: Any) -> dict[str, int]:
    s = c.stats()
    return {"configs": s["configs"], "stacks": s["stacks"], "terms": s["terms"], "memory_bytes": c.memory_bytes()}


def measure(
    case: str, vocab: Any, warmup: int, tokens: int, heap: bool, cached_masks: int, tuning: dict[str, Any]
) -> dict[str, float]:
    from structgen import Constraint
    from structgen.engine.limits import EngineLimits
    from structgen.engine.tuning import EngineTuning

    g, ids = case_tokens(case, vocab, warmup + tokens)
    c = Constraint.compile(g, vocab, limits=EngineLimits(max_cached_masks=cached_masks), tuning=EngineTuning(**tuning))
    state = c.start()

    def walk(part: list[int]) -> None:
        for tok in part:
            state.mask_words()
            if not state.commit_token(tok):
                raise AssertionError(f"{case}: token {tok} refused at {state.num_tokens}")

    walk(ids[:warmup])
    gc.collect()
    before, rss0 = counts(c), rss_bytes()
    if heap:
        tracemalloc.start()
        h0 = tracemalloc.get_traced_memory()[0]
    walk(ids[warmup:])
    gc.collect()
    heap_growth = 0
    if heap:
        heap_growth = tracemalloc.get_traced_memory()[0] - h0
        tracemalloc.stop()
    after, rss1 = counts(c), rss_bytes()
    out: dict[str, float] = {k: (after[k] - before[k]) / tokens for k in after}
    out["heap_bytes"] = heap_growth / tokens
    out["rss_bytes"] = (rss1 - rss0) / tokens
    out["total_memory_bytes"] = after["memory_bytes"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", default="llama-bpe")
    ap.add_argument("--case", choices=("string", "nested", "regex", "all"), default="all")
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--tokens", type=int, default=2000)
    ap.add_argument("--no-heap", action="store_true", help="skip tracemalloc (faster; no heap column)")
    ap.add_argument("--json", action="store_true", help="print one JSON object per case")
    ap.add_argument("--cached-masks", type=int, default=256, help="EngineLimits.max_cached_masks")
    ap.add_argument("--structgen-from", default=None, metavar="DIR", help="import structgen from this checkout")
    ap.add_argument("--tuning", action="append", default=[], metavar="FIELD=VALUE", help="an EngineTuning field")
    args = ap.parse_args(argv)
    tuning: dict[str, Any] = {}
    for item in args.tuning:
        name, _, text = item.partition("=")
        flag = {"true": True, "false": False}.get(text.lower())
        tuning[name] = flag if flag is not None else int(text)
    sys.path.insert(0, str(REPO_ROOT))
    sys.path.insert(1, str(REPO_ROOT / "tests"))
    if args.structgen_from:
        sys.path.insert(0, str(pathlib.Path(args.structgen_from).resolve()))
    import structgen
    from structgen import Vocab
    from tools.assets import find_asset

    path = find_asset("vocab", args.vocab)
    if path is None:
        print("vocabulary not found: run `python tools/fetch_assets.py --dest .assets`")
        return 1
    vocab = Vocab.from_gguf(path)
    cases = ("string", "nested", "regex") if args.case == "all" else (args.case,)
    if not args.json:
        print(
            f"structgen from {pathlib.Path(structgen.__file__).parent}; vocabulary {args.vocab}; "
            f"warm-up {args.warmup} tokens, then {args.tokens} measured; max_cached_masks {args.cached_masks}"
        )
        print("| case | configs/tok | stacks/tok | terms/tok | memory_bytes/tok | heap B/tok | RSS B/tok |")
        print("|---|---|---|---|---|---|---|")
    for case in cases:
        r = measure(case, vocab, args.warmup, args.tokens, not args.no_heap, args.cached_masks, tuning)
        if args.json:
            print(json.dumps({"case": case, **r}))
        else:
            print(
                f"| {case} | {r['configs']:.2f} | {r['stacks']:.2f} | {r['terms']:.2f} | {r['memory_bytes']:.0f} | "
                f"{r['heap_bytes']:.0f} | {r['rss_bytes']:.0f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
