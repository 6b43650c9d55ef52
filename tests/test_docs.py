"""The python code blocks of the user docs run, each page as one script (marked ``model``)."""

from __future__ import annotations

import importlib.util
import pathlib
import re

import pytest

pytestmark = pytest.mark.model

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def code_of(page: str) -> str:
    return "\n".join(BLOCK.findall((DOCS / page).read_text(encoding="utf-8")))


def test_pages_have_code():
    for page in ("quickstart.md", "adapters.md", "tools.md"):
        assert code_of(page).strip(), page


@pytest.mark.parametrize("page", ["quickstart.md", "adapters.md", "tools.md"])
def test_page_runs(page):
    from structgen.models import find_model

    if importlib.util.find_spec("llama_cpp") is None or find_model("smollm2") is None:
        pytest.skip("needs llama-cpp-python and the SmolLM2 model (make assets)")
    if page == "adapters.md":
        for module in ("torch", "transformers", "accelerate"):
            if importlib.util.find_spec(module) is None:
                pytest.skip(f"{module} is not installed (pip install '.[hf]')")
    code = compile(code_of(page), str(DOCS / page), "exec")
    namespace: dict = {"__name__": f"docs_{page[:-3]}"}
    try:
        exec(code, namespace)
    finally:
        # close the page's llama.cpp models now: at interpreter exit their __del__ runs after
        # llama_cpp's module globals are gone and prints an ignored TypeError
        for value in namespace.values():
            if type(value).__name__ == "Llama" and hasattr(value, "close"):
                value.close()
