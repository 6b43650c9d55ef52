"""The enforceability report: what is enforced, refused and ignored, with pointers."""

from __future__ import annotations

from structgen.schema import enforceability_report


def test_report_lists_refusals_and_annotations() -> None:
    schema = {
        "title": "T",
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "n": {"type": "integer", "minimum": 0, "x-extra": 1},
        },
        "required": ["n"],
    }
    report = enforceability_report(schema)
    assert not report.enforceable
    assert [(e.pointer, e.keyword) for e in report.refused] == [("/properties/tags", "uniqueItems")]
    enforced = {(e.pointer, e.keyword) for e in report.enforced}
    assert {("", "type"), ("", "properties"), ("", "required"), ("/properties/n", "minimum")} <= enforced
    ignored = {(e.pointer, e.keyword): e.reason for e in report.ignored}
    assert ignored[("", "title")] == "annotation"
    assert "unknown" in ignored[("/properties/n", "x-extra")]
    text = str(report)
    assert "refused  /properties/tags uniqueItems" in text and "NOT enforceable" in text


def test_report_on_enforceable_and_invalid_schemas() -> None:
    assert enforceability_report({"type": "string"}).enforceable
    bad = enforceability_report({"$ref": "#/nowhere"})
    assert bad.error is not None and not bad.enforceable and "schema error" in str(bad)
