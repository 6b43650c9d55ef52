"""The example and benchmark schemas in ``schemas/``: each is valid draft 2020-12 JSON Schema,
has 3-5 valid instances in ``schemas/instances/<name>.jsonl``, and is documented in the README."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest
from jsonschema import Draft202012Validator

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "schemas"
REQUIRED = ["enum", "tool_call", "tool_union", "constrained", "tree", "wide_object", "realistic_model", "any_json"]


def schema_names() -> list[str]:
    return sorted(p.stem for p in SCHEMAS.glob("*.json"))


def load_schema(name: str) -> object:
    return json.loads((SCHEMAS / f"{name}.json").read_text(encoding="utf-8"))


def load_instances(name: str) -> list[object]:
    lines = (SCHEMAS / "instances" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_required_schemas_present() -> None:
    assert set(REQUIRED) <= set(schema_names())


def test_every_instance_file_has_a_schema() -> None:
    files = {p.stem for p in (SCHEMAS / "instances").glob("*.jsonl")}
    assert files == set(schema_names())


@pytest.mark.parametrize("name", schema_names())
def test_schema_is_valid_2020_12(name: str) -> None:
    Draft202012Validator.check_schema(load_schema(name))


@pytest.mark.parametrize("name", schema_names())
def test_instances_are_valid(name: str) -> None:
    validator = Draft202012Validator(load_schema(name), format_checker=Draft202012Validator.FORMAT_CHECKER)
    instances = load_instances(name)
    assert 3 <= len(instances) <= 5
    for k, instance in enumerate(instances):
        errors = [e.message for e in validator.iter_errors(instance)]
        assert not errors, f"{name} instance {k}: {errors}"
    # instances differ from each other
    assert len({json.dumps(i, sort_keys=True) for i in instances}) == len(instances)


def _walk(value: object):  # type: ignore[no-untyped-def]
    stack = [value]
    while stack:
        v = stack.pop()
        yield v
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def test_instances_include_long_and_unicode_ones() -> None:
    all_values = [v for name in schema_names() for inst in load_instances(name) for v in _walk(inst)]
    assert any(isinstance(v, list) and len(v) >= 20 for v in all_values)
    assert any(isinstance(v, str) and len(v) >= 500 for v in all_values)
    assert any(isinstance(v, str) and any(ord(c) > 0xFFFF for c in v) for v in all_values)  # astral plane
    assert any(isinstance(v, str) and any(0x3000 <= ord(c) <= 0x9FFF for c in v) for v in all_values)  # CJK


def test_object_instances_follow_schema_property_order() -> None:
    # engines emit properties in the schema's order; instances written in another order would
    # measure a key-order option rather than the constraint
    for name in ["tool_call", "constrained", "wide_object"]:
        order = list(load_schema(name)["properties"])  # type: ignore[index]
        for inst in load_instances(name):
            keys = list(inst)  # type: ignore[arg-type]
            assert keys == sorted(keys, key=order.index), name


def test_realistic_model_matches_pydantic_export() -> None:
    sys.path.insert(0, str(SCHEMAS))
    try:
        import pydantic_models
    finally:
        sys.path.remove(str(SCHEMAS))
    assert load_schema("realistic_model") == pydantic_models.exported_schema()
    for inst in load_instances("realistic_model"):
        pydantic_models.Order.model_validate(inst)


def test_readme_documents_every_schema() -> None:
    readme = (SCHEMAS / "README.md").read_text(encoding="utf-8")
    for name in schema_names():
        assert f"`{name}.json`" in readme, name
