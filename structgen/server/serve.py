"""`structgen serve`: load the model, run the app under uvicorn, say where it listens.

MODEL is a known name (``smollm2``, ``gemma3-270m``; see :mod:`structgen.models`), a GGUF file,
or (with ``--runtime transformers``) a local model folder. Nothing is downloaded: transformers
loads with ``local_files_only``. When the socket is bound, one line goes to stdout::

    structgen serve: listening on http://127.0.0.1:8000/v1 (model smollm2)

``--port 0`` binds a free port, and that line tells which.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable

import uvicorn

from .. import constraint_cache
from ..errors import StructgenError
from ..models import KNOWN_MODELS, load_llama, require_model
from ..vocab.cache import cache_dir
from .app import create_app
from .config import ServerConfig

#: The environment variable read when ``--api-key`` is not given.
API_KEY_ENV = "STRUCTGEN_API_KEY"


def resolve_model(spec: str) -> tuple[Path, str]:
    """The file (or folder) MODEL names, and the name the API shows for it."""
    if spec in KNOWN_MODELS:
        return require_model(spec), spec
    path = Path(spec).expanduser()
    if not path.exists():
        raise StructgenError(
            f"{spec!r} is neither a model file or folder nor a known model ({', '.join(KNOWN_MODELS)})"
        )
    return path, path.stem if path.is_file() else path.name


def load_model(spec: str, runtime: str = "llama", *, n_ctx: int = 4096, threads: int | None = None) -> tuple[Any, str]:
    """The model object for :func:`create_app` and its API name."""
    path, name = resolve_model(spec)
    if runtime == "llama":
        if not path.is_file():
            raise StructgenError(f"the llama runtime loads a GGUF file; {path} is a folder")
        return load_llama(path, n_ctx=n_ctx, n_threads=threads), name
    if runtime == "transformers":
        return _load_transformers(path, threads), name
    raise StructgenError(f"unknown runtime {runtime!r}: 'llama' or 'transformers'")


def _load_transformers(path: Path, threads: int | None) -> Any:
    try:
        import torch
        import transformers
    except ImportError as e:
        raise StructgenError(f"the transformers runtime needs: pip install 'structgen[hf]' ({e})") from e
    if threads:
        torch.set_num_threads(threads)
    folder, extra = (path.parent, {"gguf_file": path.name}) if path.is_file() else (path, {})
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True, **extra)
        model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True, **extra)
    except (OSError, ValueError) as e:
        raise StructgenError(f"transformers could not load {path}: {e}") from e
    model.eval()
    return model, tokenizer


class _Server(uvicorn.Server):
    """uvicorn's server, announcing the bound address once it listens."""

    def __init__(self, config: uvicorn.Config, announce: Callable[[str, int], None]) -> None:
        super().__init__(config)
        self._announce = announce

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and self.servers and self.servers[0].sockets:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            self._announce(host, port)


def serve(
    model: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    config: ServerConfig | None = None,
    log_level: str = "warning",
) -> bool:
    """Serve ``model`` until interrupted; prints the ready line on stdout. Returns whether the
    model is idle afterwards (its thread stopped), so that it may be freed."""
    config = config or ServerConfig()

    def announce(bound_host: str, bound_port: int) -> None:
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        auth = " with an API key" if config.api_key else ""
        print(
            f"structgen serve: listening on http://{shown}:{bound_port}/v1 (model {config.model_name}){auth}",
            flush=True,
        )

    app = create_app(model, config)
    server = _Server(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level=log_level,
            access_log=False,
            lifespan="on",
            # then requests still running are cancelled, and with them their generations
            timeout_graceful_shutdown=10,
        ),
        announce,
    )
    server.run()
    return bool(getattr(app.state, "model_idle", False))


def api_key_from(flag: str | None) -> str | None:
    """``--api-key``, else ``$STRUCTGEN_API_KEY``, else None (no authentication)."""
    key = flag if flag is not None else os.environ.get(API_KEY_ENV)
    if key is not None and not key.strip():
        raise StructgenError("the API key is empty")
    return key


def constraint_store(flag: str | None) -> str | None:
    """Where compiled constraints are kept between runs: ``--constraint-cache DIR``, none with
    ``--no-constraint-cache``, else ``constraints/`` in the structgen cache directory. A server
    meets the same schemas after every restart, and loading a compiled constraint is faster than
    compiling it again."""
    if flag is None:
        return str(cache_dir() / "constraints")
    return flag or None


def main(args: Any) -> int:
    """The ``structgen serve`` command (arguments parsed by :mod:`structgen.cli`)."""
    api_key = api_key_from(args.api_key)
    store = constraint_store(getattr(args, "constraint_cache", None))
    constraint_cache.configure(constraint_cache.ConstraintCacheTuning(disk_dir=store))
    if args.host not in ("127.0.0.1", "localhost", "::1") and api_key is None:
        print(f"structgen serve: warning: listening on {args.host} without an API key", file=sys.stderr)
    model, name = load_model(args.model, args.runtime, n_ctx=args.n_ctx, threads=args.threads)
    idle = serve(model, host=args.host, port=args.port, config=ServerConfig(model_name=name, api_key=api_key))
    close = getattr(model, "close", None)
    if idle and callable(close):
        close()  # llama.cpp's memory now, not in __del__ at interpreter exit
    return 0
