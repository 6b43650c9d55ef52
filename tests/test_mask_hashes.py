"""benchmarks/mask_hashes.py: digests of every mask along MaskBench instances agree between the
lazy and the ahead-of-time compile (the script's comparison, run small)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    cmd = [sys.executable, str(ROOT / "benchmarks" / "mask_hashes.py"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)


def test_lazy_and_aot_digests_agree(tmp_path: Path) -> None:
    lazy, aot = tmp_path / "lazy.json", tmp_path / "aot.json"
    for mode, out in (("lazy", lazy), ("aot", aot)):
        done = run("--maskbench", "3", "--mode", mode, "--out", str(out))
        if "asset" in done.stdout + done.stderr and done.returncode != 0:
            pytest.skip("the llama-bpe vocabulary asset is missing: run `make assets`")
        assert done.returncode == 0, done.stderr[-2000:]
    digests = json.loads(lazy.read_text())["digests"]
    if not digests:
        pytest.skip("MaskBench archive not in the corpora: set STRUCTGEN_CORPORA to the shared/corpora folder")
    assert all(len(d) == 64 or d.startswith("refused") for d in digests.values())
    compared = run("--compare", str(lazy), str(aot))
    assert compared.returncode == 0, compared.stdout
    assert ", 0 differ" in compared.stdout
