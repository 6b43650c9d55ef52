"""The grammars of a chat turn: the thinking block, and the answer as text, a structure or calls.

An answer grammar follows ``tool_choice`` (OpenAI's meanings) in the model's call format:

* ``"none"`` - free text, or the ``response_format`` structure;
* ``"auto"`` - free text that never contains the format's trigger (``<tool_call>``,
  ``[TOOL_CALLS]``; for bare-JSON formats, text that does not start with ``{``), optionally followed
  by calls; with a ``response_format``, that structure *or* calls. The text is free until the model
  starts a call, and from the trigger on the call is constrained;
* ``"required"`` - one or more calls (one where ``parallel_tool_calls=False`` or the format has
  one call per turn);
* a named tool - exactly one call of that tool.

A call is the JSON object ``{"name": ..., ARGS_KEY: {...}}`` of the tool set's schema, translated
like any JSON Schema (every keyword enforced or refused). Markers that are special tokens of the
vocabulary are token atoms (one id each), so they are allowed only as those tokens; the same
markers spelled in text are excluded from free text.

The thinking grammar is ``OPEN text CLOSE`` (``OPEN`` left out where the prompt already opened
the block), the text never containing ``CLOSE``; its token budget closes it in time.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..grammar import Grammar, ir
from ..output_types import with_generation_defaults
from ..tools import ToolSet
from ..vocab import Vocab
from .formats import CallFormat

ANY_CHAR = ir.char(negated=True)
ANY_TEXT = ir.star(ANY_CHAR)
#: Characters a bare-JSON format's free text may not start with (a call starts with ``{``).
_BARE_CALL_START = ("{", " ", "\t", "\n", "\r")


def marker(text: str, vocab: Vocab) -> ir.Node:
    """``text`` as a token atom where it is a special token of ``vocab``, else as a literal."""
    ids = [i for i in vocab.lookup_text(text) if bool(vocab.is_special[i])]
    if ids:
        return ir.Token(ids=(ids[0],), name=text)
    return ir.lit(text)


def is_special_marker(text: str, vocab: Vocab) -> bool:
    return isinstance(marker(text, vocab), ir.Token)


def not_containing(text: str) -> ir.Node:
    """Any text in which ``text`` does not occur."""
    return ir.Difference(ANY_TEXT, ir.seq(ANY_TEXT, ir.lit(text), ANY_TEXT))


def thinking_grammar(fmt: CallFormat, vocab: Vocab, *, opened: bool) -> Grammar:
    """The thinking block: ``OPEN`` (unless the prompt ``opened`` it), text without ``CLOSE``, ``CLOSE``."""
    parts = [] if opened else [marker(fmt.think_open, vocab)]
    parts += [not_containing(fmt.think_close), marker(fmt.think_close, vocab)]
    return Grammar({"root": ir.seq(*parts)})


def answer_grammar(
    fmt: CallFormat,
    vocab: Vocab,
    *,
    tools: ToolSet | None,
    tool_choice: str,
    parallel: bool,
    answer: Grammar | None,
    schema_options: Mapping[str, Any],
) -> Grammar:
    """The answer's grammar for ``tool_choice`` (``"none"``, ``"auto"``, ``"required"``, or
    ``"named"`` with ``tools`` holding just that tool); ``answer`` is the response_format's."""
    rules: dict[str, ir.Node] = {}
    externs: dict[str, str] = {}
    bindings: dict[str, Grammar] = {}
    if answer is not None:
        externs["answer"] = "grammar"
        bindings["answer"] = answer
    if tools is None or tool_choice == "none":
        rules["root"] = ir.Ref("answer") if answer is not None else ANY_TEXT
        return Grammar(rules, externs=externs).bind(**bindings)  # type: ignore[arg-type]
    many = parallel and fmt.parallel and tool_choice != "named"
    options = with_generation_defaults(schema_options)
    call_schema = tools.schema(args_key=fmt.args_key)
    if fmt.style == "list":
        defs = call_schema.pop("$defs", {})
        # with "auto", a family whose empty list means "no call" may write one (SmolLM2)
        least = 0 if tool_choice == "auto" and fmt.close else 1
        array = {"type": "array", "items": call_schema, "minItems": least, "$defs": defs}
        if not many:
            array["maxItems"] = 1
        bindings["calls"] = Grammar.from_json_schema(array, **options)
        externs["calls"] = "grammar"
        close = [marker(fmt.close, vocab)] if fmt.close else []
        calls: ir.Node = ir.seq(marker(fmt.open, vocab), ir.Ref("calls"), *close)
    else:
        bindings["call"] = Grammar.from_json_schema(call_schema, **options)
        externs["call"] = "grammar"
        if fmt.style == "blocks":
            nl = [ir.lit("\n")] if fmt.inner_newlines else []
            block = ir.seq(marker(fmt.open, vocab), *nl, ir.Ref("call"), *nl, marker(fmt.close, vocab))
            calls = ir.seq(block, ir.star(ir.seq(ir.lit(fmt.separator), block))) if many else block
        else:
            prefix = marker(fmt.prefix, vocab) if fmt.prefix else None
            # a prefix that is no special token of this vocabulary is left out, not spelled
            head = [ir.opt(prefix)] if isinstance(prefix, ir.Token) else []
            calls = ir.seq(*head, ir.Ref("call"))
    if tool_choice in ("required", "named"):
        root = calls
    elif answer is not None:
        root = ir.alt(ir.Ref("answer"), calls)
    elif fmt.style == "bare":
        first = ir.char(*[(ord(c), ord(c)) for c in _BARE_CALL_START], negated=True)
        root = ir.alt(ir.lit(b""), ir.seq(first, ANY_TEXT), calls)
    else:
        root = ir.seq(not_containing(fmt.open), ir.opt(calls))
    rules["root"] = root
    return Grammar(rules, externs=externs).bind(**bindings)  # type: ignore[arg-type]
