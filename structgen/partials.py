"""Typed partial objects of a JSON output, read incrementally from the text as it streams.

A :class:`PartialReader` is fed the output text chunk by chunk (as :func:`structgen.stream`
yields it) and returns, after each chunk, a partial object of the output type when something
visible changed. :meth:`PartialReader.finish` returns the validated result, which is the last
"partial". :func:`partials` does the loop over an iterable of chunks, :func:`apartials` over an
async one.

What a partial shows
--------------------
* A value appears once the parse state shows it complete: a string after its closing quote, a
  number once a following ``,`` ``}`` ``]`` or whitespace ends it, ``true``/``false``/``null``
  once written. An object or array appears as soon as it opens and grows as its members
  complete. A key whose value has not started is not shown.
* With ``grow_strings=True`` a string being written is shown too, as its decoded prefix: escapes
  are decoded only once complete (``"\\u12`` shows nothing of the escape yet) and the high half
  of a surrogate pair is held back until its low half arrives. Only where the type takes any
  string: an enum, a ``Literal``, a date... appears when complete, because a prefix of it is not
  a value of its type.
* At most one partial per :meth:`~PartialReader.feed`: the state after the chunk, and only when
  it differs (``!=``) from the previous one. Partials come in order and each extends the previous
  one (members are only added, lists only grow, a growing string only gets longer). While the
  root value is open; the complete value comes from :meth:`~PartialReader.finish` (it may
  equal the last partial in value, but it is the validated object).

Typing, by output type
----------------------
* A Pydantic model: an instance built with ``model_construct`` (no validation). Fields not yet
  written are ``None``, defaults included (a default shows only in the validated result);
  ``model_fields_set`` names the fields written so far (complete, or open, or growing). A nested
  model that is still open is constructed the same way; a part of the output that is complete (a
  nested model, a list item, a scalar) is validated with Pydantic on its own, so it shows its
  real type (enum members, ``datetime``, ``tuple``, defaults of a nested model); where that
  validation fails it is constructed like an open part. Keys that are not fields are left out.
* A union: an object that is open takes the first branch whose fields include every key written
  so far and whose ``Literal`` fields (a discriminator) match; it may change branch as keys
  arrive. An array takes the first branch that takes arrays.
* An array being written is a ``list`` (a ``tuple`` for a tuple type, a ``list`` for a set);
  complete, it is validated. A ``TypedDict`` or a dataclass being written is a ``dict`` whose members are typed
  by its annotations. ``dict[str, X]`` is a dict of ``X`` partials. ``Any`` is plain JSON data.
* A JSON Schema dict: plain dicts, lists and scalars.
* Tools: a :class:`~structgen.tools.ToolSet` (or a list of tools) reads the generic call object
  ``{"name": ..., "arguments": {...}}`` (``arguments_key=`` names another key, e.g.
  ``"parameters"``; ``call_list=True`` reads a JSON array of such calls, as Mistral writes them,
  into lists of calls); a single :class:`~structgen.tools.Tool` reads just its arguments object (the
  arguments text of a call in a model's native format). Partials are :class:`PartialCall`
  ``(name, arguments)``, the arguments typed like the tool's ``args_model`` (dicts for OpenAI
  definitions), shown once the name is complete (a name that is not a tool of the set shows
  nothing, and ``finish`` raises). The last one holds the validated arguments.

Cost
----
Parsing is incremental (a stack of open containers, the pending key, the text of the scalar
being written), so a chunk costs O(len(chunk)) to parse whatever came before. Building a partial
copies only the open containers on the path to the cursor, shallowly: complete parts are built
once and shared by every later partial (so treat partials as read-only). With
``grow_strings=True`` each partial also holds a fresh copy of the growing string.
:attr:`PartialReader.stats` counts this work.

Bad input
---------
Text that is not the start of one JSON value raises :class:`PartialJSONError` (a
:class:`~structgen.errors.GenerationError`) with the offset; the reader then stays failed.
Nesting deeper than :attr:`PartialsTuning.max_depth` raises
:class:`~structgen.errors.LimitError`. Building partials never raises: a complete part that fails
validation is shown constructed, and a model whose own code (``model_post_init``) fails on
partial data is shown as the dict of its members. :meth:`~PartialReader.finish` without a value
validates the whole text with the parser of :func:`structgen.output_types.resolve_output` (or
the tool's argument validation) and raises what it raises.
"""

from __future__ import annotations

import collections
import collections.abc
import dataclasses
import inspect
import json
import re
import types
import typing
from dataclasses import dataclass
from enum import Enum
from typing import Any, AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, NamedTuple

import typing_extensions
from pydantic import BaseModel, RootModel, TypeAdapter

from .errors import GenerationError, LimitError, StructgenError
from .grammar import Grammar
from .output_types import resolve_output
from .tools import Tool, ToolSet, looks_like_tools

__all__ = [
    "DEFAULT_PARTIALS_TUNING",
    "PartialCall",
    "PartialJSONError",
    "PartialReader",
    "PartialsTuning",
    "ReaderStats",
    "apartials",
    "partials",
]


@dataclass(frozen=True)
class PartialsTuning:
    """Bounds of a :class:`PartialReader`."""

    #: Deepest nesting of objects and arrays read. The parser keeps its own stack, but complete
    #: parts are validated by ``json.dumps`` and Pydantic, which recurse; this keeps them well
    #: under Python's recursion limit, and far above what any output schema produces.
    max_depth: int = 256


DEFAULT_PARTIALS_TUNING = PartialsTuning()


class PartialJSONError(GenerationError):
    """Text fed to a :class:`PartialReader` that is not the start of one JSON value.

    ``position`` is the offset (in characters) in the whole text fed so far, which
    ``partial_text`` holds.
    """

    def __init__(self, message: str, *, position: int, partial_text: str = "") -> None:
        self.position = position
        super().__init__(f"{message} at offset {position}", partial_text=partial_text)


class PartialCall(NamedTuple):
    """A tool call as far as it is written: the tool's ``name`` and its (partial) ``arguments``."""

    name: str
    arguments: Any


@dataclass(frozen=True)
class ReaderStats:
    """Work a :class:`PartialReader` did, for tests and diagnostics."""

    #: Iterations of the parser loop: each consumes at least one character, except the step that
    #: ends a number or starts the first item of an array (at most one per character).
    scan_steps: int
    #: Members copied into the open containers of the partials built.
    items_copied: int
    #: Partials returned by ``feed``.
    partials: int


_MISSING: Any = object()  # no value passed
_NOTHING: Any = object()  # nothing to show


# -- the incremental JSON parser --------------------------------------------------------------

# parser modes
_VALUE, _FIRST_ITEM, _AFTER, _KEY_OR_CLOSE, _KEY, _COLON = range(6)
_STRING, _ESCAPE, _UNICODE, _NUMBER, _LITERAL, _DONE = range(6, 12)
_IN_STRING = (_STRING, _ESCAPE, _UNICODE)

_WHITESPACE = re.compile(r"[ \t\n\r]+")
_STRING_RUN = re.compile(r'[^"\\\x00-\x1f]+')
_NUMBER_RUN = re.compile(r"[0-9eE.+\-]+")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_HEX = re.compile(r"[0-9a-fA-F]*")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}
_LITERAL_STARTS = {"t": "true", "f": "false", "n": "null"}


class _Frame:
    """An open object or array: its complete members (``raw``), and the typed ones built so far."""

    __slots__ = ("is_object", "raw", "keys", "key", "typed", "typed_count", "typed_plan")

    def __init__(self, is_object: bool) -> None:
        self.is_object = is_object
        self.raw: Any = {} if is_object else []
        self.keys: list[str] = []  # member keys in order of first appearance
        self.key: str | None = None  # the key whose value is being written
        self.typed: Any = None
        self.typed_count = 0
        self.typed_plan: _Plan | None = None

    def slot(self) -> str | int | None:
        """Where the value being written goes: its key, or the next index."""
        return self.key if self.is_object else len(self.raw)


class _Parser:
    """One JSON value read character by character across chunks, with no recursion.

    ``stack`` holds the open containers; ``events`` counts the changes a partial can show
    (a container opened or closed, a value completed); ``string_grew`` says that the string being
    written got longer.
    """

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.mode = _VALUE
        self.stack: list[_Frame] = []
        self.root: Any = _MISSING
        self.events = 0
        self.steps = 0
        self.string_grew = False
        self.string_id = 0  # strings started so far: tells one string from the next
        self.in_key = False
        self.parts: list[str] = []
        self.high: int | None = None  # a high surrogate waiting for its low half
        self.hex = ""
        self.literal = ""
        self.literal_pos = 0
        self.number: list[str] = []
        self.offset = 0  # characters consumed before the current chunk

    # -- driving ----------------------------------------------------------------------------

    def feed(self, text: str) -> None:
        i, n = 0, len(text)
        step = self._step
        while i < n:
            self.steps += 1
            i = step(text, i)
        self.offset += n

    def end(self) -> None:
        """The text is over: end a number at the root, and check the value is complete."""
        if self.mode == _NUMBER and not self.stack:
            self._end_number(0)
        if self.mode != _DONE:
            raise self._error("the text ends before the JSON value is complete", 0)

    def prefix(self) -> str:
        """The decoded text of the string being written (a pending high surrogate held back)."""
        if len(self.parts) > 1:
            self.parts = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""

    def _error(self, message: str, i: int) -> PartialJSONError:
        return PartialJSONError(message, position=self.offset + i)

    # -- one step ---------------------------------------------------------------------------

    def _step(self, text: str, i: int) -> int:
        mode = self.mode
        if mode == _STRING:
            m = _STRING_RUN.match(text, i)
            if m is not None:
                self._piece(m.group())
                return m.end()
            c = text[i]
            if c == '"':
                self._end_string()
            elif c == "\\":
                self.mode = _ESCAPE
            else:
                raise self._error(f"control character {c!r} in a string", i)
            return i + 1
        if mode == _ESCAPE:
            c = text[i]
            if c == "u":
                self.mode, self.hex = _UNICODE, ""
            elif c in _ESCAPES:
                self._piece(_ESCAPES[c])
                self.mode = _STRING
            else:
                raise self._error(f"invalid escape '\\{c}'", i)
            return i + 1
        if mode == _UNICODE:
            take = text[i : i + 4 - len(self.hex)]
            bad = _HEX.match(take).end()  # type: ignore[union-attr]
            if bad < len(take):
                raise self._error(f"invalid hex digit {take[bad]!r} in a \\u escape", i + bad)
            self.hex += take
            if len(self.hex) == 4:
                self._code_point(int(self.hex, 16))
                self.mode = _STRING
            return i + len(take)
        if mode == _NUMBER:
            m = _NUMBER_RUN.match(text, i)
            if m is not None:
                self.number.append(m.group())
                return m.end()
            self._end_number(i)
            return i  # the character that ended the number is read in the next mode
        if mode == _LITERAL:
            want = self.literal[self.literal_pos :]
            got = text[i : i + len(want)]
            if not want.startswith(got):
                raise self._error(f"invalid literal (expected {self.literal!r})", i)
            self.literal_pos += len(got)
            if self.literal_pos == len(self.literal):
                self._complete(_LITERALS[self.literal])
            return i + len(got)
        m = _WHITESPACE.match(text, i)
        if m is not None:
            return m.end()
        c = text[i]
        if mode == _VALUE:
            return self._start_value(c, i)
        if mode == _FIRST_ITEM:
            if c == "]":
                self._close()
                return i + 1
            self.mode = _VALUE
            return self._start_value(c, i)
        if mode == _AFTER:
            top = self.stack[-1]
            if c == ",":
                self.mode = _KEY if top.is_object else _VALUE
                return i + 1
            if c == ("}" if top.is_object else "]"):
                self._close()
                return i + 1
            raise self._error(f"expected ',' or {'}' if top.is_object else ']'!r}, found {c!r}", i)
        if mode == _KEY_OR_CLOSE and c == "}":
            self._close()
            return i + 1
        if mode in (_KEY_OR_CLOSE, _KEY):
            if c != '"':
                raise self._error(f"expected a key string, found {c!r}", i)
            self._start_string(is_key=True)
            return i + 1
        if mode == _COLON:
            if c != ":":
                raise self._error(f"expected ':', found {c!r}", i)
            self.mode = _VALUE
            return i + 1
        raise self._error(f"text after the JSON value: {c!r}", i)  # mode == _DONE

    def _start_value(self, c: str, i: int) -> int:
        if c == "{" or c == "[":
            if len(self.stack) >= self.max_depth:
                raise LimitError("JSON nesting is too deep for partials", limit="max_depth", value=self.max_depth)
            self.stack.append(_Frame(c == "{"))
            self.events += 1
            self.mode = _KEY_OR_CLOSE if c == "{" else _FIRST_ITEM
            return i + 1
        if c == '"':
            self._start_string(is_key=False)
            return i + 1
        if c == "-" or "0" <= c <= "9":
            self.mode, self.number = _NUMBER, []
            return i
        if c in _LITERAL_STARTS:
            self.mode, self.literal, self.literal_pos = _LITERAL, _LITERAL_STARTS[c], 1
            return i + 1
        raise self._error(f"expected a JSON value, found {c!r}", i)

    # -- values -----------------------------------------------------------------------------

    def _complete(self, value: Any) -> None:
        self.events += 1
        if not self.stack:
            self.root, self.mode = value, _DONE
            return
        top = self.stack[-1]
        if top.is_object:
            key = top.key
            if key in top.raw:
                # a repeated key: the later value wins, as in json.loads; typed members are rebuilt
                top.typed_plan = None
            else:
                top.keys.append(key)  # type: ignore[arg-type]
            top.raw[key] = value
            top.key = None
        else:
            top.raw.append(value)
        self.mode = _AFTER

    def _close(self) -> None:
        self._complete(self.stack.pop().raw)

    def _end_number(self, i: int) -> None:
        text = "".join(self.number)
        m = _NUMBER.fullmatch(text)
        if m is None:
            raise self._error(f"invalid number {text[:40]!r}", i)
        try:
            value: Any = float(text) if m.group(1) or m.group(2) else int(text)
        except ValueError as e:  # more digits than Python converts (sys.get_int_max_str_digits)
            raise self._error(f"number too long to convert ({len(text)} digits)", i) from e
        self._complete(value)

    def _start_string(self, *, is_key: bool) -> None:
        self.mode, self.in_key = _STRING, is_key
        self.parts, self.high = [], None
        self.string_id += 1
        self.string_grew = True

    def _piece(self, decoded: str) -> None:
        if self.high is not None:
            self.parts.append(chr(self.high))  # a lone high surrogate, kept as json.loads keeps it
            self.high = None
        self.parts.append(decoded)
        self.string_grew = True

    def _code_point(self, code: int) -> None:
        if self.high is not None and 0xDC00 <= code <= 0xDFFF:
            pair = 0x10000 + ((self.high - 0xD800) << 10) + (code - 0xDC00)
            self.high = None
            self._piece(chr(pair))
        elif 0xD800 <= code <= 0xDBFF:
            if self.high is not None:
                self._piece("")  # flush the previous lone high surrogate
            self.high = code
        else:
            self._piece(chr(code))

    def _end_string(self) -> None:
        if self.high is not None:
            self._piece("")
        text = "".join(self.parts)
        self.parts = []
        if self.in_key:
            self.stack[-1].key = text
            self.mode = _COLON
        else:
            self._complete(text)


# -- plans: what a partial shows at each place of the output ----------------------------------


class _Plan:
    """How the JSON value at one place of the output becomes what a partial shows.

    This base plan is untyped: plain JSON data everywhere below it.
    """

    takes_objects = True
    takes_arrays = True

    def select(self, is_object: bool, raw: Any) -> _Plan:
        """The plan for an open container here, given its complete members (unions choose); a
        container where the type has none is plain data."""
        return self if (self.takes_objects if is_object else self.takes_arrays) else _RAW

    def fits(self, raw: Any) -> bool:
        """Whether an object with these members can still become this type."""
        return True

    def child(self, slot: Any) -> _Plan:
        return _RAW

    def validate(self, raw: Any) -> Any:
        """The complete value ``raw`` typed, or ``_NOTHING`` where it does not validate."""
        return raw

    def growing(self, prefix: str) -> Any:
        """What a string being written shows here (``_NOTHING``: nothing until complete)."""
        return prefix

    def open_object(self, items: dict[str, Any]) -> Any:
        return items

    def open_array(self, items: list[Any]) -> Any:
        return items


_RAW = _Plan()


def _complete_value(plan: _Plan, raw: Any) -> Any:
    """The typed view of a complete value: validated, or (where that fails) built from its
    members' typed views, bottom up without recursion."""
    value = plan.validate(raw)
    if value is not _NOTHING:
        return value
    if not isinstance(raw, (dict, list)):
        return raw
    root: list[Any] = [None]
    todo: list[tuple[_Plan, Any, Any, Any, bool]] = [(plan, raw, root, 0, True)]
    built: list[tuple[_Plan, Any, Any, Any]] = []  # parents before their members
    while todo:
        here, value, parent, slot, tried = todo.pop()
        typed = _NOTHING if tried else here.validate(value)
        if typed is not _NOTHING:
            parent[slot] = typed
        elif isinstance(value, dict):
            chosen = here.select(True, value)
            holder: Any = dict.fromkeys(value)
            built.append((chosen, holder, parent, slot))
            todo.extend((chosen.child(k), v, holder, k, False) for k, v in value.items())
        elif isinstance(value, list):
            chosen = here.select(False, value)
            holder = [None] * len(value)
            built.append((chosen, holder, parent, slot))
            todo.extend((chosen.child(k), v, holder, k, False) for k, v in enumerate(value))
        else:
            parent[slot] = value
    for chosen, holder, parent, slot in reversed(built):
        parent[slot] = chosen.open_object(holder) if isinstance(holder, dict) else chosen.open_array(holder)
    return root[0]


class _Plans:
    """Plans for Python types, built lazily (recursive models are fine) and memoised per reader."""

    def __init__(self) -> None:
        self._memo: dict[Any, tuple[Any, _Plan]] = {}
        self._adapters: dict[Any, tuple[Any, Any]] = {}

    def plan(self, tp: Any) -> _Plan:
        key = _memo_key(tp)
        hit = self._memo.get(key)
        if hit is None:
            hit = (tp, self._build(tp))  # the type is kept so that an id() key stays unique
            self._memo[key] = hit
        return hit[1]

    def validate(self, tp: Any, raw: Any) -> Any:
        """``raw`` validated as ``tp`` in JSON mode, or ``_NOTHING``."""
        key = _memo_key(tp)
        hit = self._adapters.get(key)
        if hit is None:
            try:
                adapter = TypeAdapter(tp)
            except Exception:  # noqa: BLE001 - a type Pydantic refuses only loses its typing here
                adapter = None
            hit = (tp, adapter)
            self._adapters[key] = hit
        adapter = hit[1]
        if adapter is None:
            return _NOTHING
        try:
            return adapter.validate_json(json.dumps(raw))
        except Exception:  # noqa: BLE001 - user validators may raise anything; the part is then constructed
            return _NOTHING

    def _build(self, tp: Any) -> _Plan:
        tp = _unwrap(tp)
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if tp is Any or tp is object or isinstance(tp, (str, typing.ForwardRef)):
            return _RAW
        if origin is typing.Union or origin is types.UnionType:
            return _UnionPlan(self, tp, [self.plan(a) for a in args if a is not type(None)])
        if origin is typing.Literal:
            return _LeafPlan(self, tp, grows=False)
        if inspect.isclass(tp) and issubclass(tp, RootModel):
            return _RootPlan(self, tp, self.plan(tp.model_fields["root"].annotation))
        if inspect.isclass(tp) and issubclass(tp, BaseModel):
            return _ModelPlan(self, tp)
        if typing_extensions.is_typeddict(tp) or (inspect.isclass(tp) and dataclasses.is_dataclass(tp)):
            return _FieldsPlan(self, tp)
        container = origin or tp
        if container is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return _ArrayPlan(self, tp, args[0], None)
            return _ArrayPlan(self, tp, Any, args or None)
        if container in _ARRAY_TYPES:
            return _ArrayPlan(self, tp, args[0] if args else Any, None)
        if container in _MAPPING_TYPES:
            return _MappingPlan(self, tp, args[1] if len(args) == 2 else Any)
        grows = inspect.isclass(tp) and issubclass(tp, str) and not issubclass(tp, Enum)
        return _LeafPlan(self, tp, grows=grows)


_ARRAY_TYPES = {
    list,
    set,
    frozenset,
    collections.deque,
    collections.abc.Sequence,
    collections.abc.MutableSequence,
    collections.abc.Set,
    collections.abc.MutableSet,
    collections.abc.Iterable,
    collections.abc.Collection,
}
_MAPPING_TYPES = {dict, collections.OrderedDict, collections.abc.Mapping, collections.abc.MutableMapping}


def _memo_key(tp: Any) -> Any:
    try:
        hash(tp)
        return ("type", tp)
    except TypeError:  # Annotated metadata or a generic alias that does not hash
        return ("id", id(tp))


def _unwrap(tp: Any) -> Any:
    """``tp`` without ``Annotated``, ``NewType`` and ``type X = ...`` aliases."""
    for _ in range(64):  # aliases of aliases are finite; the bound keeps a cyclic alias from hanging
        if typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif hasattr(tp, "__supertype__"):
            tp = tp.__supertype__
        elif type(tp).__name__ == "TypeAliasType" and hasattr(tp, "__value__"):
            tp = tp.__value__
        else:
            break
    return tp


class _LeafPlan(_Plan):
    """A scalar type: complete values validated; strings shown growing where it is a ``str``."""

    takes_objects = False
    takes_arrays = False

    def __init__(self, plans: _Plans, tp: Any, *, grows: bool) -> None:
        self.plans, self.tp, self.grows = plans, tp, grows

    def validate(self, raw: Any) -> Any:
        return self.plans.validate(self.tp, raw)

    def growing(self, prefix: str) -> Any:
        return prefix if self.grows else _NOTHING


class _TypedPlan(_Plan):
    """A container type: complete values validated as the type, nothing shown for strings."""

    def __init__(self, plans: _Plans, tp: Any) -> None:
        self.plans, self.tp = plans, tp
        self._children: dict[Any, _Plan] = {}

    def validate(self, raw: Any) -> Any:
        return self.plans.validate(self.tp, raw)

    def growing(self, prefix: str) -> Any:
        return _NOTHING

    def _child_of(self, slot: Any, tp: Any) -> _Plan:
        plan = self._children.get(slot)
        if plan is None:
            plan = self._children[slot] = self.plans.plan(tp)
        return plan


class _ModelPlan(_TypedPlan):
    """A Pydantic model: open objects are ``model_construct``-ed, unwritten fields ``None``."""

    takes_arrays = False

    def __init__(self, plans: _Plans, model: type[BaseModel]) -> None:
        super().__init__(plans, model)
        self.names: dict[str, str] = {}  # JSON key -> field name
        self.annotations: dict[str, Any] = {}
        self.literals: dict[str, tuple[Any, ...]] = {}  # JSON key -> the values a Literal field takes
        for name, info in model.model_fields.items():
            alias = info.validation_alias if isinstance(info.validation_alias, str) else info.alias
            for key in (alias or name, name):
                self.names.setdefault(key, name)
            self.annotations[name] = info.annotation
            stripped = _unwrap(info.annotation)
            if typing.get_origin(stripped) is typing.Literal:
                self.literals[alias or name] = typing.get_args(stripped)
        self.unwritten = dict.fromkeys(model.model_fields)

    def fits(self, raw: Any) -> bool:
        if not all(key in self.names for key in raw):
            return False
        return all(any(raw[key] == v for v in values) for key, values in self.literals.items() if key in raw)

    def child(self, slot: Any) -> _Plan:
        name = self.names.get(slot)
        return _RAW if name is None else self._child_of(name, self.annotations[name])

    def open_object(self, items: dict[str, Any]) -> Any:
        values = dict(self.unwritten)
        written = set()
        for key, value in items.items():
            name = self.names.get(key)
            if name is not None:
                values[name] = value
                written.add(name)
        return _constructed(self.tp, items, _fields_set=written, **values)


def _constructed(model: Any, fallback: Any, **values: Any) -> Any:
    """``model.model_construct(**values)``; ``fallback`` where the model's own code
    (``model_post_init``, private attribute factories) fails on the partial data."""
    try:
        return model.model_construct(**values)
    except Exception:  # noqa: BLE001 - user code in the model may raise anything on partial data
        return fallback


class _RootPlan(_TypedPlan):
    """A ``RootModel``: its root's partial, wrapped with ``model_construct(root=...)``."""

    def __init__(self, plans: _Plans, model: Any, inner: _Plan) -> None:
        super().__init__(plans, model)
        self.inner = inner
        self.takes_objects, self.takes_arrays = inner.takes_objects, inner.takes_arrays
        self._variants: dict[int, _RootPlan] = {}

    def select(self, is_object: bool, raw: Any) -> _Plan:
        chosen = self.inner.select(is_object, raw)
        if chosen is self.inner:
            return self
        variant = self._variants.get(id(chosen))
        if variant is None:
            variant = self._variants[id(chosen)] = _RootPlan(self.plans, self.tp, chosen)
        return variant

    def fits(self, raw: Any) -> bool:
        return self.inner.fits(raw)

    def child(self, slot: Any) -> _Plan:
        return self.inner.child(slot)

    def growing(self, prefix: str) -> Any:
        shown = self.inner.growing(prefix)
        return _NOTHING if shown is _NOTHING else _constructed(self.tp, shown, root=shown)

    def open_object(self, items: dict[str, Any]) -> Any:
        inner = self.inner.open_object(items)
        return _constructed(self.tp, inner, root=inner)

    def open_array(self, items: list[Any]) -> Any:
        inner = self.inner.open_array(items)
        return _constructed(self.tp, inner, root=inner)


class _FieldsPlan(_TypedPlan):
    """A ``TypedDict`` or a dataclass: open, a dict whose members are typed by the annotations."""

    takes_arrays = False

    def __init__(self, plans: _Plans, tp: Any) -> None:
        super().__init__(plans, tp)
        try:
            self.hints = typing.get_type_hints(tp, include_extras=True)
        except Exception:  # noqa: BLE001 - unresolvable annotations: the members stay plain data
            self.hints = {}

    def fits(self, raw: Any) -> bool:
        return all(key in self.hints for key in raw)

    def child(self, slot: Any) -> _Plan:
        return self._child_of(slot, self.hints[slot]) if slot in self.hints else _RAW


class _ArrayPlan(_TypedPlan):
    """``list``, ``set``, ``tuple``...: open, a list of the items' partials (a tuple for a tuple
    type; a set stays a list, since an open item is not hashable)."""

    takes_objects = False

    def __init__(self, plans: _Plans, tp: Any, item: Any, positional: tuple[Any, ...] | None) -> None:
        super().__init__(plans, tp)
        self.item, self.positional = item, positional
        self.as_tuple = (typing.get_origin(tp) or tp) is tuple

    def open_array(self, items: list[Any]) -> Any:
        return tuple(items) if self.as_tuple else items

    def child(self, slot: Any) -> _Plan:
        if self.positional is None:
            return self._child_of(None, self.item)
        if isinstance(slot, int) and slot < len(self.positional):
            return self._child_of(slot, self.positional[slot])
        return _RAW


class _MappingPlan(_TypedPlan):
    """``dict[str, X]``: a dict of ``X`` partials."""

    takes_arrays = False

    def __init__(self, plans: _Plans, tp: Any, value: Any) -> None:
        super().__init__(plans, tp)
        self.value = value

    def child(self, slot: Any) -> _Plan:
        return self._child_of(None, self.value)


class _UnionPlan(_TypedPlan):
    """A union (``Optional`` included): complete values validated as the union; open ones take
    the first branch that fits what is written."""

    def __init__(self, plans: _Plans, tp: Any, branches: list[_Plan]) -> None:
        super().__init__(plans, tp)
        self.branches = branches
        self.takes_objects = any(b.takes_objects for b in branches)
        self.takes_arrays = any(b.takes_arrays for b in branches)

    def select(self, is_object: bool, raw: Any) -> _Plan:
        candidates = [b for b in self.branches if (b.takes_objects if is_object else b.takes_arrays)]
        if not candidates:
            return _RAW
        chosen = next((b for b in candidates if b.fits(raw)), candidates[0])
        return chosen.select(is_object, raw)

    def fits(self, raw: Any) -> bool:
        return any(b.takes_objects and b.fits(raw) for b in self.branches)

    def growing(self, prefix: str) -> Any:
        for branch in self.branches:
            shown = branch.growing(prefix)
            if shown is not _NOTHING:
                return shown
        return _NOTHING


class _CallPlan(_Plan):
    """The generic call object of a tool set: nothing shown until the name is complete."""

    def __init__(self, plans: _Plans, toolset: ToolSet, arguments_key: str) -> None:
        self.toolset = toolset
        self.named: dict[str, _NamedCallPlan] = {
            name: _NamedCallPlan(name, _arguments_plan(plans, tool), arguments_key)
            for name, tool in toolset.tools.items()
        }

    def select(self, is_object: bool, raw: Any) -> _Plan:
        name = raw.get("name") if is_object else None
        return self.named.get(name, self) if isinstance(name, str) else self

    def validate(self, raw: Any) -> Any:
        chosen = self.select(True, raw) if isinstance(raw, dict) else self
        return _NOTHING if chosen is self else chosen.validate(raw)

    def growing(self, prefix: str) -> Any:
        return _NOTHING

    def open_object(self, items: dict[str, Any]) -> Any:
        return _NOTHING

    def open_array(self, items: list[Any]) -> Any:
        return _NOTHING


class _CallListPlan(_Plan):
    """A JSON array of calls (Mistral's ``[TOOL_CALLS][...]``): a list of the calls whose name
    is complete."""

    takes_objects = False

    def __init__(self, call: _CallPlan) -> None:
        self.call = call

    def child(self, slot: Any) -> _Plan:
        return self.call

    def growing(self, prefix: str) -> Any:
        return _NOTHING

    def open_array(self, items: list[Any]) -> Any:
        return [item for item in items if isinstance(item, PartialCall)]


class _NamedCallPlan(_Plan):
    """A call whose tool name is known: ``PartialCall(name, typed arguments)``."""

    def __init__(self, name: str, arguments: _Plan, arguments_key: str) -> None:
        self.name, self.arguments, self.arguments_key = name, arguments, arguments_key

    def child(self, slot: Any) -> _Plan:
        return self.arguments if slot == self.arguments_key else _RAW

    def validate(self, raw: Any) -> Any:
        """A complete call (an item of a list of calls): its arguments typed as complete."""
        if self.arguments_key not in raw:
            return self.open_object({})
        return PartialCall(self.name, _complete_value(self.arguments, raw[self.arguments_key]))

    def open_object(self, items: dict[str, Any]) -> Any:
        if self.arguments_key in items:
            return PartialCall(self.name, items[self.arguments_key])
        return PartialCall(self.name, self.arguments.select(True, {}).open_object({}))


class _ArgumentsPlan(_Plan):
    """A call's arguments object alone: ``PartialCall(name, typed arguments)``."""

    takes_arrays = False

    def __init__(self, name: str, arguments: _Plan) -> None:
        self.name, self.arguments = name, arguments
        self._variants: dict[int, _ArgumentsPlan] = {}

    def select(self, is_object: bool, raw: Any) -> _Plan:
        chosen = self.arguments.select(is_object, raw)
        if chosen is self.arguments:
            return self
        variant = self._variants.get(id(chosen))
        if variant is None:
            variant = self._variants[id(chosen)] = _ArgumentsPlan(self.name, chosen)
        return variant

    def child(self, slot: Any) -> _Plan:
        return self.arguments.child(slot)

    def growing(self, prefix: str) -> Any:
        return _NOTHING

    def open_object(self, items: dict[str, Any]) -> Any:
        return PartialCall(self.name, self.arguments.open_object(items))

    def open_array(self, items: list[Any]) -> Any:
        return _NOTHING


def _arguments_plan(plans: _Plans, tool: Tool) -> _Plan:
    return _RAW if tool.args_model is None else plans.plan(tool.args_model)


# -- the reader -------------------------------------------------------------------------------


class PartialReader:
    """Partials of ``output_type`` from its JSON text, fed chunk by chunk (see the module docstring).

    ``output_type``: a Pydantic model or any type ``TypeAdapter`` takes, a JSON Schema dict, a
    :class:`~structgen.tools.ToolSet` or a list of tools (the call object; ``arguments_key``
    names its arguments member; ``call_list=True``: a JSON array of calls, whose partials are
    lists of :class:`PartialCall`), or one :class:`~structgen.tools.Tool` (its arguments object).
    ``grow_strings``: also show strings while they are written. ``parse``: the validator
    :meth:`finish` uses when it is given no value (by default that of
    :func:`~structgen.output_types.resolve_output`, resolved only then). ``tuning``: bounds.

    One reader reads one output; it is not for sharing across threads.
    """

    def __init__(
        self,
        output_type: Any,
        *,
        grow_strings: bool = False,
        arguments_key: str = "arguments",
        call_list: bool = False,
        parse: Callable[[str], Any] | None = None,
        tuning: PartialsTuning = DEFAULT_PARTIALS_TUNING,
    ) -> None:
        if not isinstance(tuning.max_depth, int) or tuning.max_depth < 1:
            raise StructgenError("PartialsTuning.max_depth must be a positive integer")
        self._output_type = output_type
        self._grow = bool(grow_strings)
        self._parse = parse
        self._arguments_key = arguments_key
        self._call_list = bool(call_list)
        self._parser = _Parser(tuning.max_depth)
        self._chunks: list[str] = []
        self._last: Any = _NOTHING
        self._final: Any = _MISSING
        self._failure: StructgenError | None = None
        self._visible_string: tuple[int, bool] = (0, False)  # (string_id, shown?) of the last string
        self._copied = 0
        self._emitted = 0
        self._tool: Tool | None = None
        self._toolset: ToolSet | None = None
        self._root = self._root_plan(output_type)

    def _root_plan(self, output_type: Any) -> _Plan:
        plans = _Plans()
        if isinstance(output_type, Tool):
            self._tool = output_type
            return _ArgumentsPlan(output_type.name, _arguments_plan(plans, output_type))
        if isinstance(output_type, ToolSet) or looks_like_tools(output_type):
            self._toolset = output_type if isinstance(output_type, ToolSet) else ToolSet(output_type)
            call = _CallPlan(plans, self._toolset, self._arguments_key)
            return _CallListPlan(call) if self._call_list else call
        if self._call_list:
            raise StructgenError("call_list=True needs a tool set as the output type")
        if isinstance(output_type, Grammar):
            raise StructgenError("partials need a JSON output type (a model, a type, a JSON Schema or tools)")
        if isinstance(output_type, (str, bytes)):
            raise StructgenError("output_type is a string: pass a JSON Schema as a dict or a type")
        if isinstance(output_type, dict):
            return _RAW
        try:
            TypeAdapter(output_type)
        except Exception as e:  # noqa: BLE001 - PydanticSchemaGenerationError, PydanticUserError, TypeError
            raise StructgenError(f"output_type {output_type!r} is not a type Pydantic can validate: {e}") from e
        return plans.plan(output_type)

    # -- public -----------------------------------------------------------------------------

    @property
    def stats(self) -> ReaderStats:
        return ReaderStats(self._parser.steps, self._copied, self._emitted)

    @property
    def text(self) -> str:
        """The text fed so far."""
        if len(self._chunks) > 1:
            self._chunks = ["".join(self._chunks)]
        return self._chunks[0] if self._chunks else ""

    def feed(self, chunk: str) -> list[Any]:
        """Read ``chunk``; return ``[partial]`` when the visible state changed, else ``[]``."""
        if not isinstance(chunk, str):
            raise StructgenError(f"feed() takes text (str), not {type(chunk).__name__}")
        if self._failure is not None:
            raise self._failure
        if self._final is not _MISSING:
            raise StructgenError("feed() after finish(): the reader is done")
        if not chunk:
            return []
        self._chunks.append(chunk)
        parser = self._parser
        events = parser.events
        parser.string_grew = False
        try:
            parser.feed(chunk)
        except StructgenError as e:
            if isinstance(e, PartialJSONError):
                e.partial_text = self.text
            self._failure = e
            raise
        if parser.mode == _DONE:
            return []  # the root is complete: the next thing to show is finish()'s value
        if parser.events == events and not (self._grow and parser.string_grew and self._string_shown()):
            return []
        partial = self._snapshot()
        if partial is _NOTHING or _same(partial, self._last):
            return []
        self._last = partial
        self._emitted += 1
        return [partial]

    def finish(self, value: Any = _MISSING) -> Any:
        """The last partial: the validated result.

        ``value``: the result already validated by the caller (a stream's ``value``; for tools the
        :class:`~structgen.tools.ToolCall`, or in arguments mode the validated arguments), returned
        as is (tools: as a :class:`PartialCall`). Without it, the text is checked complete and
        validated here. Calling ``finish`` again returns the same result.
        """
        if self._final is not _MISSING:
            return self._final
        if self._failure is not None:
            raise self._failure
        final = _MISSING
        if value is not _MISSING:
            final = self._from_value(value)
        if final is _MISSING:
            try:
                self._parser.end()
            except PartialJSONError as e:
                e.partial_text = self.text
                self._failure = e
                raise
            final = self._validated()
        self._final = final
        return final

    # -- internals --------------------------------------------------------------------------

    def _from_value(self, value: Any) -> Any:
        if self._tool is None and self._toolset is None:
            return value
        if self._call_list:
            if isinstance(value, (list, tuple)) and all(hasattr(c, "name") and hasattr(c, "arguments") for c in value):
                return [PartialCall(c.name, c.arguments) for c in value]
            return _MISSING
        if hasattr(value, "name") and hasattr(value, "arguments"):
            return PartialCall(value.name, value.arguments)
        if self._tool is not None:
            return PartialCall(self._tool.name, value)
        return _MISSING  # e.g. a FinalAnswer: the call is validated from the text

    def _validated(self) -> Any:
        text = self.text
        root = self._parser.root
        if self._tool is not None:
            if not isinstance(root, dict):
                raise GenerationError("the tool arguments are not a JSON object", partial_text=text)
            return PartialCall(self._tool.name, self._tool.validate_arguments(root, text))
        if self._toolset is not None and self._call_list:
            if not isinstance(root, list):
                raise GenerationError("the output is not a JSON array of calls", partial_text=text)
            return [_validated_call(self._toolset, self._arguments_key, call, text) for call in root]
        if self._toolset is not None:
            return _validated_call(self._toolset, self._arguments_key, root, text)
        parse = self._parse or resolve_output(self._output_type).parse
        return parse(text)

    def _spine(self) -> list[_Plan]:
        """The plan of each open container, outermost first."""
        plans = []
        plan = self._root
        stack = self._parser.stack
        for depth, frame in enumerate(stack):
            plan = plan.select(frame.is_object, frame.raw)
            plans.append(plan)
            if depth + 1 < len(stack):
                plan = plan.child(frame.slot())
        return plans

    def _string_plan(self, spine: list[_Plan]) -> _Plan | None:
        """The plan of the value string being written, or None when none is."""
        parser = self._parser
        if parser.mode not in _IN_STRING or parser.in_key:
            return None
        if not parser.stack:
            return self._root
        return spine[-1].child(parser.stack[-1].slot())

    def _string_shown(self) -> bool:
        """Whether the string being written shows in partials (fixed while it is written: the
        containers around it do not change meanwhile)."""
        parser = self._parser
        string_id, shown = self._visible_string
        if string_id != parser.string_id:
            plan = self._string_plan(self._spine())
            shown = plan is not None and plan.growing("") is not _NOTHING
            self._visible_string = (parser.string_id, shown)
        return shown

    def _snapshot(self) -> Any:
        parser = self._parser
        stack = parser.stack
        spine = self._spine()
        child: Any = _NOTHING
        if self._grow:
            plan = self._string_plan(spine)
            if plan is not None:
                child = plan.growing(parser.prefix())
        for depth in range(len(stack) - 1, -1, -1):
            frame, plan = stack[depth], spine[depth]
            typed = self._typed_members(frame, plan)
            if frame.is_object:
                items: Any = dict(typed)
                if child is not _NOTHING:
                    items[frame.key] = child
                child = plan.open_object(items)
            else:
                items = list(typed)
                if child is not _NOTHING:
                    items.append(child)
                child = plan.open_array(items)
            self._copied += len(items)
        return child

    def _typed_members(self, frame: _Frame, plan: _Plan) -> Any:
        """The typed views of ``frame``'s complete members, each built once (per plan)."""
        if frame.typed_plan is not plan:
            frame.typed = {} if frame.is_object else []
            frame.typed_count, frame.typed_plan = 0, plan
        if frame.is_object:
            fresh = frame.keys[frame.typed_count :]
            for key in fresh:
                frame.typed[key] = _complete_value(plan.child(key), frame.raw[key])
            frame.typed_count += len(fresh)
        else:
            for index in range(frame.typed_count, len(frame.raw)):
                frame.typed.append(_complete_value(plan.child(index), frame.raw[index]))
            frame.typed_count = len(frame.raw)
        return frame.typed


def _same(a: Any, b: Any) -> bool:
    """``a == b``, shared complete parts compared by identity; False where a user type's
    ``__eq__`` fails (the partial is then returned)."""
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - arbitrary types in a model may compare in any way
        return False


def _validated_call(toolset: ToolSet, arguments_key: str, call: Any, text: str) -> PartialCall:
    """One complete call, its arguments validated by its tool."""
    name = call.get("name") if isinstance(call, dict) else None
    if not isinstance(name, str) or name not in toolset.tools or arguments_key not in call:
        raise GenerationError("the output is not a call of one of the tools", partial_text=text)
    return PartialCall(name, toolset.tools[name].validate_arguments(call[arguments_key], text))


def partials(
    chunks: Iterable[str],
    output_type: Any,
    *,
    grow_strings: bool = False,
    final: Callable[[], Any] | None = None,
    **reader_options: Any,
) -> Iterator[Any]:
    """The partials of ``output_type`` over ``chunks``, then the validated result.

    ``final``: called once the chunks are exhausted, returns the validated result (e.g.
    ``lambda: stream.value``); without it the text is validated here. Other keyword arguments go
    to :class:`PartialReader`.
    """
    reader = PartialReader(output_type, grow_strings=grow_strings, **reader_options)
    for chunk in chunks:
        yield from reader.feed(chunk)
    yield reader.finish() if final is None else reader.finish(final())


async def apartials(
    chunks: AsyncIterable[str],
    output_type: Any,
    *,
    grow_strings: bool = False,
    final: Callable[[], Any] | None = None,
    **reader_options: Any,
) -> AsyncIterator[Any]:
    """As :func:`partials`, over an async iterable of chunks (reading is cheap: it runs inline)."""
    reader = PartialReader(output_type, grow_strings=grow_strings, **reader_options)
    async for chunk in chunks:
        for partial in reader.feed(chunk):
            yield partial
    yield reader.finish() if final is None else reader.finish(final())
