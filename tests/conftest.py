"""Shared test fixtures: where the third-party corpora and downloaded assets live."""

from __future__ import annotations

import os
import pathlib

import pytest
from hypothesis import settings

ROOT = pathlib.Path(__file__).resolve().parent.parent

# CI runs each property test on the same examples every time (a failure there is reproducible and
# a green run stays green); elsewhere hypothesis explores new examples on every run.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def corpora_dir() -> pathlib.Path | None:
    """The corpora folder: $STRUCTGEN_CORPORA, ../shared/corpora, or /work/shared/corpora."""
    env = os.environ.get("STRUCTGEN_CORPORA")
    candidates = [pathlib.Path(env)] if env else []
    candidates += [ROOT.parent / "shared" / "corpora", pathlib.Path("/work/shared/corpora")]
    for c in candidates:
        if c.is_dir():
            return c
    return None


@pytest.fixture(scope="session")
def corpora() -> pathlib.Path:
    path = corpora_dir()
    if path is None:
        pytest.skip("third-party corpora not found: set STRUCTGEN_CORPORA to the shared/corpora folder")
    return path


# -- real models (tests marked `model`): each loaded once per session ---------------------------


def _model_file(name: str) -> pathlib.Path:
    from structgen.models import KNOWN_MODELS, find_model

    path = find_model(name)
    if path is None:
        pytest.skip(f"model {name!r} not found: run `python tools/fetch_assets.py --models` or {KNOWN_MODELS[name][1]}")
    return path


def _llama(name: str):
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install '.[llama]')")
    threads = int(os.environ.get("STRUCTGEN_THREADS", "0")) or None
    kwargs = {"n_threads": threads, "n_threads_batch": threads} if threads else {}
    return llama_cpp.Llama(str(_model_file(name)), n_ctx=4096, verbose=False, **kwargs)


def _transformers(name: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch==2.13.0)")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install '.[hf]')")
    pytest.importorskip("accelerate", reason="accelerate is not installed (pip install '.[hf]')")
    torch.set_num_threads(1)
    path = _model_file(name)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
    model.eval()
    return model, tokenizer


@pytest.fixture(scope="session")
def smollm2_llama():
    llm = _llama("smollm2")
    yield llm
    llm.close()  # now, not in __del__ at interpreter exit, when llama_cpp's globals are gone


@pytest.fixture(scope="session")
def gemma_llama():
    llm = _llama("gemma3-270m")
    yield llm
    llm.close()


@pytest.fixture(scope="session")
def smollm2_hf():
    return _transformers("smollm2")


@pytest.fixture(scope="session")
def gemma_hf():
    return _transformers("gemma3-270m")
