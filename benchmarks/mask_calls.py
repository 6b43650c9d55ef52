"""Function calls made by the masks of the benchmark's walks: interpreter work, counted, so that
the machine's speed does not move the figure.

    python benchmarks/mask_calls.py                       # the working tree, Llama 3, schemas/
    python benchmarks/mask_calls.py --against b4973c2     # and a git revision, side by side
    python benchmarks/mask_calls.py tool_call tree --vocab qwen2

Timings on these shared machines move by up to 1.6x between processes a few minutes apart
(``docs/performance.md``, seventh run), so a change worth 5-10% of mask time cannot be told from
noise by timing it. This script walks what ``bench_masks.py`` walks for each schema (one
constraint; the first instance with default spacing, cold, then every instance with default and
compact spacing; tokenised as the benchmark does, by llama.cpp's tokenizer of the GGUF) and counts,
through ``sys.setprofile``, the Python function calls and the C calls made inside
``State.fill_bitmask``. The same code on the same inputs gives the same counts in every run.

``--against REV`` extracts ``structgen/`` at git revision ``REV`` into a temporary directory, runs
the same count there in a subprocess, and prints both with their ratio. Calls are a proxy: a call
into numpy on 100,000 elements counts as one, like a dictionary lookup. Time what the counts
single out (``bench_masks.py``, best of several alternated runs).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
from typing import Any

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.engines import vocab_data  # noqa: E402
from benchmarks.inputs import VOCAB_ASSETS, Tokenizer, load_named_schemas, serialise, vocab_path  # noqa: E402


def count(names: list[str], vocab_name: str) -> dict[str, dict[str, int]]:
    """Calls per schema of the working tree's (or the ``--root``'s) structgen."""
    import numpy as np

    from structgen import Constraint, Grammar, Vocab

    path = vocab_path(vocab_name)
    if path is None:
        raise SystemExit(f"vocabulary {vocab_name} not found: run `make assets`")
    vocab = Vocab.from_gguf(path)
    tokenizer = Tokenizer(vocab_name, path, vocab_data(vocab_name, path))
    row = np.zeros((1, (vocab.logit_width + 31) // 32), dtype=np.int32)
    counts = {"call": 0, "c_call": 0}

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event in counts:
            counts[event] += 1

    out: dict[str, dict[str, int]] = {}
    for case in load_named_schemas(names or None):
        walks = []
        for inst in case.instances:
            texts = dict.fromkeys(serialise(inst, spacing) for spacing in ("default", "compact"))
            walks += [tokenizer.tokenize(t)[0] for t in texts]
        constraint = Constraint.compile(Grammar.from_json_schema(case.schema), vocab)
        counts["call"] = counts["c_call"] = 0
        masks = 0
        for ids in [walks[0]] + walks:
            state = constraint.start()
            for tok in ids:
                sys.setprofile(profile)
                state.fill_bitmask(row, 0)
                sys.setprofile(None)
                masks += 1
                if not state.commit_token(tok):
                    raise SystemExit(f"{case.name}: a token of a valid instance was refused")
        out[case.name] = {"python": counts["call"], "c": counts["c_call"], "masks": masks}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="schemas of schemas/ (default: all)")
    ap.add_argument("--vocab", default="llama-bpe", choices=sorted(VOCAB_ASSETS))
    ap.add_argument("--against", metavar="REV", help="also count structgen at this git revision")
    ap.add_argument("--root", help=argparse.SUPPRESS)  # where structgen is imported from (--against)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.root:
        sys.path.insert(0, args.root)
    here = count(args.names, args.vocab)
    if args.json:
        print(json.dumps(here))
        return 0
    there: dict[str, dict[str, int]] = {}
    if args.against:
        with tempfile.TemporaryDirectory() as tmp:
            archive = subprocess.run(
                ["git", "-C", str(REPO_ROOT), "archive", args.against, "structgen"], check=True, capture_output=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            done = subprocess.run(
                [sys.executable, __file__, *args.names, "--vocab", args.vocab, "--root", tmp, "--json"],
                check=True,
                capture_output=True,
                text=True,
            )
            there = json.loads(done.stdout.strip().splitlines()[-1])
    against = f" Python calls at {args.against} | ratio |" if there else ""
    print("| schema | masks | Python calls | C calls |" + against)
    print("|---|---|---|---|" + ("---|---|" if there else ""))
    total = {"python": 0, "c": 0}
    total_there = 0
    for name, c in here.items():
        total["python"] += c["python"]
        total["c"] += c["c"]
        line = f"| {name} | {c['masks']} | {c['python']:,} | {c['c']:,} |"
        if there:
            t = there[name]["python"]
            total_there += t
            line += f" {t:,} | {c['python'] / max(t, 1):.3f} |"
        print(line)
    line = f"| all | | {total['python']:,} | {total['c']:,} |"
    if there:
        line += f" {total_there:,} | {total['python'] / max(total_there, 1):.3f} |"
    print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
