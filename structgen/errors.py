"""The exceptions structgen raises: one root class, one subclass per kind of failure.

Every error a caller can trigger with bad input derives from :class:`StructgenError`, so agent
code can catch that one class. Subclasses carry the fields a user needs to act on the error
(a line and column in grammar text, a JSON pointer and keyword in a schema, the name of a limit).
"""

from __future__ import annotations


class StructgenError(Exception):
    """Root of every error structgen raises on bad input or an impossible request."""


class GrammarError(StructgenError):
    """Grammar text that cannot be read, or a grammar that cannot be built.

    ``line`` and ``column`` are 1-based positions in the grammar text (``None`` where the error is
    not tied to a position, for example an undefined rule found after parsing; then ``rule`` names
    the rule concerned).
    """

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        rule: str | None = None,
    ) -> None:
        self.message = message
        self.line = line
        self.column = column
        self.rule = rule
        where = []
        if line is not None:
            where.append(f"line {line}, column {column}")
        if rule is not None:
            where.append(f"rule {rule!r}")
        super().__init__(f"{message} ({'; '.join(where)})" if where else message)


class RegexError(GrammarError):
    """A regular expression that cannot be read or uses a construct structgen refuses.

    ``position`` is the 0-based offset in the pattern.
    """

    def __init__(self, message: str, *, pattern: str, position: int | None = None) -> None:
        self.pattern = pattern
        self.position = position
        at = f" at offset {position}" if position is not None else ""
        super().__init__(f"{message}{at} in regex /{pattern}/")


class SchemaError(StructgenError):
    """A JSON Schema keyword that is invalid, unsatisfiable, or cannot be enforced.

    ``keyword`` names the keyword (``"oneOf"``, ``"format"``...) and ``pointer`` is the JSON
    pointer of the schema object that holds it (``""`` for the root, ``"/properties/a"``...).
    """

    def __init__(self, message: str, *, keyword: str | None, pointer: str) -> None:
        self.message = message
        self.keyword = keyword
        self.pointer = pointer
        kw = f" {keyword!r}" if keyword else ""
        super().__init__(f"{message} (keyword{kw} at {pointer or '#'})")


class LimitError(StructgenError):
    """Work or size that went past a resource limit; ``limit`` names the parameter to raise."""

    def __init__(self, message: str, *, limit: str, value: int | float | None = None) -> None:
        self.limit = limit
        self.value = value
        super().__init__(f"{message} (limit {limit!r}" + (f" = {value})" if value is not None else ")"))


class VocabError(StructgenError):
    """A tokenizer vocabulary that cannot be loaded, or one that does not match an artifact."""


class ConstraintError(StructgenError):
    """Misuse of a compiled constraint or its state (a token id out of range, a disallowed token)."""


class GenerationError(StructgenError):
    """Generation could not produce a valid result; ``partial_text`` holds what was produced."""

    def __init__(self, message: str, *, partial_text: str = "") -> None:
        self.partial_text = partial_text
        super().__init__(message)
