"""The cost of the greedy-lexeme liveness filter (docs/engine.md, "Greedy lexemes at machine
boundaries"), two checkouts side by side in alternated fresh processes.

    python benchmarks/lexeme_liveness.py                          # this checkout, 3 processes
    python benchmarks/lexeme_liveness.py --against /work/main --rounds 5

Each process loads the vocabulary, compiles a recursive GLRM grammar of nested lists and maps
whose words and numbers are greedy lexemes (``/[a-z]+/``, ``/[0-9]+/``), so that every new mask
goes through the filter, and builds the mask before each byte of a document (one byte a token)
and at its end. Printed per checkout: the median CPU seconds of those masks over the rounds
(``time.process_time``: other processes on a shared machine move it less than wall time), and
counts that do not move with the machine: masks, the commits the filter made (``Constraint``'s
commit memo after the masks) and the configurations interned. ``digest`` is a hash of every mask:
two checkouts that give bit-identical masks print the same one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

GRAMMAR = r"""
start v;
t W = /[a-z]+/;
t N = /[0-9]+/;
nt v = W | N | "[" (v ("," v)*)? "]" | "{" (W ":" v ("," W ":" v)*)? "}";
"""
DOCUMENT = b"{key:[12,ab,{x:[3,c]}],val:[word,45]}"


def worker(root: str, vocab_name: str) -> dict[str, object]:
    sys.path.insert(0, root)
    import structgen

    if not Path(structgen.__file__).resolve().is_relative_to(Path(root).resolve()):
        raise SystemExit(f"structgen came from {structgen.__file__}, not from {root}")
    sys.path.insert(1, str(REPO))
    import numpy as np

    from benchmarks.inputs import vocab_path
    from structgen import Constraint, Grammar, Vocab

    path = vocab_path(vocab_name)
    if path is None:
        raise SystemExit(f"vocabulary {vocab_name} not found: run `make assets`")
    vocab = Vocab.from_gguf(path)
    single = {vocab.token_bytes(t): t for t in range(vocab.n_tokens) if vocab.is_text[t]}
    tokens = [single[bytes([b])] for b in DOCUMENT]
    grammar = Grammar.from_glrm(GRAMMAR)
    started = time.process_time()
    c = Constraint.compile(grammar, vocab)
    state = c.start()
    digest = hashlib.sha256()
    masks = 0
    for t in [*tokens, None]:
        mask = state.mask()
        digest.update(np.packbits(mask).tobytes())
        masks += 1
        if t is not None:
            assert mask[t], "the document left the grammar"
            state.commit_token(t)
    cpu = time.process_time() - started
    return {
        "cpu_s": round(cpu, 4),
        "masks": masks,
        "commits": len(c._commits),
        "configs": len(c._system.configs),
        "digest": digest.hexdigest()[:16],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", help="another checkout's root (its structgen/ is imported)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--vocab", default="llama-bpe")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.vocab)))
        return
    roots = {"this": str(REPO)}
    if args.against:
        roots["against"] = str(Path(args.against).resolve())
    runs: dict[str, list[dict[str, object]]] = {k: [] for k in roots}
    for r in range(args.rounds):
        order = list(roots) if r % 2 == 0 else list(reversed(roots))
        for name in order:
            cmd = [sys.executable, __file__, "--worker", roots[name], "--vocab", args.vocab]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            runs[name].append(json.loads(out.strip().splitlines()[-1]))
    for name, rs in runs.items():
        first = rs[0]
        cpu = statistics.median(float(x["cpu_s"]) for x in rs)  # type: ignore[arg-type]
        print(
            f"{name:8s} {roots[name]}: cpu {cpu:.3f} s (median of {len(rs)}: "
            f"{', '.join(str(x['cpu_s']) for x in rs)}), masks {first['masks']}, "
            f"commits {first['commits']}, configs {first['configs']}, digest {first['digest']}"
        )


if __name__ == "__main__":
    main()
