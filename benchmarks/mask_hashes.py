"""A digest of every mask along the valid instances of MaskBench schemas: the engine's exactness
across revisions, modes and tunings, as one comparable figure per schema.

    python benchmarks/mask_hashes.py --maskbench 300 --out /tmp/head.json
    python benchmarks/mask_hashes.py --maskbench 300 --mode aot --out /tmp/aot.json
    python benchmarks/mask_hashes.py --maskbench 300 --structgen-from /tmp/old --out /tmp/old.json
    python benchmarks/mask_hashes.py --compare /tmp/old.json /tmp/head.json

Each schema's valid instances (up to 3) are serialised compact and with ``json.dumps``' default
spacing, tokenised by longest match on the vocabulary, and walked: the SHA-256 runs over every
packed mask, every commit's answer and the final acceptance. Two runs agree on a schema exactly
when every mask along its walks is bit-identical. ``--structgen-from DIR`` imports structgen
from another checkout (a ``git worktree`` of an older revision), so both sides walk the same
inputs. Not a timing benchmark; it says nothing about speed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _digests(args: argparse.Namespace) -> dict[str, object]:
    if args.structgen_from:
        sys.path.insert(0, str(Path(args.structgen_from).resolve()))
    sys.path.insert(1, str(ROOT / "tests"))
    sys.path.insert(1, str(ROOT))
    from engine_support import greedy_tokens, load_vocab

    import structgen
    from benchmarks.inputs import load_named_schemas, maskbench_sample

    vocab = load_vocab(args.vocab)
    cases = maskbench_sample(args.maskbench, max_instances=3)
    if args.named:
        cases = load_named_schemas() + cases
    out: dict[str, str] = {}
    started = time.perf_counter()
    for case in cases:
        h = hashlib.sha256()
        try:
            grammar = structgen.Grammar.from_json_schema(case.schema)
            constraint = structgen.Constraint.compile(grammar, vocab, mode=args.mode)
        except structgen.StructgenError as e:
            out[case.name] = f"refused: {type(e).__name__}"
            continue
        for instance in case.instances:
            for text in (json.dumps(instance, separators=(",", ":"), ensure_ascii=False), json.dumps(instance)):
                state = constraint.start()
                for tok in greedy_tokens(vocab, text.encode("utf-8")):
                    h.update(state.mask_words().tobytes())
                    ok = state.commit_token(tok)
                    h.update(b"\1" if ok else b"\0")
                    if not ok:
                        break
                else:
                    h.update(state.mask_words().tobytes())
                    h.update(b"A" if state.is_accepting() else b"N")
        out[case.name] = h.hexdigest()
    return {
        "structgen": str(Path(structgen.__file__).parent),
        "vocab": args.vocab,
        "mode": args.mode,
        "schemas": len(out),
        "seconds": round(time.perf_counter() - started, 1),
        "digests": out,
    }


def _compare(a_path: str, b_path: str) -> int:
    a, b = (json.loads(Path(p).read_text())["digests"] for p in (a_path, b_path))
    common = sorted(set(a) & set(b))
    differ = [n for n in common if a[n] != b[n]]
    print(f"{len(common)} schemas in both, {len(differ)} differ")
    for name in differ[:20]:
        print(f"  {name}: {a[name][:16]} != {b[name][:16]}")
    return 1 if differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", default="llama-bpe")
    ap.add_argument("--maskbench", type=int, default=300, help="MaskBench schemas (the benchmark's seeded sample)")
    ap.add_argument("--named", action="store_true", help="the schemas of schemas/ too")
    ap.add_argument("--mode", choices=["lazy", "aot"], default="lazy")
    ap.add_argument("--structgen-from", default=None, metavar="DIR", help="import structgen from this checkout")
    ap.add_argument("--out", default=None)
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"))
    args = ap.parse_args()
    if args.compare:
        return _compare(*args.compare)
    result = _digests(args)
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(f"{result['schemas']} schemas in {result['seconds']} s ({result['structgen']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
