"""Shared pytest fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def corpora() -> Path:
    """The third-party test corpora: $STRUCTGEN_CORPORA, ../shared/corpora, or /work/shared/corpora."""
    candidates = [os.environ.get("STRUCTGEN_CORPORA"), _REPO.parent / "shared" / "corpora", "/work/shared/corpora"]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    pytest.skip("test corpora not found (set STRUCTGEN_CORPORA)")
