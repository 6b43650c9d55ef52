"""Shared test fixtures: where the third-party corpora and downloaded assets live."""

from __future__ import annotations

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


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
