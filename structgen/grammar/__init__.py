"""The grammar form and its dialects: GBNF, GLRM and regex in and out, and the reference matcher.

* :mod:`.ir` - the immutable expression nodes;
* :mod:`.grammar` - :class:`Grammar`, named rules plus a start rule;
* :mod:`.gbnf`, :mod:`.glrm`, :mod:`.regex` - readers and writers of the text dialects;
* :mod:`.matcher` - the exact byte-level Earley matcher every other component is tested against.
"""

from .grammar import Grammar

__all__ = ["Grammar"]
