"""A request's first mask after the caches went cold, against a warm one, for structgen and glrmask.

    python benchmarks/cold_fill.py                                  # schemas/ on Llama 3
    python benchmarks/cold_fill.py --schemas tool_call,enum --rounds 3
    python benchmarks/cold_fill.py --structgen-from /tmp/old        # another checkout's engine

The stream benchmark collects garbage before every request (``gc.collect()``), as a server's
forward pass and its other Python work do in effect: the first mask of each request then meets
cold CPU caches, and costs ten or twenty times a warm one in every engine. With about fifteen
masks per request on small schemas that first mask *is* the p99. Per schema of ``schemas/``
(compiled ahead of time, its given instances tokenized by longest match), this times the
request's first ``fill_bitmask`` after ``gc.collect()`` and the same call with nothing in between
(every mask met before, so both are cache hits of the engine), median over instances and rounds,
and glrmask's ``fill_mask`` the same way where it is installed. Fresh processes per revision
(``--structgen-from``) make two revisions comparable; timings within one run compare engines.
"""

from __future__ import annotations

import argparse
import gc
import json
import pathlib
import statistics
import sys
import time
from typing import Any, Callable

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


def timed(before: Callable[[], Any], call: Callable[[], Any]) -> float:
    before()
    t = time.perf_counter_ns()
    call()
    return (time.perf_counter_ns() - t) / 1e3


def structgen_case(vocab: Any, schema: Any, docs: list[bytes], rounds: int) -> dict[str, float]:
    import numpy as np
    from engine_support import greedy_tokens

    from structgen import Constraint, Grammar

    c = Constraint.compile(Grammar.from_json_schema(schema), vocab, mode="aot")
    out = np.zeros(c.mask_words_per_row, dtype=np.int32)
    walks = [greedy_tokens(vocab, d) for d in docs]
    for ids in walks:  # every mask met once: what follows times hits only
        st = c.start()
        st.fill_bitmask(out)
        for t in ids:
            st.commit_token(t)
            st.fill_bitmask(out)
    cold, warm = [], []
    for _ in range(rounds):
        for ids in walks:
            st = c.start()
            cold.append(timed(gc.collect, lambda: st.fill_bitmask(out)))
            warm.append(timed(lambda: None, lambda: st.fill_bitmask(out)))
    return {"cold_us": statistics.median(cold), "warm_us": statistics.median(warm)}


def glrmask_case(vocab: Any, schema: Any, n: int, rounds: int) -> dict[str, float] | None:
    """glrmask's first ``fill_mask`` of a request, cold and warm (built as benchmarks/engines.py
    builds it: text tokens only, the schema followed by the end ids); None where it is missing
    or refuses the schema."""
    try:
        import glrmask as gm
        import numpy as np
    except ImportError:
        return None
    try:
        ids = {i: vocab.token_bytes(i) for i in np.flatnonzero(~vocab.is_special).tolist()}
        eos = gm.TokenSet([int(e) for e in vocab.eos_token_ids])
        compiled = gm.Grammar.from_expr(gm.Expr.sequence(gm.Grammar.from_json_schema(schema), eos)).compile(
            gm.Vocab.from_id_to_bytes(ids)
        )
    except Exception:  # noqa: BLE001 - a schema glrmask refuses
        return None
    row = np.zeros((vocab.n_tokens + 31) // 32, dtype=np.int32)
    cold, warm = [], []
    for _ in range(rounds * n):
        st = compiled.start()
        st.fill_mask(row)  # its first mask computed once, as structgen's were
        st = compiled.start()
        cold.append(timed(gc.collect, lambda: st.fill_mask(row)))
        warm.append(timed(lambda: None, lambda: st.fill_mask(row)))
    return {"cold_us": statistics.median(cold), "warm_us": statistics.median(warm)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", default="llama-bpe")
    ap.add_argument("--schemas", default="all", help="comma list of schemas/ names")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--structgen-from", default=None, help="a checkout whose structgen package is timed")
    args = ap.parse_args(argv)
    root = pathlib.Path(args.structgen_from).resolve() if args.structgen_from else REPO_ROOT
    sys.path[:0] = [str(root), str(REPO_ROOT / "tests")]
    from engine_support import load_vocab

    vocab = load_vocab(args.vocab)
    names = sorted(p.stem for p in (REPO_ROOT / "schemas").glob("*.json"))
    if args.schemas != "all":
        names = [n for n in names if n in args.schemas.split(",")]
    print(f"{'schema':18s} {'structgen cold':>15s} {'warm':>6s} {'glrmask cold':>13s} {'warm':>6s}  (µs, medians)")
    for name in names:
        schema = json.loads((REPO_ROOT / "schemas" / f"{name}.json").read_text())
        lines = (REPO_ROOT / "schemas" / "instances" / f"{name}.jsonl").read_text().splitlines()
        docs = [json.dumps(json.loads(x), ensure_ascii=False).encode() for x in lines if x.strip()]
        sg = structgen_case(vocab, schema, docs, args.rounds)
        peer = glrmask_case(vocab, schema, len(docs), args.rounds)
        pc, pw = ("-", "-") if peer is None else (f"{peer['cold_us']:.1f}", f"{peer['warm_us']:.1f}")
        print(f"{name:18s} {sg['cold_us']:15.1f} {sg['warm_us']:6.1f} {pc:>13s} {pw:>6s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
