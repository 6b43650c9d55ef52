"""Tokenizer vocabularies: what each token id adds to the text, and which ids are special.

:class:`Vocab` is the one type the mask engine needs; its classmethods load it from a GGUF file,
a Hugging Face tokenizer, a llama-cpp-python model or tiktoken tables.
:func:`cached_arrays` keeps per-vocabulary numpy tables on disk, keyed by the fingerprint.
"""

from .cache import cached_arrays
from .vocab import Vocab

__all__ = ["Vocab", "cached_arrays"]
