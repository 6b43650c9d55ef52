"""The structgen command: compile, check, generate, demo; errors with exit status 2."""

from __future__ import annotations

import importlib.util
import json

import pytest

from structgen import Grammar
from structgen.cli import first_failure, main
from structgen.grammar import ir

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"enum": ["a", "b"]}}},
    "required": ["name", "tags"],
}


@pytest.fixture
def schema_file(tmp_path):
    p = tmp_path / "schema.json"
    p.write_text(json.dumps(SCHEMA))
    return p


def test_first_failure_finds_the_byte():
    g = Grammar({"root": ir.seq(ir.lit("ab"), ir.plus(ir.char((48, 57))), ir.lit(";"))})
    assert first_failure(g, b"ab12;") is None
    offset, expected = first_failure(g, b"ab1x;")
    assert offset == 3 and ord(";") in expected and ord("0") in expected
    offset, expected = first_failure(g, b"ab1")
    assert offset == 3 and ord(";") in expected


def test_check_reports_line_and_column(schema_file, tmp_path, capsys):
    good = tmp_path / "good.json"
    good.write_text('{"name": "x", "tags": ["a"]}')
    assert main(["check", str(schema_file), str(good)]) == 0
    assert "OK" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "name": "x",\n  "tags": ["a", "c"]\n}')
    assert main(["check", str(schema_file), str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:3:18: unexpected 'c'" in out
    assert "jsonschema:" in out


def test_check_incomplete_text(schema_file, tmp_path, capsys):
    cut = tmp_path / "cut.json"
    cut.write_text('{"name": "x"')
    assert main(["check", str(schema_file), str(cut)]) == 1
    assert "ends before it is complete" in capsys.readouterr().out


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_check_accepts_a_final_newline(schema_file, tmp_path, capsys, ending):
    # what `echo` and every editor write after the text (issue 23, finding 11)
    good = tmp_path / "good.json"
    good.write_bytes(('{"name": "x", "tags": ["a"]}' + ending).encode())
    assert main(["check", str(schema_file), str(good)]) == 0
    assert "OK" in capsys.readouterr().out


def test_check_from_stdin_with_echos_newline(monkeypatch, capsys):
    import io

    schema = '{"type":"object","properties":{"ok":{"type":"boolean"}}}'
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b'{"ok": true}\n')))
    assert main(["check", schema, "-"]) == 0
    assert "-: OK" in capsys.readouterr().out


def test_check_final_newline_rules(tmp_path, capsys):
    doc = tmp_path / "doc.txt"
    # an incomplete text with a newline after it is reported as incomplete, not at the newline
    doc.write_bytes(b'{"name": "x"\n')
    assert main(["check", json.dumps(SCHEMA), str(doc)]) == 1
    assert "ends before it is complete" in capsys.readouterr().out
    # only one line ending is dropped
    doc.write_bytes(b'{"name": "x", "tags": []}\n\n')
    assert main(["check", json.dumps(SCHEMA), str(doc)]) == 1
    assert "unexpected newline" in capsys.readouterr().out
    # a grammar that wants the newline keeps it
    gbnf = tmp_path / "line.gbnf"
    gbnf.write_text('root ::= "a\\n"\n')
    doc.write_bytes(b"a\n")
    assert main(["check", str(gbnf), str(doc)]) == 0
    doc.write_bytes(b"a")
    assert main(["check", str(gbnf), str(doc)]) == 1


def test_check_with_a_grammar_that_matches_nothing(tmp_path, capsys):
    # the matcher is dead before any input: nothing to roll back (issue 23, finding 1)
    gbnf = tmp_path / "empty.gbnf"
    gbnf.write_text('root ::= "a" x\nx ::= [z-a]\n')
    assert first_failure(Grammar.from_gbnf(gbnf.read_text()), b"a") == (0, frozenset())
    doc = tmp_path / "a.txt"
    doc.write_bytes(b"a")
    assert main(["check", str(gbnf), str(doc)]) == 1
    assert "unexpected 'a'; the grammar matches no text at all" in capsys.readouterr().out


def test_compile_prints_gbnf(schema_file, capsys):
    assert main(["compile", str(schema_file), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert Grammar.from_gbnf(text).matches('{"name":"x","tags":[]}')


def test_compile_prints_glrm(schema_file, capsys):
    assert main(["compile", str(schema_file), "--format", "glrm", "-q"]) == 0
    assert "start" in capsys.readouterr().out


def test_errors_exit_2(tmp_path, capsys):
    assert main(["check", str(tmp_path / "missing.json"), str(tmp_path / "x")]) == 2
    assert "structgen: error:" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert main(["compile", str(broken)]) == 2
    assert "not JSON" in capsys.readouterr().err
    assert main(["compile", "no_such_module:Thing"]) == 2


@pytest.mark.model
def test_generate_prints_validated_json(schema_file, capsys):
    from structgen.models import find_model

    path = find_model("smollm2")
    if path is None or importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("needs llama-cpp-python and the SmolLM2 model (make assets)")
    code = main(
        [
            "generate",
            "--model",
            str(path),
            "--schema",
            str(schema_file),
            "--seed",
            "1",
            "--max-tokens",
            "80",
            "--stats",
            "Name: Ann. Tags: a.",
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    value = json.loads(captured.out)
    assert isinstance(value["name"], str) and set(value["tags"]) <= {"a", "b"}
    assert "ms/token" in captured.err


@pytest.mark.model
def test_demo(capsys):
    from structgen.models import find_model

    if find_model("smollm2") is None or importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("needs llama-cpp-python and the SmolLM2 model (make assets)")
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "validated Person" in out and "ms/token" in out
