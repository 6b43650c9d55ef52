"""examples/openai_agent.py runs: the OpenAI client's agent loop against structgen's server,
served in this process with the session's SmolLM2 model (marked ``model``)."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

pytestmark = pytest.mark.model

pytest.importorskip("openai", reason="the openai client is not installed (pip install '.[test]')")
pytest.importorskip("starlette", reason="the server extra is not installed (pip install '.[server]')")

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "openai_agent.py"


def test_openai_agent(smollm2_llama, capsys):
    spec = importlib.util.spec_from_file_location("example_openai_agent", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["example_openai_agent"] = module
    spec.loader.exec_module(module)
    answer, calls = module.main(smollm2_llama)
    assert isinstance(answer, str)
    assert calls and set(calls) <= {"get_weather", "local_time"}  # step 0 has tool_choice="required"
    assert "answer:" in capsys.readouterr().out
