"""Budget masks, the masks ``generate()`` asks for at every step: their time along real instances.

    python benchmarks/budget_masks.py                          # every schema of schemas/, Llama 3
    python benchmarks/budget_masks.py realistic_model --instances 3 --budget tight

For each schema: compile, then walk its first instances (compact JSON, tokenised by llama.cpp's
own tokenizer of the vocabulary-only GGUF), asking at each step for ``State.mask_words(budget=k)``
with ``k`` either plentiful (``4000`` minus the step, as with a generous ``max_tokens``) or tight
(the tokens the instance still needs plus one, the smallest budget it fits in). Printed per
schema: steps, CPU time per step (``time.process_time``: less sensitive than wall time to the
other work on a shared machine) and the wall-time p50 / p99 / max of one mask, plain masks
alongside for comparison (a fresh constraint, the same walk).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from structgen import Constraint, Vocab  # noqa: E402
from structgen.schema import json_schema_to_grammar  # noqa: E402
from tools.assets import find_asset  # noqa: E402

SCHEMAS = REPO_ROOT / "schemas"
VOCABS = {"llama-bpe": "llama-bpe", "qwen2": "qwen2", "llama-spm": "llama-spm"}


def walk(c: Constraint, walks: list[list[int]], budget: str | None) -> tuple[float, np.ndarray]:
    """CPU seconds and per-step wall times (µs) of the masks along ``walks``."""
    cpu = 0.0
    times = []
    for ids in walks:
        st = c.start()
        for step, tok in enumerate(ids):
            k = None if budget is None else 4000 - step if budget == "plentiful" else len(ids) - step + 1
            c0, t0 = time.process_time(), time.perf_counter()
            st.mask_words(budget=k)
            times.append(time.perf_counter() - t0)
            cpu += time.process_time() - c0
            if not st.commit_token(tok):
                raise SystemExit(f"token {step} of an instance was refused")
    return cpu, np.asarray(times) * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="schemas of schemas/ (default: all)")
    ap.add_argument("--vocab", default="llama-bpe", choices=sorted(VOCABS))
    ap.add_argument("--instances", type=int, default=3)
    ap.add_argument("--budget", default="plentiful", choices=["plentiful", "tight"])
    args = ap.parse_args()
    import llama_cpp

    path = find_asset("vocab", VOCABS[args.vocab])
    if path is None:
        raise SystemExit(f"vocabulary {args.vocab} not found: run `make assets`")
    vocab = Vocab.from_gguf(str(path))
    llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    names = args.names or sorted(p.stem for p in SCHEMAS.glob("*.json"))
    print("| schema | steps | budget ms/step | p50 µs | p99 µs | max µs | plain ms/step |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        schema = json.loads((SCHEMAS / f"{name}.json").read_text())
        lines = (SCHEMAS / "instances" / f"{name}.jsonl").read_text().splitlines()[: args.instances]
        texts = [json.dumps(json.loads(line), separators=(",", ":")).encode() for line in lines]
        walks = [list(llm.tokenize(text, add_bos=False, special=False)) for text in texts]
        grammar = json_schema_to_grammar(schema)
        cpu, t = walk(Constraint.compile(grammar, vocab), walks, args.budget)
        plain, _ = walk(Constraint.compile(grammar, vocab), walks, None)
        n = t.size
        print(
            f"| {name} | {n} | {cpu * 1e3 / n:.2f} | {np.percentile(t, 50):.0f} | {np.percentile(t, 99):.0f} "
            f"| {t.max():.0f} | {plain * 1e3 / n:.2f} |"
        )


if __name__ == "__main__":
    main()
