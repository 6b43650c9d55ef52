"""The stream's answer scanner reads a growing answer incrementally: at every prefix, and for any
way the text is cut into chunks, it says what a scanner reading that prefix afresh says, and the
finished answer's calls are the ones ``split_answer`` reads back."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from structgen.chat.calls import AnswerScanner, split_answer
from structgen.chat.formats import GENERIC, HERMES, LLAMA3, MISTRAL, SMOLLM2

_FORMATS = [HERMES, LLAMA3, MISTRAL, SMOLLM2, GENERIC]
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(alphabet='ab"\\{}[],: \n\u00e9', max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text('xyz"\\', max_size=3), inner, max_size=3),
    max_leaves=8,
)
_CALLS = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(["get", "put_x", 'q"t']),
            "arguments": st.dictionaries(st.text("ab", max_size=2), _JSON, max_size=3),
        }
    ),
    min_size=1,
    max_size=3,
)


def _fresh(fmt, text: str, final: bool):  # type: ignore[no-untyped-def]
    return AnswerScanner(fmt, calls_possible=True).read(text, final=final)


@settings(max_examples=150, deadline=None)
@given(
    fmt=st.sampled_from(_FORMATS),
    calls=_CALLS,
    lead=st.sampled_from(["", "Sure. ", "a <tool"]),
    cuts=st.lists(st.integers(1, 7), min_size=1, max_size=40),
)
def test_incremental_reads_equal_fresh_reads(fmt, calls, lead, cuts) -> None:  # type: ignore[no-untyped-def]
    if fmt.style == "bare":
        calls, lead = calls[:1], ""
    text = lead + fmt.render_calls(calls)
    scanner = AnswerScanner(fmt, calls_possible=True)
    at = 0
    i = 0
    while at < len(text):
        at = min(len(text), at + cuts[i % len(cuts)])
        i += 1
        assert scanner.read(text[:at]) == _fresh(fmt, text[:at], False), text[:at]
    content, raw = scanner.read(text, final=True)
    assert (content, raw) == _fresh(fmt, text, True)
    _, parsed = split_answer(fmt, text, calls_possible=True)
    assert [(c.name, json.loads(c.arguments)) for c in raw] == [(c["name"], c["arguments"]) for c in calls]
    assert parsed == [(c["name"], c["arguments"]) for c in calls]


def test_a_read_that_does_not_continue_the_last_scans_afresh() -> None:
    scanner = AnswerScanner(HERMES, calls_possible=True)
    scanner.read('<tool_call>{"name": "a", "arguments": {"x": "abc')
    text = '<tool_call>{"name": "b", "arguments": {"y": 1}}</tool_call>'
    assert scanner.read(text, final=True) == _fresh(HERMES, text, True)


def test_long_arguments_are_scanned_once() -> None:
    """A call whose arguments grow a character at a time: every read resumes where the last
    stopped (the memo holds one unfinished scan per open value, not the text again)."""
    scanner = AnswerScanner(HERMES, calls_possible=True)
    head = '<tool_call>{"name": "w", "arguments": {"text": "'
    body = "x" * 3000
    for n in range(0, len(body), 7):
        _, calls = scanner.read(head + body[:n])
    assert calls[0].arguments == '{"text": "' + body[:n]
    memo = scanner._memo
    assert len(memo.values) <= 3 and len(memo.whole) == 0
