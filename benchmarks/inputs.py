"""What the benchmark walks: schemas with valid instances, serialised and tokenised.

* :func:`load_named_schemas` reads ``schemas/NAME.json`` and ``schemas/instances/NAME.jsonl``;
* :func:`maskbench_sample` draws a deterministic sample from the MaskBench archive;
* :class:`Tokenizer` turns an instance's text into token ids the way the model's runtime would
  (llama.cpp's own tokenizer, loaded vocab-only from the GGUF), falling back to a greedy
  longest match over the vocabulary when llama-cpp-python is missing or disagrees.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import tarfile
from dataclasses import dataclass, field
from typing import Any

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
SCHEMAS_DIR = REPO_ROOT / "schemas"
VOCAB_ASSETS = {
    "llama-bpe": ("vocab", "llama-bpe"),
    "qwen2": ("vocab", "qwen2"),
    "llama-spm": ("vocab", "llama-spm"),
    "gemma3": ("model", "gemma3-270m"),
}


@dataclass
class Case:
    """One schema and its valid instances."""

    name: str
    schema: Any
    instances: list[Any]
    group: str = "schemas"  #: "schemas" (the named ones) or "maskbench"


@dataclass
class Walk:
    """One instance serialised one way, as token ids of one vocabulary."""

    instance: int
    spacing: str  #: "compact" or "default"
    ids: list[int]
    text_bytes: int
    tokenizer: str  #: "llama.cpp" or "greedy"


@dataclass
class Job:
    """Everything a worker needs to measure one case on one vocabulary."""

    case: str
    group: str
    schema: Any
    walks: list[Walk] = field(default_factory=list)


@dataclass
class StreamJob:
    """One schema of the stream mode: compile once, then walk every request once, in order."""

    case: str
    group: str
    schema: Any
    walks: list[Walk] = field(default_factory=list)
    #: seconds of walking after which the remaining requests are left (soft: a walk is finished)
    walk_cap_s: float = 120.0
    #: keep the compiled object in the worker for a later :class:`BatchJob`
    keep: bool = False


@dataclass
class BatchJob:
    """Batch fill on the constraints a worker kept from its stream jobs: (case, ids) per row."""

    requests: list[tuple[str, list[int]]]
    steps: int
    case: str = "fill_bitmasks"
    group: str = "batch"


def serialise(value: Any, spacing: str) -> str:
    if spacing == "compact":
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False)


def vocab_path(name: str) -> str | None:
    import sys

    sys.path.insert(0, str(REPO_ROOT))
    try:
        from tools.assets import find_asset
    finally:
        sys.path.remove(str(REPO_ROOT))
    kind, asset = VOCAB_ASSETS[name]
    p = find_asset(kind, asset)
    return str(p) if p is not None else None


def load_named_schemas(names: list[str] | None = None) -> list[Case]:
    available = sorted(p.stem for p in SCHEMAS_DIR.glob("*.json"))
    wanted = names or available
    cases = []
    for name in wanted:
        if name not in available:
            raise SystemExit(f"unknown schema {name!r}; available: {', '.join(available)}")
        schema = json.loads((SCHEMAS_DIR / f"{name}.json").read_text(encoding="utf-8"))
        lines = (SCHEMAS_DIR / "instances" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        cases.append(Case(name, schema, [json.loads(x) for x in lines if x.strip()]))
    return cases


def corpora_dir() -> pathlib.Path | None:
    env = os.environ.get("STRUCTGEN_CORPORA")
    for c in ([pathlib.Path(env)] if env else []) + [
        REPO_ROOT.parent / "shared" / "corpora",
        pathlib.Path("/work/shared/corpora"),
    ]:
        if c.is_dir():
            return c
    return None


def maskbench_sample(n: int, max_instances: int = 3) -> list[Case]:
    """``n`` MaskBench schemas with at least one valid instance, uniformly drawn but
    deterministic: members ordered by the sha256 of their name, first ``n`` that qualify."""
    corpora = corpora_dir()
    if corpora is None or n <= 0:
        return []
    archive = corpora / "jsonschemabench" / "maskbench-data-full.tar.xz"
    if not archive.is_file():
        return []
    with tarfile.open(archive) as tf:
        names = [m for m in tf.getnames() if m.endswith(".json")]
    names.sort(key=lambda s: hashlib.sha256(s.encode()).hexdigest())
    candidates = set(names[: max(4 * n, n + 50)])
    found: dict[str, Case] = {}
    with tarfile.open(archive) as tf:
        for member in tf:
            if member.name not in candidates:
                continue
            f = tf.extractfile(member)
            if f is None:
                continue
            try:
                data = json.load(f)
            except ValueError:
                continue
            valid = [t["data"] for t in data.get("tests", []) if t.get("valid")]
            if valid and isinstance(data.get("schema"), (dict, bool)):
                short = member.name.removeprefix("data/").removesuffix(".json")
                found[member.name] = Case(short, data["schema"], valid[:max_instances], group="maskbench")
    ordered = [found[m] for m in names if m in found]
    return ordered[:n]


def maskbench_cases(names: list[str]) -> list[Case]:
    """The MaskBench schemas of these short names (``Github_easy---o9924``), all their valid
    instances; a name the archive lacks is an error."""
    corpora = corpora_dir()
    archive = corpora / "jsonschemabench" / "maskbench-data-full.tar.xz" if corpora else None
    if archive is None or not archive.is_file():
        raise SystemExit("MaskBench archive missing: see /work/shared/corpora/README.md")
    wanted = {f"data/{n}.json": n for n in names}
    found: dict[str, Case] = {}
    with tarfile.open(archive) as tf:
        for member in tf:
            if member.name in wanted and (f := tf.extractfile(member)) is not None:
                data = json.load(f)
                valid = [t["data"] for t in data.get("tests", []) if t.get("valid")]
                found[wanted[member.name]] = Case(wanted[member.name], data["schema"], valid, group="maskbench")
    missing = [n for n in names if n not in found]
    if missing:
        raise SystemExit(f"not in schemas/ nor in MaskBench: {', '.join(missing)}")
    return [found[n] for n in names]


class Tokenizer:
    """Token ids for text, as the model's runtime produces them mid-sequence (no BOS, no
    SentencePiece dummy-prefix space); checked to decode back to the same bytes."""

    def __init__(self, vocab_name: str, path: str, vd: Any) -> None:
        self.vd = vd
        self.llm = None
        self.method = "greedy"
        try:
            import llama_cpp

            self.llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
            self.method = "llama.cpp"
        except Exception:  # noqa: BLE001 - not installed or cannot load: greedy fallback
            self.llm = None

    def _decode(self, ids: list[int]) -> bytes:
        return b"".join(self.vd.tokens[i] for i in ids)

    def tokenize(self, text: str) -> tuple[list[int], str]:
        data = text.encode("utf-8")
        if self.llm is not None:
            try:
                ids = list(self.llm.tokenize(data, add_bos=False, special=False))
            except Exception:  # noqa: BLE001
                ids = []
            got = self._decode(ids)
            if got == data:
                return ids, "llama.cpp"
            if ids and got == b" " + data:
                # SentencePiece dummy prefix: re-spell the first token without its space
                first = self.vd.tokens[ids[0]][1:]
                head = self.vd.greedy_tokenize(first) if first else []
                ids = head + ids[1:]
                if self._decode(ids) == data:
                    return ids, "llama.cpp"
        return self.vd.greedy_tokenize(data), "greedy"


def build_jobs(cases: list[Case], tokenizer: Tokenizer) -> list[Job]:
    jobs = []
    for case in cases:
        job = Job(case.name, case.group, case.schema)
        for k, inst in enumerate(case.instances):
            for spacing in ("default", "compact"):
                text = serialise(inst, spacing)
                if spacing == "compact" and text == serialise(inst, "default"):
                    continue  # a scalar: both spellings are the same text
                ids, how = tokenizer.tokenize(text)
                job.walks.append(Walk(k, spacing, ids, len(text.encode("utf-8")), how))
        jobs.append(job)
    return jobs
