"""An OpenAI-compatible Chat Completions server that enforces every schema and tool call, or says why not.

``structgen serve MODEL`` (see :mod:`.serve`) runs :func:`create_app` under uvicorn. The layers:

* :mod:`.validation` - a request body checked field by field into ``prepare_chat`` arguments;
* :mod:`.worker` - the queue: one thread runs the model calls one at a time;
* :mod:`.responses` and :mod:`.errors` - OpenAI's response, chunk and error objects;
* :mod:`.app` - the Starlette routes, authentication and body limits;
* :mod:`.serve` - loading the model and running the server.

Needs the ``server`` extra: ``pip install 'structgen[server]'``.
"""

from __future__ import annotations

from ..errors import StructgenError

try:
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the installation
    raise StructgenError(f"the server needs its extra: pip install 'structgen[server]' ({e})") from e

from .app import create_app
from .config import ServerConfig
from .serve import load_model, serve

__all__ = ["ServerConfig", "create_app", "load_model", "serve"]
