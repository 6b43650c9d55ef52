"""Model runtimes: the protocol :func:`structgen.generate` drives, and adapters for real runtimes.

* :mod:`.protocol` - :class:`Runtime` (any runtime that gives logits for a prefix), the
  :class:`PrefixLogitsRuntime` helper, and :func:`as_runtime`;
* :mod:`.llama_cpp` - llama-cpp-python (``llama_cpp.Llama``), plus a ``logits_processor``;
* :mod:`.transformers` - a ``transformers`` model and tokenizer, plus a ``LogitsProcessor``;
* :mod:`.chat` - chat messages and the template-free transcript.

The adapters import their runtime only when used.
"""

from .protocol import PrefixLogitsRuntime, Runtime, as_runtime, greedy_encode

__all__ = ["PrefixLogitsRuntime", "Runtime", "as_runtime", "greedy_encode"]
