"""Every example in examples/ runs, with the session's SmolLM2 model (marked ``model``)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest
from pydantic import BaseModel

pytestmark = pytest.mark.model

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def load(name: str):
    module_name = f"example_{name}"
    spec = importlib.util.spec_from_file_location(module_name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # pydantic resolves the models' annotations through it
    spec.loader.exec_module(module)
    return module


def test_quickstart(smollm2_llama, capsys):
    person = load("quickstart").main(smollm2_llama)
    assert isinstance(person, BaseModel) and 0 <= person.age <= 120
    out = capsys.readouterr().out
    assert "ms/token" in out and person.name in out


def test_extraction(smollm2_llama):
    invoice = load("extraction").main(smollm2_llama)
    assert 1 <= len(invoice.items) <= 5 and invoice.number.startswith("INV-")


def test_classification(smollm2_llama):
    module = load("classification")
    tickets = module.main(smollm2_llama)
    assert len(tickets) == len(module.TICKETS)
    assert all(isinstance(t.category, module.Category) for t in tickets)


def test_agent_tools(smollm2_llama):
    answer, calls = load("agent_tools").main(smollm2_llama)
    assert isinstance(answer, str)
    # the first turn must call a tool; which one a 135M model picks is its own choice
    assert calls and set(calls) <= {"get_weather", "convert_currency", "local_time"}


def test_gbnf_grammar(smollm2_llama):
    text = load("gbnf_grammar").main(smollm2_llama)
    assert text.split(":")[0] in ("yes", "no") and text.endswith(".")


def test_glrm_grammar(smollm2_llama):
    program = load("glrm_grammar").main(smollm2_llama)
    assert program.startswith("move ") and program.endswith(";")
