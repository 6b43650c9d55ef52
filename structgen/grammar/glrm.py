"""GLRM, glrmask's grammar language: read it into the grammar form and write the form back out.

* :func:`parse_glrm` reads glrmask 0.5.0's ``glrm 1`` dialect (tokens in :mod:`.glrm_lex`,
  syntax in :mod:`.glrm_syntax`, meaning in :mod:`.glrm_lower`);
* :func:`write_glrm` writes GLRM text that glrmask 0.5.0 accepts unchanged and that means the same
  language (:mod:`.glrm_write`); :func:`glrm_token_bindings` gives the token ids to bind to the
  ``extern token`` slots it declares for token atoms.

The user-facing entry points are :meth:`Grammar.from_glrm` and :meth:`Grammar.to_glrm`.
"""

from __future__ import annotations

from ..errors import LimitError
from ..limits import DEFAULT_GRAMMAR_LIMITS, GrammarLimits
from .glrm_lower import lower
from .glrm_syntax import GlrmParser
from .glrm_write import glrm_token_bindings, write_glrm
from .grammar import Grammar

__all__ = ["glrm_token_bindings", "parse_glrm", "write_glrm"]


def parse_glrm(text: str, limits: GrammarLimits = DEFAULT_GRAMMAR_LIMITS) -> Grammar:
    """The grammar GLRM ``text`` means.

    Raises :class:`~structgen.errors.GrammarError` (with line and column where the text is at
    fault) for text glrmask 0.5.0 refuses, and for the few constructs glrmask compiles without
    giving them their documented meaning; :class:`~structgen.errors.LimitError` past ``limits``.
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limits.max_source_bytes:
        raise LimitError(f"GLRM source is {size} bytes", limit="max_source_bytes", value=limits.max_source_bytes)
    parser = GlrmParser(text, limits)
    top = parser.parse()
    return lower(top, parser.lx, limits)
