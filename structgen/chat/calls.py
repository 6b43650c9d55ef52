"""Reading an answer's text back: the content before any call, and each call's name and arguments.

:func:`split_answer` reads a finished answer (the grammar guarantees its shape, so anything else
is a :class:`~structgen.errors.GenerationError`, never a guess). :class:`AnswerScanner` reads an
answer while it grows, for streams: how much of it is content that can be shown (text that could
still turn out to be a call's trigger is held back), and each call's name and the arguments'
JSON text so far. Both read calls as JSON, so a call's arguments may hold any text, markers
included, inside their strings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import GenerationError
from .formats import CallFormat

_WS = " \t\n\r"
_DECODER = json.JSONDecoder()


@dataclass
class RawCall:
    """One call as written: its name, its arguments' JSON text so far, and whether it is whole."""

    name: str | None
    arguments: str
    complete: bool


def split_answer(fmt: CallFormat, text: str, *, calls_possible: bool) -> tuple[str, list[tuple[str, dict]]]:
    """``(content, [(name, arguments), ...])`` of a finished answer in ``fmt``."""
    if not calls_possible:
        return text, []
    start = call_start(fmt, text)
    if start is None:
        return text, []
    pos = start
    out: list[tuple[str, dict]] = []
    try:
        if fmt.style == "list":
            pos = _skip(text, pos + len(fmt.open))
            items, pos = _DECODER.raw_decode(text, pos)
            out = [_call(fmt, item) for item in items]
            if fmt.close:
                pos = _skip(text, pos)
                if not text.startswith(fmt.close, pos):
                    raise ValueError(f"expected {fmt.close!r} at offset {pos}")
                pos += len(fmt.close)
        elif fmt.style == "blocks":
            while pos < len(text):
                if not text.startswith(fmt.open, pos):
                    raise ValueError(f"expected {fmt.open!r} at offset {pos}")
                pos = _skip(text, pos + len(fmt.open))
                obj, pos = _DECODER.raw_decode(text, pos)
                out.append(_call(fmt, obj))
                pos = _skip(text, pos)
                if not text.startswith(fmt.close, pos):
                    raise ValueError(f"expected {fmt.close!r} at offset {pos}")
                pos = _skip(text, pos + len(fmt.close))
        else:
            if fmt.prefix and text.startswith(fmt.prefix, pos):
                pos += len(fmt.prefix)
            obj, pos = _DECODER.raw_decode(text, pos)
            out.append(_call(fmt, obj))
        if text[pos:].strip():
            raise ValueError(f"unexpected text after the calls at offset {pos}")
    except (ValueError, TypeError, KeyError) as e:
        raise GenerationError(f"the tool calls cannot be read back: {e}", partial_text=text) from e
    return text[:start], out


def call_start(fmt: CallFormat, text: str) -> int | None:
    """Where the calls of a finished (or growing) answer start, or None if it has none (yet)."""
    if fmt.style in ("blocks", "list"):
        at = text.find(fmt.open)
        return None if at < 0 else at
    if text.startswith("{") or (fmt.prefix and text.startswith(fmt.prefix)):
        return 0
    return None


def _call(fmt: CallFormat, obj: object) -> tuple[str, dict]:
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not isinstance(obj.get(fmt.args_key), dict):
        raise ValueError(f"a call is {{'name': ..., {fmt.args_key!r}: {{...}}}}")
    return obj["name"], obj[fmt.args_key]


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


class AnswerScanner:
    """Reads a growing answer: :meth:`read` gives the content that can be shown so far and the
    calls as written so far. ``calls_possible`` is False where the grammar allows no calls."""

    def __init__(self, fmt: CallFormat, *, calls_possible: bool) -> None:
        self.fmt = fmt
        self.calls_possible = calls_possible
        # A stream reads the same text again with a chunk more each time: what was scanned is
        # kept (where each unfinished value's scan stopped, and each whole call), so a read
        # costs the new characters, not the whole answer again.
        self._text = ""
        self._memo = _ScanMemo()

    def read(self, text: str, *, final: bool = False) -> tuple[str, list[RawCall]]:
        if not self.calls_possible:
            return text, []
        if not text.startswith(self._text):
            self._memo = _ScanMemo()  # not a continuation of the last read: scan afresh
        self._text = text
        fmt = self.fmt
        start = self._memo.start if self._memo.start is not None else call_start(fmt, text)
        self._memo.start = start
        if start is None:
            if final:
                return text, []
            if fmt.style == "bare":
                # the first character decides; a prefix marker may still be coming
                undecided = not text or (fmt.prefix and fmt.prefix.startswith(text))
                return ("" if undecided else text), []
            # what could still turn out to start the trigger, and whitespace a call would drop
            return text[: max(0, len(text) - len(fmt.open) + 1)].rstrip(), []
        return text[:start].rstrip(), self._calls(text, start)

    def _calls(self, text: str, pos: int) -> list[RawCall]:
        fmt = self.fmt
        memo = self._memo
        calls: list[RawCall] = []
        if fmt.style == "list":
            pos = _skip(text, pos + len(fmt.open))
            if pos >= len(text) or text[pos] != "[":
                return calls
            pos += 1
            while True:
                pos = _skip(text, pos)
                if pos >= len(text) or text[pos] != "{":
                    return calls
                call, pos = _scan_call(text, pos, fmt.args_key, memo)
                calls.append(call)
                if pos is None:
                    return calls
                pos = _skip(text, pos)
                if pos < len(text) and text[pos] == ",":
                    pos += 1
                    continue
                return calls
        while pos < len(text):
            if fmt.style == "blocks":
                if not text.startswith(fmt.open, pos):
                    return calls
                pos += len(fmt.open)
            elif fmt.prefix and text.startswith(fmt.prefix, pos):
                pos += len(fmt.prefix)
            pos = _skip(text, pos)
            if pos >= len(text) or text[pos] != "{":
                return calls
            call, end = _scan_call(text, pos, fmt.args_key, memo)
            calls.append(call)
            if end is None or fmt.style != "blocks":
                return calls
            pos = _skip(text, end)
            if not text.startswith(fmt.close, pos):
                return calls
            pos = _skip(text, pos + len(fmt.close))
        return calls


class _ScanMemo:
    """What earlier reads of a growing answer found: where its calls start, each whole call (by
    its offset), and where the scan of each unfinished JSON value stopped (by its offset)."""

    __slots__ = ("start", "whole", "values", "ends")

    def __init__(self) -> None:
        self.start: int | None = None
        self.whole: dict[int, tuple[RawCall, int]] = {}
        self.values: dict[int, tuple[int, int, bool]] = {}
        self.ends: dict[int, int] = {}


def _scan_call(text: str, pos: int, args_key: str, memo: _ScanMemo | None = None) -> tuple[RawCall, int | None]:
    """The call object starting at ``text[pos] == "{"``: what is written of it, and the offset
    after it (None while it is unfinished)."""
    if memo is not None and pos in memo.whole:
        whole, after = memo.whole[pos]
        return RawCall(whole.name, whole.arguments, True), after
    call, end = _scan_object(text, pos, args_key, memo)
    if memo is not None and end is not None:
        memo.whole[pos] = (RawCall(call.name, call.arguments, True), end)
    return call, end


def _scan_object(text: str, pos: int, args_key: str, memo: _ScanMemo | None) -> tuple[RawCall, int | None]:
    call = RawCall(None, "", False)
    pos += 1
    while True:
        pos = _skip(text, pos)
        if pos >= len(text):
            return call, None
        if text[pos] == "}":
            call.complete = True
            return call, pos + 1
        if text[pos] == ",":
            pos += 1
            continue
        key_end = _value_end(text, pos, memo)
        if key_end is None:
            return call, None
        key = json.loads(text[pos:key_end])
        pos = _skip(text, key_end)
        if pos >= len(text):
            return call, None
        pos = _skip(text, pos + 1)  # the colon
        end = _value_end(text, pos, memo)
        if key == "name":
            if end is None:
                return call, None
            call.name = json.loads(text[pos:end])
        elif key == args_key:
            call.arguments = text[pos:end] if end is not None else text[pos:]
            if end is None:
                return call, None
        elif end is None:
            return call, None
        pos = end


def _value_end(text: str, pos: int, memo: _ScanMemo | None = None) -> int | None:
    """The offset just after the JSON value starting at ``pos``, or None if it is unfinished
    (then, with ``memo``, where the scan stopped is kept for the next, longer text)."""
    if pos >= len(text):
        return None
    c = text[pos]
    if c not in '"{[':
        i = pos
        while i < len(text) and text[i] not in ",}] \t\n\r":
            i += 1
        return i if i < len(text) else None
    if memo is not None and pos in memo.ends:
        return memo.ends[pos]
    if memo is not None and pos in memo.values:
        i, depth, in_string = memo.values[pos]
    elif c == '"':
        i, depth, in_string = pos + 1, 0, True
    else:
        i, depth, in_string = pos, 0, False
    n = len(text)
    while i < n:
        ch = text[i]
        if in_string:
            if ch == "\\":
                i += 2
                continue
            if ch == '"':
                in_string = False
                if depth == 0:
                    return _ended(memo, pos, i + 1)
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return _ended(memo, pos, i + 1)
        i += 1
    if memo is not None:
        # ``i`` may be one past the end (an escape whose second character is still to come):
        # the next read resumes after that character
        memo.values[pos] = (i, depth, in_string)
    return None


def _ended(memo: _ScanMemo | None, pos: int, end: int) -> int:
    if memo is not None:
        memo.values.pop(pos, None)
        memo.ends[pos] = end
    return end
