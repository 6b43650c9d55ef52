"""A long generation: per-step mask time and memory stay flat over 10,000+ steps.

    python benchmarks/long_generation.py                     # Llama 3 vocabulary, 10,000 steps
    python benchmarks/long_generation.py --steps 20000 --vocab qwen2

The output is a JSON array of objects (``schemas/`` has none this long), written as a model would
(default ``json.dumps`` spacing), tokenised by llama.cpp's own tokenizer of the vocabulary-only
GGUF. One state walks it token by token: ``fill_bitmask`` (timed), a check that the next token is
allowed (untimed), ``commit_token`` (timed). Printed per window of 1,000 steps: mask p50 / p99 /
max, commit p50, the state's history length, the constraint's configuration count and cached
masks, and the process's RSS. Flat means: after the first window (cold misses), p50/p99 and the
configuration count no longer grow with the output's length; memory grows only by the state's
history (one int per token, kept for ``rollback``).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import random
import resource
import sys
import time

import numpy as np

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from structgen import Constraint, Grammar, Vocab  # noqa: E402
from structgen.engine.masks import allocate_bitmask  # noqa: E402
from tools.assets import find_asset  # noqa: E402

SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "minimum": 0},
            "name": {"type": "string", "maxLength": 40},
            "score": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["red", "green", "blue"]}},
            "active": {"type": "boolean"},
        },
        "required": ["id", "name", "score", "tags", "active"],
        "additionalProperties": False,
    },
}
VOCABS = {"llama-bpe": "llama-bpe", "qwen2": "qwen2", "llama-spm": "llama-spm"}


def instance(n_items: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "omega", "Ünïcode", "naïve café", "x" * 30]
    return [
        {
            "id": i,
            "name": rng.choice(words) + f" {i}",
            "score": round(rng.uniform(-1000, 1000), rng.randint(0, 4)),
            "tags": rng.sample(["red", "green", "blue"], rng.randint(0, 3)),
            "active": rng.random() < 0.5,
        }
        for i in range(n_items)
    ]


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def tokenize(path: pathlib.Path, text: str) -> list[int]:
    import llama_cpp

    llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    return list(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", default="llama-bpe", choices=sorted(VOCABS))
    ap.add_argument("--steps", type=int, default=10_000)
    ap.add_argument("--window", type=int, default=1_000)
    args = ap.parse_args(argv)

    path = find_asset("vocab", VOCABS[args.vocab])
    if path is None:
        print("vocabulary not found: run `python tools/fetch_assets.py --dest .assets`")
        return 1
    vocab = Vocab.from_gguf(path)
    items: list[dict] = []
    ids: list[int] = []
    while len(ids) < args.steps:  # grow the array until it has enough tokens
        items = instance(max(16, len(items) * 2))
        text = json.dumps(items)
        ids = tokenize(path, text)
    assert b"".join(vocab.token_bytes(i) for i in ids) == text.encode("utf-8"), "tokens do not spell the text"

    t0 = time.perf_counter()
    constraint = Constraint.compile(Grammar.from_json_schema(SCHEMA), vocab)
    compile_ms = (time.perf_counter() - t0) * 1e3
    state = constraint.start()
    out = allocate_bitmask(1, vocab.logit_width)
    print(
        f"vocabulary {args.vocab} ({vocab.logit_width} logits); {len(ids)} tokens, {len(items)} objects; "
        f"compile {compile_ms:.0f} ms; RSS {rss_mb():.0f} MB"
    )
    print("| steps | mask p50 µs | mask p99 µs | mask max µs | commit p50 µs | history | configs | RSS MB |")
    print("|---|---|---|---|---|---|---|---|")
    masks: list[float] = []
    commits: list[float] = []
    for step, tok in enumerate(ids[: args.steps], start=1):
        out[:] = 0
        t = time.perf_counter_ns()
        state.fill_bitmask(out, 0)
        masks.append((time.perf_counter_ns() - t) / 1e3)
        if not (int(out[0, tok >> 5]) >> (tok & 31)) & 1:
            print(f"token {tok} ({vocab.token_bytes(tok)!r}) not allowed at step {step}")
            return 1
        t = time.perf_counter_ns()
        ok = state.commit_token(tok)
        commits.append((time.perf_counter_ns() - t) / 1e3)
        assert ok
        if step % args.window == 0:
            m = np.array(masks)
            configs = constraint.stats()["configs"]
            print(
                f"| {step - args.window + 1}-{step} | {np.percentile(m, 50):.1f} | {np.percentile(m, 99):.1f} | "
                f"{m.max():.0f} | {np.percentile(commits, 50):.1f} | {state.num_tokens} | {configs} | {rss_mb():.0f} |"
            )
            masks.clear()
            commits.clear()
    return 0


if __name__ == "__main__":
    sys.exit(main())
