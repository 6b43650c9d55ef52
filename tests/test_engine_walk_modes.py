"""The token walk's paths agree: a level (or a level's children) may be handled in numpy or in
Python depending on how many nodes are live, and a walk from a looping configuration may start
from its loop region (loop_regions.py) or from the root; forcing one path or the other must give
the same masks, end configurations and budget figures, equal to the byte-level matcher's mask."""

from __future__ import annotations

import json

import numpy as np
import pytest
from engine_support import greedy_tokens, json_grammar, load_vocab, person_grammar, reference_mask

from structgen.engine import Constraint
from structgen.engine.tuning import EngineTuning

DOC = json.dumps({"name": 'Zoë "Z"', "n": [-1.5e3, 0, True], "o": {"k": "a\\b"}}, ensure_ascii=False)
PERSON = '{"name": "Ann", "age": 42, "role": "admin", "tags": ["x", "y z"]}'

#: (live nodes below which a level runs in Python, children below which they are stepped in
#: Python, looping bytes from which a walk uses a loop region, live bytes up to which a Python
#: level finds a node's children by binary search)
MODES = {
    "numpy only": (0, 0, 257, 0),
    "python only": (10**9, 10**9, 257, 0),
    "mixed": (3, 5, 257, 3),
    "binary search": (10**9, 0, 257, 256),
    "regions, numpy": (0, 0, 1, 0),
    "regions, python": (10**9, 10**9, 1, 0),
    "regions, mixed": (3, 5, 1, 3),
    "regions, binary search": (10**9, 0, 1, 256),
}


def _masks(grammar, vocab, text: str, modes: tuple[int, int, int, int]) -> list[tuple]:  # type: ignore[no-untyped-def]
    narrow, children, loop_bytes, sparse = modes
    tuning = EngineTuning(narrow=narrow, narrow_children=children, loop_region_min_bytes=loop_bytes, sparse_live=sparse)
    c = Constraint.compile(grammar, vocab, tuning=tuning)
    st = c.start()
    out = []
    for tok in greedy_tokens(vocab, text.encode()):
        ids, need = c._after(st.config)
        order = np.argsort(ids, kind="stable")
        out.append((st.mask(), ids[order], need[order]))
        assert st.commit_token(tok)
    return out


#: Configurations one byte before a loop (a string of minLength 1, a pattern's ``x+``, a key that is
#: not a listed name): their walks start from the loop's region, minus the bytes that differ.
BEFORE_LOOP_SCHEMA = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "pattern": "^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$"},
        "name": {"type": "string", "minLength": 1},
        "alpha": {"type": "integer"},
    },
}
BEFORE_LOOP_DOC = json.dumps(
    {"email": "zoë.b@ex-ample.org", "name": 'a "q" é', "alpha": 7, "other": "x", "al": [1]}, ensure_ascii=False
)


def _grammar_and_text(name: str):  # type: ignore[no-untyped-def]
    if name == "json":
        return json_grammar(), DOC
    if name == "person":
        return person_grammar(), PERSON
    from structgen.schema import json_schema_to_grammar

    return json_schema_to_grammar(BEFORE_LOOP_SCHEMA), BEFORE_LOOP_DOC


@pytest.mark.parametrize(
    ("grammar_name", "vocab_name"),
    [("json", "llama-spm"), ("person", "llama-spm"), ("before loop", "llama-spm"), ("before loop", "llama-bpe")],
)
def test_walk_paths_agree(grammar_name: str, vocab_name: str) -> None:
    """Llama 3's byte-level tokens split characters anywhere: its string bodies' regions go on
    through whole characters and accept the tokens that end inside one."""
    vocab = load_vocab(vocab_name)
    grammar, text = _grammar_and_text(grammar_name)
    results = {name: _masks(grammar, vocab, text, modes) for name, modes in MODES.items()}
    first = results["numpy only"]
    for name, res in results.items():
        assert len(res) == len(first)
        for step, (a, b) in enumerate(zip(first, res)):
            for x, y in zip(a, b):
                assert np.array_equal(x, y), f"{name} differs from numpy only at token {step}"
    # and the masks are the matcher's
    ids = greedy_tokens(vocab, text.encode())
    for i in range(0, len(ids), 5):
        prefix = b"".join(vocab.token_bytes(t) for t in ids[:i])
        assert np.array_equal(first[i][0], reference_mask(grammar, vocab, prefix))
