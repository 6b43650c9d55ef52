r"""The stream benchmark's requests: per schema, distinct valid instances, each to be walked once.

For every schema the set is the instances that come with it (``schemas/instances/NAME.jsonl``, or
the MaskBench file's valid tests) followed by instances drawn with ``hypothesis-jsonschema``,
seeded per schema, until :attr:`StreamTuning.instances` distinct texts are found. Every instance

* has its object keys put in schema order (``tests/schema_corpus.py``'s ``Orderer``: keys the
  schema lists, following ``$ref``, ``allOf`` and the matching branch, then the others), the order
  a generation engine writes them in: structgen accepts other orders only in objects of at most
  ``SchemaOptions.any_order_up_to`` keys, and its peers follow the schema's order;
* is checked with ``jsonschema`` (formats asserted) after reordering; an invalid one is counted
  and left out. Patterns are matched as ECMA-262 reads them (:func:`ecma_patterns`): there
  ``\d`` and ``\w`` are ASCII, where Python's ``re`` also takes other scripts' digits and letters;
  the generator draws from the same reading;
* is serialised one way only, :func:`request_text`: ``json.dumps`` with its default ``", "`` and
  ``": "`` separators and ``ensure_ascii=False``, keys in the instance's order. That spacing is
  one a model writes and the only one every engine's schema grammar takes (glrmask's takes no
  other).

Generation runs in a child process (:class:`InstanceGenerator`) that is killed past a hard time
limit: ``hypothesis-jsonschema`` canonicalises a schema in pure Python, which can take unbounded
time on some large schemas. Recursive ``$ref``s, which ``hypothesis-jsonschema`` refuses, are
first unrolled a few levels (:func:`unroll_refs`; deeper recursion becomes ``false``, so the
unrolled schema accepts a subset of the original's instances).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import random
import time
import types
from dataclasses import dataclass, field
from typing import Any

import jsonschema


@dataclass(frozen=True)
class StreamTuning:
    """How many requests per schema and how they are drawn."""

    #: distinct instances per schema (given ones included): the issue asks for at least 20; a few
    #: more leave 20 walked to the end when an engine rejects some
    instances: int = 24
    #: base seed; each schema's generator is seeded with a hash of it and the schema's name, so a
    #: schema's instances do not depend on which other schemas run
    seed: int = 20261201
    #: seconds of drawing per schema before stopping with fewer instances (the machine is shared)
    generation_cap_s: float = 20.0
    #: hard limit on one schema's generation, canonicalisation included: the child is killed
    generation_kill_s: float = 60.0
    #: examples Hypothesis draws at most per schema (many are duplicates of small values)
    max_examples: int = 1500
    #: generated texts longer than this (UTF-8 bytes) are skipped so that a run stays within its
    #: time; given instances are kept whatever their length
    max_generated_bytes: int = 4000
    #: levels a recursive ``$ref`` is unrolled for the generator
    unroll_depth: int = 3
    #: unrolled schemas larger than this (bytes of JSON) are not generated from
    unroll_max_bytes: int = 2_000_000


@dataclass
class StreamSet:
    """One schema's requests, in walking order, and what happened to the candidates."""

    name: str
    texts: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  #: "given" or "generated", per text
    counts: dict[str, int] = field(default_factory=dict)
    generation_error: str | None = None


def request_text(value: Any) -> str:
    """The one serialisation the stream walks (see the module docstring)."""
    return json.dumps(value, ensure_ascii=False)


def case_seed(base: int, name: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{base}:{name}".encode()).digest()[:4], "little")


#: keywords whose values are data, not schemas; keywords whose values map names to schemas
_DATA_KEYS = frozenset({"enum", "const", "default", "examples", "example"})
_NAME_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas", "dependencies"})
_DEFS = frozenset({"$defs", "definitions"})


def ecma_patterns(schema: Any) -> Any:
    r"""``schema`` with every ``pattern`` and ``patternProperties`` regex prefixed with ``(?a)``:
    Python's ``re`` then matches ``\d``, ``\w`` and ``\b`` in ASCII only, as ECMA-262 (JSON
    Schema's regex dialect) does. (ECMA's ``\s`` takes more than ASCII's: an instance that needs
    that is left out, never a wrong one let in.)"""

    def visit(node: Any) -> Any:
        if isinstance(node, list):
            return [visit(x) for x in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k in _DATA_KEYS:
                out[k] = v
            elif k == "pattern" and isinstance(v, str):
                out[k] = "(?a)" + v
            elif k == "patternProperties" and isinstance(v, dict):
                out[k] = {"(?a)" + name: visit(sub) for name, sub in v.items()}
            elif k in _NAME_MAPS and isinstance(v, dict):
                out[k] = {name: visit(sub) for name, sub in v.items()}
            else:
                out[k] = visit(v)
        return out

    return visit(schema)


def validator_for(schema: Any) -> Any:
    """A ``jsonschema`` validator of ``schema`` (its own draft, formats asserted, ECMA patterns)."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(ecma_patterns(schema), format_checker=cls.FORMAT_CHECKER)


# -- generation (runs in the child process) ------------------------------------------------------


class _OldStyleMany:
    """``hypothesis-jsonschema`` 0.23.1 (the latest release) drives Hypothesis's private
    ``cu.many`` with ``while elements.more(): ... elements.reject()``; recent Hypothesis made
    ``many`` a context manager iterated with ``for``, and every object schema then fails with
    "'many' object has no attribute 'more'". This drives the new class the old way."""

    _END = object()

    def __init__(self, data: Any, min_size: int, max_size: float, average_size: float) -> None:
        from hypothesis.internal.conjecture import utils as cu

        self._many = cu.many(data, min_size=min_size, max_size=max_size, average_size=average_size)
        self._many.__enter__()
        self._steps = iter(self._many)

    def more(self) -> bool:
        if next(self._steps, self._END) is self._END:
            self._many.__exit__(None, None, None)
            return False
        return True

    def reject(self, why: str | None = None) -> None:
        self._many.reject(why)


def _install_many_shim() -> None:
    from hypothesis.internal.conjecture import utils as cu
    from hypothesis_jsonschema import _from_schema

    if not hasattr(cu.many, "more"):
        _from_schema.cu = types.SimpleNamespace(**{**vars(cu), "many": _OldStyleMany})


def _pointer(root: Any, ref: str) -> Any:
    from urllib.parse import unquote

    node = root
    for part in unquote(ref[1:]).split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def unroll_refs(root: Any, depth: int) -> Any:
    """``root`` with its local ``$ref``s (``#/...``) inlined, each at most ``depth`` times along
    one path; deeper ones become ``false``. ``$defs``/``definitions`` are dropped (inlined)."""

    def visit(node: Any, path: dict[str, int]) -> Any:
        if isinstance(node, list):
            return [visit(x, path) for x in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k in _DEFS or k == "$ref":
                continue
            if k in _DATA_KEYS:
                out[k] = v
            elif k in _NAME_MAPS and isinstance(v, dict):
                out[k] = {name: visit(sub, path) for name, sub in v.items()}
            else:
                out[k] = visit(v, path)
        ref = node.get("$ref")
        if not (isinstance(ref, str) and ref.startswith("#")):
            if ref is not None:
                out["$ref"] = ref  # not local: left for the generator to refuse
            return out
        if path.get(ref, 0) >= depth:
            return False
        target = visit(_pointer(root, ref), {**path, ref: path.get(ref, 0) + 1})
        if not out:
            return target
        return {"allOf": [out, target]}

    return visit(root, {})


def _draw(schema: Any, n: int, seed: int, tuning: StreamTuning) -> tuple[list[Any], str | None]:
    """Up to ``n`` distinct values of ``schema`` (compared by :func:`request_text`), and the error
    that stopped drawing early, if any."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st
    from hypothesis_jsonschema import from_schema

    found: dict[str, Any] = {}
    stop_at = time.monotonic() + tuning.generation_cap_s

    class Enough(Exception):
        pass

    try:
        # uuid is a draft 2019-09 format the generator does not know (it would draw any string)
        strategy = from_schema(schema, custom_formats={"uuid": st.uuids().map(str)})
    except Exception as e:  # noqa: BLE001 - any refusal is recorded, not raised
        return [], f"{type(e).__name__}: {str(e)[:200]}"

    @settings(
        database=None,
        max_examples=tuning.max_examples,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )
    @hseed(seed)
    @given(strategy)
    def collect(value: Any) -> None:
        if len(found) >= n or time.monotonic() > stop_at:
            raise Enough
        text = request_text(value)
        if len(text.encode("utf-8")) <= tuning.max_generated_bytes:
            found.setdefault(text, value)

    error = None
    try:
        collect()
    except Enough:
        pass
    except Exception as e:  # noqa: BLE001 - e.g. Unsatisfiable: keep what was found
        error = f"{type(e).__name__}: {str(e)[:200]}"
    return list(found.values()), error


def _generate(schema: Any, n: int, seed: int, tuning: StreamTuning) -> tuple[list[Any], str | None, bool]:
    """:func:`_draw`, retried on the unrolled schema where recursion stopped it; the third
    value says whether it was unrolled."""
    _install_many_shim()
    values, error = _draw(schema, n, seed, tuning)
    if values or error is None or "recursive" not in error.lower():
        return values, error, False
    unrolled = unroll_refs(schema, tuning.unroll_depth)
    if len(json.dumps(unrolled)) > tuning.unroll_max_bytes:
        return [], "recursive $ref: the unrolled schema is too large", True
    values, error = _draw(unrolled, n, seed, tuning)
    return values, (None if error is None else f"after unrolling: {error}"), True


def _generator_main(conn: Any) -> None:
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        schema, n, seed, tuning = msg
        try:
            conn.send(("ok", _generate(schema, n, seed, tuning)))
        except Exception as e:  # noqa: BLE001 - e.g. a value that does not pickle
            conn.send(("error", f"{type(e).__name__}: {str(e)[:200]}"))


class InstanceGenerator:
    """A child process that draws instances; killed and replaced when one schema runs too long."""

    def __init__(self) -> None:
        self.ctx = mp.get_context("spawn")
        self.proc: Any = None
        self.conn: Any = None

    def _spawn(self) -> None:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_generator_main, args=(child,), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent

    def generate(self, schema: Any, n: int, seed: int, tuning: StreamTuning) -> tuple[list[Any], str | None, bool]:
        if self.proc is None or not self.proc.is_alive():
            self._spawn()
        try:
            self.conn.send((schema, n, seed, tuning))
            if self.conn.poll(tuning.generation_kill_s):
                kind, payload = self.conn.recv()
                if kind == "ok":
                    return payload
                return [], payload, False
        except (EOFError, OSError):
            pass
        self.close(kill=True)
        return [], f"generation ran past {tuning.generation_kill_s:g} s (or its process died)", False

    def close(self, kill: bool = False) -> None:
        if self.proc is not None:
            if not kill and self.conn is not None:
                try:
                    self.conn.send(None)
                except (OSError, BrokenPipeError):
                    pass
                self.proc.join(10)
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join(10)
        if self.conn is not None:
            self.conn.close()
        self.proc = self.conn = None


# -- the set of one schema -----------------------------------------------------------------------


def _orderer(schema: Any) -> Any:
    """The tests' key orderer (one implementation of "schema order"), or None where it cannot
    read the schema."""
    from tests.schema_corpus import Orderer

    try:
        return Orderer(schema)
    except Exception:  # noqa: BLE001 - a schema structgen's loader refuses: keys stay as drawn
        return None


def stream_set(
    name: str, schema: Any, given: list[Any], tuning: StreamTuning, generator: InstanceGenerator | None
) -> StreamSet:
    """The requests of one schema: given instances, then generated ones, distinct, valid, in
    schema key order, shuffled (seeded) into the order they are walked."""
    out = StreamSet(name)
    counts = {"given": 0, "generated": 0, "invalid_given": 0, "invalid_generated": 0, "duplicates": 0}
    try:
        validator = validator_for(schema)
    except Exception as e:  # noqa: BLE001 - jsonschema cannot read it: nothing can be checked
        out.generation_error = f"jsonschema: {type(e).__name__}: {str(e)[:200]}"
        out.counts = counts
        return out
    orderer = _orderer(schema)
    seen: dict[str, str] = {}

    def add(value: Any, source: str) -> None:
        if orderer is not None:
            try:
                value = orderer.reorder(value)
            except Exception:  # noqa: BLE001 - keep the value's own order
                pass
        try:
            valid = validator.is_valid(value)
        except Exception:  # noqa: BLE001 - e.g. a pattern Python's re cannot compile
            valid = False
        if not valid:
            counts[f"invalid_{source}"] += 1
            return
        text = request_text(value)
        if text in seen:
            counts["duplicates"] += 1
            return
        seen[text] = source
        counts[source] += 1

    for value in given:
        add(value, "given")
    seed = case_seed(tuning.seed, name)
    want = tuning.instances - len(seen)
    if want > 0 and generator is not None:
        # draw more than needed: some are invalid, duplicates of given ones, or reordered alike
        values, error, unrolled = generator.generate(ecma_patterns(schema), want + want // 2 + 4, seed, tuning)
        out.generation_error = error
        counts["unrolled"] = int(unrolled)
        for value in values:
            if len(seen) >= tuning.instances:
                break
            add(value, "generated")
    texts = list(seen)
    random.Random(seed).shuffle(texts)
    out.texts = texts
    out.sources = [seen[t] for t in texts]
    out.counts = counts
    return out
