"""Compare structgen's masks at two git revisions, each in fresh processes, alternated.

    python benchmarks/ab_revisions.py 54164eb HEAD --rounds 5

Each round runs one fresh process per revision (the order alternates), and each process does
what a benchmark worker does for structgen: load the Llama 3 vocabulary, then for every schema
in ``schemas/`` compile, walk the first instance (the cold walk) and then every instance in both
spacings (the warm walks), timing ``State.fill_bitmask`` per token. Printed: per schema, the
median over the rounds of each process's cold p50 and warm p99, in µs.

Why: single benchmark runs on a shared machine move by up to 2x between minutes, so two
benchmark runs of two revisions do not separate a change from the machine. Alternating short
fresh processes puts both revisions in the same phases. The instances and the timing loop come
from this checkout; only ``structgen`` is imported from each revision (a ``git worktree`` in a
temporary directory, removed afterwards).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def worker(structgen_root: str, vocab_name: str, schemas: list[str] | None = None) -> None:
    if not Path(structgen_root, "structgen", "__init__.py").exists():
        raise SystemExit(f"no structgen package under {structgen_root}")
    sys.path.insert(0, structgen_root)
    import structgen

    if not Path(structgen.__file__).resolve().is_relative_to(Path(structgen_root).resolve()):
        raise SystemExit(f"structgen came from {structgen.__file__}, not from {structgen_root}")

    sys.path.insert(0, str(REPO))
    import numpy as np

    from benchmarks.engines import vocab_data
    from benchmarks.inputs import Tokenizer, load_named_schemas, serialise, vocab_path
    from structgen import Constraint, Grammar, Vocab

    path = vocab_path(vocab_name)
    vocab = Vocab.from_gguf(path)
    tok = Tokenizer(vocab_name, path, vocab_data(vocab_name, path))
    row = np.zeros((1, (vocab.logit_width + 31) // 32), dtype=np.int32)
    out = {}
    for case in load_named_schemas(schemas):
        walks = [tok.tokenize(serialise(i, s))[0] for i in case.instances for s in ("default", "compact")]
        constraint = Constraint.compile(Grammar.from_json_schema(case.schema), vocab)
        cold: list[float] = []
        warm: list[float] = []
        for n, ids in enumerate([walks[0]] + walks):
            state = constraint.start()
            for t in ids:
                t0 = time.perf_counter_ns()
                state.fill_bitmask(row, 0)
                (cold if n == 0 else warm).append((time.perf_counter_ns() - t0) / 1e3)
                state.commit_token(t)
        out[case.name] = [float(np.median(cold)), float(np.percentile(warm, 99))]
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rev_a")
    parser.add_argument("rev_b")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--vocab", default="llama-bpe")
    parser.add_argument("--schemas", help="comma-separated names from schemas/ (default: all)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.vocab, args.schemas.split(",") if args.schemas else None)
        return
    revs = (args.rev_a, args.rev_b)
    results: list[list[dict[str, list[float]]]] = [[], []]
    with tempfile.TemporaryDirectory(prefix="structgen-ab-") as tmp:
        roots = [os.path.join(tmp, "rev0"), os.path.join(tmp, "rev1")]
        try:
            for root, rev in zip(roots, revs):
                subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", root, rev], check=True)
            for r in range(args.rounds):
                for i in (0, 1) if r % 2 == 0 else (1, 0):
                    command = [sys.executable, __file__, args.rev_a, args.rev_b, "--vocab", args.vocab]
                    command += ["--schemas", args.schemas] if args.schemas else []
                    done = subprocess.run(command + ["--worker", roots[i]], check=True, capture_output=True, text=True)
                    results[i].append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
        finally:
            for root in roots:
                if os.path.exists(root):
                    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", root], check=False)
    names = list(results[0][0])
    print(f"median of {args.rounds} fresh processes per revision (µs)")
    print(f"| schema | cold p50 {args.rev_a} | cold p50 {args.rev_b} | warm p99 {args.rev_a} | warm p99 {args.rev_b} |")
    print("|---|---|---|---|---|")
    for name in names:
        cold = [statistics.median(run[name][0] for run in results[i]) for i in (0, 1)]
        warm = [statistics.median(run[name][1] for run in results[i]) for i in (0, 1)]
        print(f"| {name} | {cold[0]:.0f} | {cold[1]:.0f} | {warm[0]:.0f} | {warm[1]:.0f} |")


if __name__ == "__main__":
    main()
