"""Function calls made by the masks of the benchmark's walks: interpreter work, counted, so that
the machine's speed does not move the figure.

    python benchmarks/mask_calls.py                       # the working tree, Llama 3, schemas/
    python benchmarks/mask_calls.py --against b4973c2     # and a git revision, side by side
    python benchmarks/mask_calls.py tool_call tree --vocab qwen2
    python benchmarks/mask_calls.py --maskbench 25 --tuning chained_crossings=false   # a switch's cost
    python benchmarks/mask_calls.py --maskbench 10 --mode aot --tuning stack_union=false

Timings on these shared machines move by up to 1.6x between processes a few minutes apart
(``docs/performance.md``, seventh run), so a change worth 5-10% of mask time cannot be told from
noise by timing it. This script walks what ``bench_masks.py`` walks for each schema (one
constraint; the first instance with default spacing, cold, then every instance with default and
compact spacing; tokenised as the benchmark does, by llama.cpp's tokenizer of the GGUF) and counts,
through ``sys.setprofile``, the Python function calls and the C calls made inside
``State.fill_bitmask``. The same code on the same inputs gives the same counts in every run.

``--tuning FIELD=VALUE[,...]`` counts the same walks under that ``EngineTuning`` in a fresh
process and prints it beside the default: what turning a mechanism off costs. ``--maskbench N``
adds the benchmark's seeded MaskBench sample; ``--mode aot`` compiles ahead of time and counts the
compile's calls too (its own column; the default limits, whose clock budget makes the compile's
share move between runs, so compare compile plus masks). The ``worst`` column is the most calls
one mask made.

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
from benchmarks.inputs import (  # noqa: E402
    VOCAB_ASSETS,
    Tokenizer,
    load_named_schemas,
    maskbench_sample,
    serialise,
    vocab_path,
)


def parse_tuning(items: list[str]) -> dict[str, bool | int]:
    """``FIELD=VALUE`` items (each may be a comma list) as ``EngineTuning`` keyword arguments."""
    out: dict[str, bool | int] = {}
    for item in ",".join(items).split(","):
        if item:
            name, _, text = item.partition("=")
            flag = {"true": True, "false": False}.get(text.lower())
            out[name] = int(text) if flag is None else flag
    return out


def count(
    names: list[str],
    vocab_name: str,
    tuning: dict[str, bool | int] | None = None,
    mode: str = "lazy",
    maskbench: int = 0,
) -> dict[str, dict[str, int]]:
    """Calls per schema of the working tree's (or the ``--root``'s) structgen."""
    import numpy as np

    from structgen import Constraint, EngineTuning, Grammar, Vocab

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
    cases = load_named_schemas(names or None) + maskbench_sample(maskbench)
    for case in cases:
        walks = []
        for inst in case.instances:
            texts = dict.fromkeys(serialise(inst, spacing) for spacing in ("default", "compact"))
            walks += [tokenizer.tokenize(t)[0] for t in texts]
        counts["call"] = counts["c_call"] = 0
        if mode == "aot":
            sys.setprofile(profile)
        grammar = Grammar.from_json_schema(case.schema)
        constraint = Constraint.compile(grammar, vocab, tuning=EngineTuning(**(tuning or {})), mode=mode)  # type: ignore[arg-type]
        sys.setprofile(None)
        compiled = counts["call"] + counts["c_call"]
        counts["call"] = counts["c_call"] = 0
        masks = worst = 0
        for ids in [walks[0]] + walks:
            state = constraint.start()
            for tok in ids:
                before = counts["call"] + counts["c_call"]
                sys.setprofile(profile)
                state.fill_bitmask(row, 0)
                sys.setprofile(None)
                worst = max(worst, counts["call"] + counts["c_call"] - before)
                masks += 1
                if not state.commit_token(tok):
                    raise SystemExit(f"{case.name}: a token of a valid instance was refused")
        out[case.name] = {
            "python": counts["call"],
            "c": counts["c_call"],
            "masks": masks,
            "worst": worst,
            "compile": compiled,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="schemas of schemas/ (default: all)")
    ap.add_argument("--vocab", default="llama-bpe", choices=sorted(VOCAB_ASSETS))
    ap.add_argument("--against", metavar="REV", help="also count structgen at this git revision")
    ap.add_argument("--tuning", action="append", default=[], help="FIELD=VALUE[,...]: also count under this tuning")
    ap.add_argument("--mode", choices=["lazy", "aot"], default="lazy")
    ap.add_argument("--maskbench", type=int, default=0, metavar="N", help="MaskBench schemas (the seeded sample)")
    ap.add_argument("--as-tuned", action="store_true", help=argparse.SUPPRESS)  # count under --tuning (a worker)
    ap.add_argument("--root", help=argparse.SUPPRESS)  # where structgen is imported from (--against)
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.root:
        sys.path.insert(0, args.root)
    if args.against and args.tuning:
        raise SystemExit("--against and --tuning compare with the default one at a time")
    tuning = parse_tuning(args.tuning)
    here = count(args.names, args.vocab, tuning if args.as_tuned else {}, args.mode, args.maskbench)
    if args.json:
        print(json.dumps(here))
        return 0
    shared = [*args.names, "--vocab", args.vocab, "--mode", args.mode, "--maskbench", str(args.maskbench), "--json"]
    there: dict[str, dict[str, int]] = {}
    if args.tuning:
        done = subprocess.run(
            [sys.executable, __file__, *shared, "--as-tuned", *(f"--tuning={t}" for t in args.tuning)],
            check=True,
            capture_output=True,
            text=True,
        )
        there = json.loads(done.stdout.strip().splitlines()[-1])
    elif args.against:
        with tempfile.TemporaryDirectory() as tmp:
            archive = subprocess.run(
                ["git", "-C", str(REPO_ROOT), "archive", args.against, "structgen"], check=True, capture_output=True
            ).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            done = subprocess.run(
                [sys.executable, __file__, *shared, "--root", tmp],
                check=True,
                capture_output=True,
                text=True,
            )
            there = json.loads(done.stdout.strip().splitlines()[-1])

    def work(c: dict[str, int]) -> int:  # every call: the compile's (aot), the masks' Python and C
        return c.get("compile", 0) + c["python"] + c["c"]

    other = f"`{','.join(args.tuning)}`" if args.tuning else f"at {args.against}"
    aot = " compile calls |" if args.mode == "aot" else ""
    extra = f" calls {other} | ratio | worst ratio |" if there else ""
    print("| schema | masks | Python calls | C calls | worst mask |" + aot + extra)
    print("|---|---|---|---|---|" + ("---|" if aot else "") + ("---|---|---|" if there else ""))
    total_here = total_there = 0
    for name, c in here.items():
        line = f"| {name} | {c['masks']} | {c['python']:,} | {c['c']:,} | {c['worst']:,} |"
        if aot:
            line += f" {c['compile']:,} |"
        total_here += work(c)
        if there:
            t = there[name]
            total_there += work(t)
            # a tuning's cost against the default; this tree against another revision
            ratio = work(t) / max(work(c), 1) if args.tuning else work(c) / max(work(t), 1)
            worst = t["worst"] / max(c["worst"], 1) if args.tuning else c["worst"] / max(t["worst"], 1)
            line += f" {work(t):,} | {ratio:.3f} | {worst:.2f} |"
        print(line)
    if there:
        ratio = total_there / max(total_here, 1) if args.tuning else total_here / max(total_there, 1)
        print(f"| all | | | | | {'|' if aot else ''} {total_there:,} | {ratio:.3f} | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
