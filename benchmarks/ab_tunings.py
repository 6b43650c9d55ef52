"""Compare EngineTunings on the dynamic path in CPU time, each in fresh processes, alternated.

    python benchmarks/ab_tunings.py --tuning loop_split=false --tuning chained_crossings=false --rounds 3
    python benchmarks/ab_tunings.py --against /work/main --rounds 5 --mode aot

Each round runs one fresh process per tuning (the default first, then each ``--tuning``, the order
rotating), and each process loads the Llama 3 vocabulary, then per schema of ``schemas/`` (or
``--schemas``) compiles a dynamic constraint and computes the mask of every position along every
instance in both spacings. ``--against DIR`` adds a process with the default tuning whose
``structgen`` is imported from another checkout (a ``git worktree`` of another revision), so a
removed mechanism is compared with the revision that had it; ``--mode aot`` compiles ahead of
time. Printed: per schema, the median over the rounds of the process CPU time
(``time.process_time``: on a shared machine, wall time moves with the other sessions' load far
more than CPU time does) of the compile and the masks, in ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def worker(fields: dict[str, bool | int], schemas: list[str] | None, root: str | None, mode: str) -> None:
    sys.path.insert(0, str(REPO))
    if root:
        sys.path.insert(0, root)
    import structgen
    from benchmarks.engines import vocab_data
    from benchmarks.inputs import Tokenizer, load_named_schemas, serialise, vocab_path
    from structgen import Constraint, Grammar, Vocab
    from structgen.engine.tuning import EngineTuning

    if not Path(structgen.__file__).resolve().is_relative_to(Path(root or REPO).resolve()):
        raise SystemExit(f"structgen came from {structgen.__file__}, not from {root or REPO}")

    path = vocab_path("llama-bpe")
    vocab, tok = Vocab.from_gguf(path), Tokenizer("llama-bpe", path, vocab_data("llama-bpe", path))
    tuning = EngineTuning(**fields)
    out = {}
    for case in load_named_schemas(schemas):
        walks = [tok.tokenize(serialise(i, s))[0] for i in case.instances for s in ("default", "compact")]
        t = time.process_time()
        c = Constraint.compile(Grammar.from_json_schema(case.schema), vocab, tuning=tuning, mode=mode)
        for ids in walks:
            st = c.start()
            for token in ids:
                st.mask_words()
                if not st.commit_token(token):
                    break
        out[case.name] = (time.process_time() - t) * 1000
    print(json.dumps(out))


def parse(items: list[str]) -> dict[str, bool | int]:
    out: dict[str, bool | int] = {}
    for item in items:
        name, _, text = item.partition("=")
        flag = {"true": True, "false": False}.get(text.lower())
        out[name] = int(text) if flag is None else flag
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tuning", action="append", default=[], help="FIELD=VALUE[,FIELD=VALUE]: one tuning to compare")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--schemas", help="comma list of schemas/ names (default: all)")
    p.add_argument("--against", action="append", default=[], metavar="DIR", help="a checkout to compare")
    p.add_argument("--mode", choices=["lazy", "aot"], default="lazy")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--root", help=argparse.SUPPRESS)
    a = p.parse_args()
    schemas = a.schemas.split(",") if a.schemas else None
    if a.worker is not None:
        worker(json.loads(a.worker), schemas, a.root, a.mode)
        return 0
    labels = ["default"] + a.tuning + [f"from {d}" for d in a.against]
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in labels}
    for r in range(a.rounds):
        for label in labels[r % len(labels) :] + labels[: r % len(labels)]:
            root = label[5:] if label.startswith("from ") else None
            fields = {} if label == "default" or root else parse(label.split(","))
            cmd = [sys.executable, __file__, "--worker", json.dumps(fields), "--mode", a.mode]
            cmd += (["--schemas", a.schemas] if a.schemas else []) + (["--root", root] if root else [])
            runs[label].append(json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout))
    names = list(runs["default"][0])
    print("| tuning | " + " | ".join(names) + " | total |")
    print("|---" * (len(names) + 2) + "|")
    for label in labels:
        med = [statistics.median(run[n] for run in runs[label]) for n in names]
        print(f"| {label} | " + " | ".join(f"{m:.0f}" for m in med) + f" | {sum(med):.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
