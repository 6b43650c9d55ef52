"""The stream mode of the benchmark (`bench_masks.py --stream`): its requests and one small run.
No timing is asserted: only that the figures exist and that the requests are what they claim."""

from __future__ import annotations

import json
import pathlib
import sys

import jsonschema
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import stream  # noqa: E402
from benchmarks.inputs import load_named_schemas, vocab_path  # noqa: E402
from benchmarks.stream_instances import (  # noqa: E402
    InstanceGenerator,
    StreamTuning,
    request_text,
    stream_set,
    unroll_refs,
    validator_for,
)

pytest.importorskip("hypothesis_jsonschema", reason="hypothesis-jsonschema is not installed (pip install '.[test]')")


def test_unrolled_recursion_has_no_refs_and_accepts_a_subset() -> None:
    (tree,) = load_named_schemas(["tree"])
    flat = unroll_refs(tree.schema, 2)
    assert '"$ref"' not in json.dumps(flat)
    leaf = {"name": "a", "children": []}
    deep = {"name": "a", "children": [{"name": "b", "children": [{"name": "c", "children": []}]}]}
    original = jsonschema.Draft202012Validator(tree.schema)
    assert original.is_valid(leaf) and original.is_valid(deep)
    assert jsonschema.Draft202012Validator(flat).is_valid(leaf)
    assert not jsonschema.Draft202012Validator(flat).is_valid(deep)  # past two levels: false


def test_patterns_are_read_as_ecma_262() -> None:
    """``\\d`` and ``\\w`` are ASCII in JSON Schema's regex dialect; Python's ``re`` takes other
    scripts' digits too, which every engine (rightly) refuses."""
    schema = {"type": "object", "patternProperties": {"^\\w+$": {"type": "string", "pattern": "^\\d+$"}}}
    schema["additionalProperties"] = False
    v = validator_for(schema)
    assert v.is_valid({"a_1": "123"})
    assert not v.is_valid({"a": "\u0661\u0662"})  # Arabic-Indic digits
    assert not v.is_valid({"\u00e9": "1"})
    assert jsonschema.Draft202012Validator(schema).is_valid({"a": "\u0661\u0662"})  # plain re: valid


def test_requests_are_distinct_valid_in_schema_order_and_repeatable() -> None:
    (case,) = load_named_schemas(["tool_call"])
    tuning = StreamTuning(instances=10)
    gen = InstanceGenerator()
    try:
        a = stream_set(case.name, case.schema, case.instances, tuning, gen)
        b = stream_set(case.name, case.schema, case.instances, tuning, gen)
    finally:
        gen.close()
    assert a.texts == b.texts and len(a.texts) == 10 == len(set(a.texts))
    assert a.sources.count("given") == len(case.instances) and a.counts["generated"] == 10 - len(case.instances)
    props = list(case.schema["properties"]["arguments"]["properties"])
    validator = jsonschema.Draft202012Validator(case.schema, format_checker=jsonschema.FormatChecker())
    for text in a.texts:
        value = json.loads(text)
        assert validator.is_valid(value) and request_text(value) == text
        keys = list(value["arguments"])
        assert keys == sorted(keys, key=props.index)


def test_pair_ratios_use_the_requests_both_walked() -> None:
    def walk(i: int, ok: bool, scale: int) -> dict:
        return {"instance": i, "ok": ok, "fill_ns": np.full(4, 1000 * scale, np.int64)}

    sg = {"walks": [walk(0, True, 2), walk(1, True, 50)]}
    peer = {"walks": [walk(0, True, 1), walk(1, False, 1)]}
    sgs = {"status": "ok", "compile_ms": 4.0, "memory_bytes": 100}
    peers = {"status": "ok", "compile_ms": 2.0, "memory_bytes": -5}
    r = stream.pair_ratios(sgs, peers, sg, peer)
    assert r["common_requests"] == 1 and r["mean_us"] == pytest.approx(2) and r["compile_ms"] == pytest.approx(2)
    assert "memory_bytes" not in r  # a peer RSS that fell gives no ratio


def test_stream_mode_runs_one_schema_on_structgen(tmp_path: pathlib.Path) -> None:
    if vocab_path("llama-spm") is None:
        pytest.skip("asset vocab/llama-spm missing: run make assets")
    from benchmarks import bench_masks

    out_file = tmp_path / "stream.json"
    args = ["--stream", "--vocab", "llama-spm", "--engines", "structgen-lazy", "--schemas", "enum"]
    args += ["--stream-instances", "6", "--stream-batch-rows", "4", "--stream-batch-steps", "3"]
    assert bench_masks.main(args + ["--json", str(out_file)]) == 0
    out = json.loads(out_file.read_text())
    s = out["schemas"]["enum"]["structgen-lazy"]
    assert s["status"] == "ok" and s["walks"] == out["requests"]["enum"]["requests"] == 6
    for key in ("compile_ms", "memory_bytes", "p50_us", "p99_us", "p999_us", "max_us", "mean_us", "commit_p50_us"):
        assert s[key] is not None, key
    assert s["masks"] == out["requests"]["enum"]["tokens"] + 6  # every token's mask and each end mask
    assert s["rejected_walks"] == 0 and not s["special_leaks"] and len(s["per_request"]) == 6
    assert out["batch"]["structgen-lazy"]["status"] == "ok" and out["batch"]["structgen-lazy"]["rows"] == 4
    assert "load average" in out["uptime_start"] and "load average" in out["uptime_end"]
    assert out["ratios"] == {}  # no peer ran
