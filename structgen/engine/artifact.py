"""Saving and loading compiled constraints: a versioned container with no pickle.

The blob is an uncompressed zip of numpy arrays (``numpy.savez``; loaded with
``allow_pickle=False``): a JSON header (format version, the vocabulary's fingerprint, the grammar,
the engine's terms, stacks and configurations) and the arrays of everything computed so far (the
transition table and the cached masks). Loading refuses another vocabulary or another format
version, and gives a constraint whose masks are identical to the saved one's - and, where they were
computed before saving, served without recomputation.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConstraintError, VocabError
from ..grammar import ir
from ..grammar.serialize import grammar_from_data, grammar_to_data
from .configs import ConfigSystem
from .limits import EngineLimits
from .machines import Machines, _Lowering
from .terms import ALT_K, BYTES_K, LAZY_K, REPEAT_K, TermStore

if TYPE_CHECKING:
    from ..vocab import Vocab
    from .constraint import Constraint

FORMAT = "structgen-constraint"
VERSION = 1


def save_constraint(c: Constraint) -> bytes:
    store = c._machines.store
    system = c._system
    header: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "vocab_fingerprint": c.vocab.fingerprint,
        "grammar": grammar_to_data(c.grammar),
        "limits": asdict(c.limits),
        "machines": {
            "names": c._machines.names,
            "body": c._machines.body,
            "start": c._machines.start,
            "atoms": [[list(a.ids), a.name, a.negated] for a in c._machines.token_atoms],
            "nullable": c._machines.nullable,
        },
        "terms": [_encode_term(store, t) for t in range(2, len(store))],
        "stacks": [[p, t] for p, t in zip(system.stack_parent, system.stack_top)],
        "configs": [list(cfg) for cfg in system.configs[1:]],
    }
    n = len(system.configs)
    rows = c._table.rows[: min(n, c._table.rows.shape[0])]
    mask_ids = np.asarray(sorted(c._masks), dtype=np.int64)
    masks = np.stack([c._masks[i] for i in mask_ids.tolist()]) if mask_ids.size else np.zeros((0, c._words), np.int32)
    buf = io.BytesIO()
    np.savez(
        buf,
        header=np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8),
        table=rows,
        mask_ids=mask_ids,
        masks=masks,
    )
    return buf.getvalue()


def load_constraint(blob: bytes, vocab: Vocab) -> Constraint:
    from .constraint import Constraint

    try:
        with np.load(io.BytesIO(blob), allow_pickle=False) as data:
            header = json.loads(bytes(data["header"]).decode("utf-8"))
            table = data["table"]
            mask_ids = data["mask_ids"]
            masks = data["masks"]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConstraintError(f"not a saved structgen constraint: {e}") from e
    if header.get("format") != FORMAT:
        raise ConstraintError("not a saved structgen constraint")
    if header.get("version") != VERSION:
        raise ConstraintError(
            f"saved constraint has format version {header.get('version')}, this structgen reads {VERSION}"
        )
    if header["vocab_fingerprint"] != vocab.fingerprint:
        raise VocabError("the saved constraint was compiled for another vocabulary")

    grammar = grammar_from_data(header["grammar"])
    store = TermStore()
    lowering = _Lowering(grammar, store, frozenset())  # expands lazy terms after loading
    for i, entry in enumerate(header["terms"], start=2):
        if _decode_term(store, entry) != i:
            raise ConstraintError("saved constraint is corrupt (term table)")
    m = header["machines"]
    machines = Machines(
        store,
        list(m["names"]),
        list(m["body"]),
        m["start"],
        [ir.Token(tuple(ids), name, neg) for ids, name, neg in m["atoms"]],
        list(m["nullable"]),
        rule_bound=lowering.rule_bound,
    )
    lowering.atoms = list(machines.token_atoms)
    lowering.atom_index = {a: i for i, a in enumerate(machines.token_atoms)}
    limits = EngineLimits(**header["limits"])
    system = ConfigSystem(machines, max_stacks_per_config=limits.max_stacks_per_config, max_configs=limits.max_configs)
    for i, (parent, top) in enumerate(header["stacks"]):
        if system.stack(parent, top) != i:
            raise ConstraintError("saved constraint is corrupt (stack table)")
    for i, cfg in enumerate(header["configs"], start=1):
        if system.config(cfg) != i:
            raise ConstraintError("saved constraint is corrupt (configuration table)")
    c = Constraint(grammar, vocab, machines, system, limits)
    c._table._grow()
    c._table.rows[: table.shape[0]] = table
    for cid, words in zip(mask_ids.tolist(), masks):
        w = np.array(words, dtype=np.int32)
        w.flags.writeable = False
        c._masks[cid] = w
    return c


def _encode_term(store: TermStore, t: int) -> list[Any]:
    k = store.kind[t]
    b = store.b[t]
    if k == LAZY_K:
        return [k, [store.nullable[t], store.flags[t]], b]
    if k == BYTES_K:
        enc: Any = format(b, "x")
    elif k == ALT_K:
        enc = list(b)  # type: ignore[arg-type]
    elif k == REPEAT_K:
        enc = list(b)  # type: ignore[arg-type]
    else:
        enc = b
    return [k, store.a[t], enc]


def _decode_term(store: TermStore, entry: list[Any]) -> int:
    from . import terms as T

    k, a, b = entry
    if k == T.BYTES_K:
        return store.bytes_(int(b, 16))
    if k == T.SYM_K:
        return store.sym(a)
    if k == T.SEQ_K:
        return store.seq(a, b)
    if k == T.ALT_K:
        return store.alt(b)
    if k == T.REPEAT_K:
        flags = T.repeat_flags(store.flags[a], b[0], b[1])
        return store._make((T.REPEAT_K, a, b[0], b[1]), T.REPEAT_K, a, (b[0], b[1]), b[0] == 0, flags)
    if k == T.AND_K:
        return store.and_(a, b)
    if k == T.DIFF_K:
        return store.diff(a, b)
    if k == T.POSS_K:
        return store.poss(a)
    if k == T.LAZY_K:
        nullable, flags = a
        return store.lazy(b, bool(nullable), int(flags))
    raise ConstraintError(f"saved constraint is corrupt (term kind {k})")
