"""Model runtimes: the protocol the front end drives, and adapters for real runtimes.

* :mod:`.protocol` - :class:`Runtime` (any runtime that gives logits for a prefix), the
  :class:`PrefixLogitsRuntime` helper, :func:`as_runtime`, the adapter registry and the per-runtime
  lock;
* :mod:`.llama_cpp` - llama-cpp-python (``llama_cpp.Llama``), plus a ``logits_processor``;
* :mod:`.transformers` - a ``transformers`` model and tokenizer, plus a ``LogitsProcessor``.

Each adapter registers itself with the protocol when this package is imported; the runtime
libraries themselves (llama_cpp, torch) are imported only when an adapter is built.
"""

from . import llama_cpp as llama_cpp
from . import transformers as transformers
from .protocol import PrefixLogitsRuntime, Runtime, as_runtime, greedy_encode, register_adapter, runtime_lock

__all__ = ["PrefixLogitsRuntime", "Runtime", "as_runtime", "greedy_encode", "register_adapter", "runtime_lock"]
