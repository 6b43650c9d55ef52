"""What the grammar dialects' lexers share: positions as line and column, and one token of lookahead.

A dialect's lexer subclasses :class:`LookaheadLexer` and implements ``_scan()``, which reads the
token at ``self.pos`` and moves ``pos`` past it.
"""

from __future__ import annotations

import bisect
import re
from abc import ABC, abstractmethod
from typing import Generic, TypeVar

from ..errors import GrammarError

T = TypeVar("T")


class LookaheadLexer(ABC, Generic[T]):
    """Tokens of ``text`` one at a time, with one of lookahead, and errors that say where."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._peeked: T | None = None

    def where(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    def error(self, message: str, offset: int) -> GrammarError:
        line, column = self.where(offset)
        return GrammarError(message, line=line, column=column)

    def peek(self) -> T:
        if self._peeked is None:
            self._peeked = self._scan()
        return self._peeked

    def next(self) -> T:
        tok = self.peek()
        self._peeked = None
        return tok

    @abstractmethod
    def _scan(self) -> T:
        """The token at ``self.pos``; moves ``pos`` past it."""
