"""On-disk cache of per-vocabulary numpy tables, keyed by the vocabulary's fingerprint.

Work that depends only on a vocabulary (decoded token bytes, the engine's byte matrices and token
classes) is computed once per machine and stored as an uncompressed ``.npz`` file under
``$STRUCTGEN_CACHE_DIR`` (default ``~/.cache/structgen``). Files are written to a temporary name
and renamed into place, so readers never see half a file; they are loaded with
``allow_pickle=False``. A missing, corrupt or unreadable file is rebuilt, and a cache directory
that cannot be written is skipped: the cache can make things faster, never make them fail.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

#: Part of every file name: bump it when the stored layout changes, old files are then ignored.
CACHE_VERSION = 1
ENV_VAR = "STRUCTGEN_CACHE_DIR"
_CHECK_FP = "__structgen_fingerprint__"
_CHECK_KEY = "__structgen_key__"


def cache_dir() -> Path:
    """The cache directory: ``$STRUCTGEN_CACHE_DIR`` if set and non-empty, else
    ``~/.cache/structgen``."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    return Path.home() / ".cache" / "structgen"


def cache_path(vocab_fingerprint: str, key: str) -> Path:
    """Where the entry for ``(vocab_fingerprint, key)`` lives."""
    # Keep the file name short and portable; the full fingerprint and key are also stored inside
    # the file and checked on load, so a clash of the shortened name can only cost a rebuild.
    safe_key = re.sub(r"[^A-Za-z0-9_.-]", "_", key)[:40]
    digest = hashlib.sha256(f"{vocab_fingerprint}\0{key}".encode()).hexdigest()[:16]
    fp = re.sub(r"[^A-Za-z0-9]", "", vocab_fingerprint)[:16]
    return cache_dir() / f"{fp}-{safe_key}-{digest}.v{CACHE_VERSION}.npz"


def _text_array(s: str) -> np.ndarray:
    return np.frombuffer(s.encode("utf-8"), dtype=np.uint8)


def _load(path: Path, vocab_fingerprint: str, key: str) -> dict[str, np.ndarray] | None:
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - any damage to a cache file means: rebuild it
        return None
    fp = arrays.pop(_CHECK_FP, None)
    k = arrays.pop(_CHECK_KEY, None)
    if fp is None or k is None:
        return None
    if fp.tobytes() != vocab_fingerprint.encode("utf-8") or k.tobytes() != key.encode("utf-8"):
        return None
    return arrays


def _store(path: Path, vocab_fingerprint: str, key: str, arrays: dict[str, np.ndarray]) -> None:
    tmp_name = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            # No allow_pickle argument (numpy < 2.1 would store it as an array): object arrays
            # are refused before this point, so nothing here can need pickle.
            np.savez(
                fh,
                **arrays,
                **{_CHECK_FP: _text_array(vocab_fingerprint), _CHECK_KEY: _text_array(key)},
            )
        os.chmod(tmp_name, 0o644)  # mkstemp makes 0600; a cache others may read is fine
        os.replace(tmp_name, path)
        tmp_name = None
    except OSError:
        pass  # a read-only or full disk only costs the rebuild next time
    finally:
        if tmp_name is not None:
            try:
                os.unlink(tmp_name)
            except OSError:
                pass


def cached_arrays(
    vocab_fingerprint: str,
    key: str,
    build: Callable[[], dict[str, np.ndarray]],
) -> dict[str, np.ndarray]:
    """Return the arrays stored for ``(vocab_fingerprint, key)``, building and storing them with
    ``build()`` when there is no valid entry.

    ``vocab_fingerprint`` identifies the vocabulary (:attr:`Vocab.fingerprint`, or any other hex
    digest of what the arrays derive from); ``key`` names the table and its parameters (include
    your own version number in it). ``build`` must return a dict of names to numpy arrays of plain
    (non-object) dtypes.
    """
    path = cache_path(vocab_fingerprint, key)
    found = _load(path, vocab_fingerprint, key)
    if found is not None:
        return found
    arrays = build()
    if not isinstance(arrays, dict) or not all(
        isinstance(n, str) and isinstance(a, np.ndarray) and a.dtype != object for n, a in arrays.items()
    ):
        raise TypeError("cached_arrays: build() must return dict[str, numpy.ndarray] with non-object dtypes")
    if _CHECK_FP in arrays or _CHECK_KEY in arrays:
        raise ValueError(f"cached_arrays: array names {_CHECK_FP!r} and {_CHECK_KEY!r} are reserved")
    _store(path, vocab_fingerprint, key, arrays)
    return arrays
