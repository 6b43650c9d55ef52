"""Saving and loading compiled constraints: a versioned, sealed container with no pickle.

The blob is a zip of stored (uncompressed) members: ``header.npy`` (a JSON header as bytes: format
version, the vocabulary's fingerprint, the grammar, the engine's terms, stacks and configurations,
and the SHA-256 digest of every other member), the arrays of everything computed so far
(``table.npy``, the transition table; ``mask_ids.npy``, ``masks.npy`` and ``mask_rows.npy``, the
cached masks: each distinct mask once, and per id its row), and ``seal``, the digest of the
header: SHA-256, or HMAC-SHA256 where the caller saved with a key. Every member is covered, and
the header names every member, so a blob whose masks or tables were edited, or that lost a
member, is refused, not served. A blob without ``mask_rows.npy`` (saved before it was written)
has one row per id.

The per-position parts a compile ahead of time made (ahead.py), and the relative walks a
constraint made at first use, are flat members too, so that a loaded compiled constraint assembles
its masks without trie walks as the fresh one does: ``parts.npy`` (per part: its configuration,
a bottom position's or a relative part's, its dense mask or -1, and the ends of its sparse words
and exit groups), ``part_dense.npy`` (each distinct dense mask once), ``part_sparse.npy`` (word
index and word of the sparse masks), ``exits.npy`` (per exit group: trie level and the end of its
nodes), ``exit_nodes.npy``, and the crossings ``crossings.npy`` (ends of each one's key, token
ids and exit groups), ``crossing_keys.npy`` and ``crossing_ids.npy``. The header holds the compile
report and the heads whose split was refused. The part members come all together or not at all:
a version 2 blob saved before they were written loads without them (its parts are computed at
first use, and it has no report).

Loading trusts nothing in the blob before it is checked: the blob is bounded by the caller's
``EngineLimits.max_memory_bytes`` before anything is read; a member must be stored (a compressed
member could inflate without bound), declare exactly the bytes it holds, have the one dtype and
shape its role allows; the seal is checked before the header is parsed; every index in the header
(terms, stacks, configurations, atoms, machines) must point at something that exists; the table's
targets and the masks' ids must be configurations of the blob. The loaded constraint runs under
the limits the caller passes (the header holds none). Each part's configuration must be one stack
at the bottom or over the hole as its kind says, every range's ends must rise to its array's
length, sparse word indices rise inside the mask, exit levels rise inside the trie and each node
is one of its level, crossing keys name a relative configuration and terms, token ids and mask
words are inside the logit width, and what the parts build is charged against
``max_memory_bytes`` before it is built. Every malformed blob raises ConstraintError,
a blob for another vocabulary VocabError, and one past the caller's limits LimitError.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import zipfile
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConstraintError, GrammarError, LimitError, VocabError
from ..grammar import ir
from ..grammar.serialize import grammar_from_data, grammar_to_data
from ..vocab import Vocab
from .ahead import CompileReport
from .configs import ConfigSystem
from .limits import EngineLimits
from .machines import SYMBOL_BASE, Machines, _Lowering, is_call, symbol_index
from .masks import words_for
from .table import UNKNOWN, Exits
from .terms import (
    ALT_K,
    AND_K,
    BYTES_K,
    DIFF_K,
    LAZY_K,
    NOTHING,
    POSS_K,
    REPEAT_K,
    SEQ_K,
    SYM_K,
    TermStore,
    repeat_flags,
)
from .tuning import DEFAULT_ENGINE_TUNING, EngineTuning

if TYPE_CHECKING:
    from .constraint import Constraint, ConstraintParts

FORMAT = "structgen-constraint"
VERSION = 2

HEADER, TABLE, MASK_IDS, MASKS, SEAL = "header.npy", "table.npy", "mask_ids.npy", "masks.npy", "seal"
_ARRAYS = (TABLE, MASK_IDS, MASKS)
_MEMBERS = frozenset((HEADER, SEAL) + _ARRAYS)
#: per cached mask, its row of ``masks.npy``, which then holds each distinct mask once: optional
#: (a blob saved before it was written has one row per mask id, in order)
MASK_ROWS = "mask_rows.npy"
#: the per-position parts (see the module docstring): optional, all or none (a version 2 blob
#: saved before they were written has none)
PARTS, PART_DENSE, PART_SPARSE = "parts.npy", "part_dense.npy", "part_sparse.npy"
EXITS, EXIT_NODES = "exits.npy", "exit_nodes.npy"
CROSSINGS, CROSSING_KEYS, CROSSING_IDS = "crossings.npy", "crossing_keys.npy", "crossing_ids.npy"
_PART_ARRAYS = (PARTS, PART_DENSE, PART_SPARSE, EXITS, EXIT_NODES, CROSSINGS, CROSSING_KEYS, CROSSING_IDS)
_MEMBERS_WITH_PARTS = _MEMBERS | frozenset(_PART_ARRAYS)
#: the sets of members a version 2 blob may have
_MEMBER_SETS = tuple(
    base | extra for base in (_MEMBERS, _MEMBERS_WITH_PARTS) for extra in (frozenset(), frozenset({MASK_ROWS}))
)
#: columns of the 2-D part members: a part's (configuration, kind, dense mask or -1, end of its
#: sparse words, end of its exit groups); an exit group's (level, end of its nodes); a
#: crossing's (end of its key, end of its token ids, end of its exit groups)
_COLUMNS = {PARTS: 5, PART_SPARSE: 2, EXITS: 2, CROSSINGS: 3}
#: a part's kind: the mask of a bottom position, or a relative part (mask and exits)
BOTTOM, RELATIVE = 0, 1
#: bytes a restored entry (a part, an exit group, a crossing) costs beside its arrays: a dict
#: slot, a tuple and an array header, charged against ``max_memory_bytes`` before it is built
PART_ENTRY_BYTES = 256
#: the members of a version 1 blob (no digests), named in the error that refuses one
_VERSION_1_MEMBERS = frozenset(("header.npy", "table.npy", "mask_ids.npy", "masks.npy"))
#: dtype and dimensions of each array member (little-endian on every machine)
_LAYOUT = {
    HEADER: ("|u1", 1),
    TABLE: ("<i4", 2),
    MASK_IDS: ("<i8", 1),
    MASKS: ("<i4", 2),
    MASK_ROWS: ("<i8", 1),
    PARTS: ("<i8", 2),
    PART_DENSE: ("<i4", 2),
    PART_SPARSE: ("<i4", 2),
    EXITS: ("<i8", 2),
    EXIT_NODES: ("<i4", 1),
    CROSSINGS: ("<i8", 2),
    CROSSING_KEYS: ("<i8", 1),
    CROSSING_IDS: ("<i4", 1),
}
#: the header's JSON is at most this deep (it is 6 deep; a deeper one is hostile, and would
#: reach Python's recursion limit inside the JSON reader)
MAX_HEADER_DEPTH = 32
#: Python objects parsed from JSON take up to about this many times the text's bytes (lists of
#: small ints: 8-byte pointers and list headers for 2-4 characters of text); a header is charged
#: that much against ``max_memory_bytes`` before it is parsed
HEADER_EXPANSION = 16
#: hex digits of a byte-set term (256 bits)
_MAX_BYTES_HEX = 64
_HEX_DIGITS = frozenset("0123456789abcdef")

#: errors of the standard library and numpy that a malformed blob can still raise inside checked
#: code (a wrong type where a list was checked for its length, say): all mean "corrupt"
_CORRUPT = (
    KeyError,
    IndexError,
    TypeError,
    ValueError,
    AttributeError,
    OverflowError,
    EOFError,
    OSError,
    RecursionError,
    UnicodeError,
    NotImplementedError,
    RuntimeError,
    zipfile.BadZipFile,
    GrammarError,
)


def save_constraint(c: Constraint, *, key: bytes | None = None) -> bytes:
    """The blob of ``c`` (see the module docstring); sealed with HMAC-SHA256 under ``key``."""
    key = _check_key(key)
    # one consistent snapshot (``Constraint.snapshot``); the header is encoded after it, up to
    # the sizes it read: a save holds up other threads' masks for the copies only
    with c._lock:  # the bodies a dynamic constraint has not lowered yet, as its computations do
        c.machines.lower_bodies()
    snap = c.snapshot()
    rows, cached = snap.rows, snap.masks
    header = _header_data(c, snap.n_terms, snap.n_stacks, snap.n_configs)
    mask_ids = np.asarray([cid for cid, _ in cached], dtype="<i8")
    # each distinct mask once (configurations share masks: mask_store.py), in order of first use
    row_of: dict[bytes, int] = {}
    distinct: list[np.ndarray] = []
    mask_rows = np.zeros(len(cached), dtype="<i8")
    for i, (_, w) in enumerate(cached):
        mask_rows[i] = row_of.setdefault(w.tobytes(), len(distinct))
        if mask_rows[i] == len(distinct):
            distinct.append(w)
    masks = np.stack(distinct).astype("<i4") if distinct else np.zeros((0, c.mask_words_per_row), "<i4")
    members = {TABLE: _npy(rows), MASK_IDS: _npy(mask_ids), MASKS: _npy(masks), MASK_ROWS: _npy(mask_rows)}
    members.update(_part_members(snap.parts, c.mask_words_per_row))
    header["spine_refused"] = snap.parts.spine_refused
    if c.report is not None:
        header["report"] = c.report.to_data()
    header["digests"] = {name: hashlib.sha256(data).hexdigest() for name, data in members.items()}
    header["seal"] = "sha256" if key is None else "hmac-sha256"
    header_npy = _npy(np.frombuffer(json.dumps(header).encode("utf-8"), dtype="|u1"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(HEADER, header_npy)
        for name, data in members.items():
            zf.writestr(name, data)
        zf.writestr(SEAL, _seal(header_npy, key))
    return buf.getvalue()


def _header_data(c: Constraint, n_terms: int, n_stacks: int, n_configs: int) -> dict[str, Any]:
    store, system, machines = c.machines.store, c.system, c.machines
    return {
        "format": FORMAT,
        "version": VERSION,
        "vocab_fingerprint": c.vocab.fingerprint,
        # which class ``load`` restores: what was compiled ahead of time, or a dynamic constraint
        "kind": "dynamic" if c.report is None else "compiled",
        "grammar": grammar_to_data(c.grammar),
        "machines": {
            "names": list(machines.names),
            "body": list(machines.body),
            "start": machines.start,
            "atoms": [[list(a.ids), a.name, a.negated] for a in machines.token_atoms],
            "nullable": list(machines.nullable),
        },
        "terms": [_encode_term(store, t) for t in range(2, n_terms)],
        "stacks": [[system.stack_parent[i], system.stack_top[i]] for i in range(n_stacks)],
        "configs": [list(system.configs[i]) for i in range(1, n_configs)],
    }


def _part_members(parts: ConstraintParts, words: int) -> dict[str, bytes]:
    """The part members: flat arrays, each ragged list as the ends of its entries' ranges."""
    entries = list(parts.positions)
    kept = {cid for cid, _, _ in entries}
    for rel, (w, exits) in parts.relative:
        if rel not in kept:
            nz = np.flatnonzero(w)
            # the rule PositionMasks.add keeps a mask sparse by
            entries.append((rel, (nz, w[nz]) if nz.size * 8 <= w.nbytes // 4 else w, exits))
    entries.sort(key=lambda e: e[0])
    rows: list[tuple[int, int, int, int, int]] = []
    dense: list[np.ndarray] = []
    dense_at: dict[bytes, int] = {}
    sparse: list[np.ndarray] = []
    groups: list[tuple[int, int]] = []
    nodes: list[np.ndarray] = []
    ends = {"sparse": 0, "nodes": 0}

    def put_exits(exits: Exits) -> None:
        for level, (at, _) in sorted(exits.items()):
            nodes.append(at)
            ends["nodes"] += at.size
            groups.append((level, ends["nodes"]))

    for cid, mask, exits in entries:
        ref = -1
        if isinstance(mask, tuple):
            sparse.append(
                np.stack([mask[0], mask[1]], axis=1).astype("<i4") if mask[0].size else np.zeros((0, 2), "<i4")
            )
            ends["sparse"] += mask[0].size
        else:
            ref = dense_at.setdefault(mask.tobytes(), len(dense))
            if ref == len(dense):
                dense.append(mask)
        if exits is not None:
            put_exits(exits)
        rows.append((cid, BOTTOM if exits is None else RELATIVE, ref, ends["sparse"], len(groups)))
    crossings: list[tuple[int, int, int]] = []
    keys: list[int] = []
    ids: list[np.ndarray] = []
    n_ids = 0
    for key, (found, further) in sorted(parts.crossings, key=lambda entry: entry[0]):
        keys.extend(key)
        ids.append(found)
        n_ids += found.size
        put_exits(further)
        crossings.append((len(keys), n_ids, len(groups)))
    return {
        PARTS: _npy(np.asarray(rows, dtype="<i8").reshape(-1, 5)),
        PART_DENSE: _npy(np.stack(dense).astype("<i4") if dense else np.zeros((0, words), "<i4")),
        PART_SPARSE: _npy(np.concatenate(sparse) if sparse else np.zeros((0, 2), "<i4")),
        EXITS: _npy(np.asarray(groups, dtype="<i8").reshape(-1, 2)),
        EXIT_NODES: _npy(np.concatenate(nodes).astype("<i4") if nodes else np.zeros(0, "<i4")),
        CROSSINGS: _npy(np.asarray(crossings, dtype="<i8").reshape(-1, 3)),
        CROSSING_KEYS: _npy(np.asarray(keys, dtype="<i8")),
        CROSSING_IDS: _npy(np.concatenate(ids).astype("<i4") if ids else np.zeros(0, "<i4")),
    }


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(a), allow_pickle=False)
    return buf.getvalue()


def _check_key(key: object) -> bytes | None:
    if key is None:
        return None
    if not isinstance(key, (bytes, bytearray)) or not key:
        raise ConstraintError("a sealing key must be non-empty bytes")
    return bytes(key)


def _seal(header_npy: bytes, key: bytes | None) -> bytes:
    if key is None:
        return hashlib.sha256(header_npy).digest()
    return hmac.new(key, header_npy, hashlib.sha256).digest()


# -- loading ----------------------------------------------------------------------------------


def load_constraint(
    blob: bytes,
    vocab: Vocab,
    *,
    limits: EngineLimits,
    key: bytes | None = None,
    tuning: EngineTuning = DEFAULT_ENGINE_TUNING,
) -> Constraint:
    """The constraint saved in ``blob``, under the caller's ``limits`` and ``tuning`` (see the
    module docstring; a tuning is not saved: masks are the same under every one)."""
    if not isinstance(limits, EngineLimits):
        raise ConstraintError(f"limits must be an EngineLimits, not {type(limits).__name__}")
    if not isinstance(vocab, Vocab):
        raise ConstraintError(f"load takes a Vocab, not {type(vocab).__name__}")
    key = _check_key(key)
    try:
        return _load(blob, vocab, limits, key, tuning)
    except _CORRUPT as e:
        raise ConstraintError(f"saved constraint is corrupt ({type(e).__name__}: {str(e)[:200]})") from e


def _load(blob: object, vocab: Vocab, limits: EngineLimits, key: bytes | None, tuning: EngineTuning) -> Constraint:
    from .constraint import Constraint, ConstraintParts, DynamicConstraint

    members = _read_members(blob, limits)
    header_npy = members[HEADER]
    if not hmac.compare_digest(_seal(header_npy, key), members[SEAL]):
        raise ConstraintError(
            "saved constraint fails its digest: corrupt, altered"
            + (", or sealed without this key" if key is not None else ", or sealed with a key (pass key=)")
        )
    header_bytes = bytes(_array(HEADER, header_npy))
    if len(header_bytes) * HEADER_EXPANSION > limits.max_memory_bytes:
        raise LimitError(
            f"saved constraint's header of {len(header_bytes)} bytes would take about "
            f"{len(header_bytes) * HEADER_EXPANSION} as Python objects",
            limit="max_memory_bytes",
            value=limits.max_memory_bytes,
        )
    header = _parse_header(header_bytes)
    if header.get("seal") != ("sha256" if key is None else "hmac-sha256"):
        raise ConstraintError("saved constraint's seal does not match the key given")
    if header.get("vocab_fingerprint") != vocab.fingerprint:
        raise VocabError("the saved constraint was compiled for another vocabulary")
    digests = _field(header, "digests", dict)
    with_parts = PARTS in members
    # the sealed header names every member saved: one taken away (the rows of shared masks, say,
    # which would give the masks to other ids) is refused, not read as an older blob
    if set(digests) != set(members) - {HEADER, SEAL}:
        raise ConstraintError("saved constraint's members are not the ones its header names: corrupt or altered")
    for name in _ARRAYS + (_PART_ARRAYS if with_parts else ()) + ((MASK_ROWS,) if MASK_ROWS in members else ()):
        if not hmac.compare_digest(hashlib.sha256(members[name]).hexdigest(), str(digests.get(name))):
            raise ConstraintError(f"saved constraint's {name} fails its digest: corrupt or altered")
    table = _array(TABLE, members[TABLE])
    mask_ids = _array(MASK_IDS, members[MASK_IDS])
    masks = _array(MASKS, members[MASKS])
    if MASK_ROWS in members:
        mask_rows = _array(MASK_ROWS, members[MASK_ROWS])
    else:
        mask_rows = np.arange(masks.shape[0], dtype=np.int64)

    grammar = grammar_from_data(_field(header, "grammar", dict))
    m = _field(header, "machines", dict)
    names = _list_of(_field(m, "names", list), str, "machine names")
    body = _list_of(_field(m, "body", list), int, "machine bodies")
    nullable = _list_of(_field(m, "nullable", list), bool, "machine nullability")
    start = _field(m, "start", int)
    if not (len(names) == len(body) == len(nullable)) or not 0 <= start < len(body):
        raise ConstraintError("saved constraint is corrupt (machine table)")
    atoms = [_decode_atom(entry) for entry in _field(m, "atoms", list)]

    store = TermStore()
    lowering = _Lowering(grammar, store, frozenset())  # expands lazy terms after loading
    for i, entry in enumerate(_field(header, "terms", list), start=2):
        if _decode_term(store, entry, grammar, len(body), len(atoms)) != i:
            raise ConstraintError("saved constraint is corrupt (term table)")
    n_terms = len(store)
    if any(not 0 <= t < n_terms for t in body):
        raise ConstraintError("saved constraint is corrupt (machine bodies)")
    machines = Machines(store, names, body, start, atoms, nullable, rule_bound=lowering.rule_bound)
    lowering.atoms = list(machines.token_atoms)
    lowering.atom_index = {a: i for i, a in enumerate(machines.token_atoms)}
    system = ConfigSystem(machines, max_stacks_per_config=limits.max_stacks_per_config, max_configs=limits.max_configs)
    # the system made the start configuration (and its one stack): the saved tables must begin
    # with the same ones, and the rest are checked entry by entry against what exists before them
    for i, entry in enumerate(_field(header, "stacks", list)):
        parent, top = _pair(entry, "stack")
        if not (-3 <= parent < i and 0 <= top < n_terms) or system.stack(parent, top) != i:
            raise ConstraintError("saved constraint is corrupt (stack table)")
    n_stacks = len(system.stack_top)
    for i, entry in enumerate(_field(header, "configs", list), start=1):
        stacks = _list_of(entry, int, "configuration")
        if (
            any(not 0 <= s < n_stacks for s in stacks)
            or any(x >= y for x, y in zip(stacks, stacks[1:]))
            or system.config(stacks) != i
        ):
            raise ConstraintError("saved constraint is corrupt (configuration table)")
    n_configs = len(system.configs)

    words = words_for(vocab.logit_width)
    if table.shape[1] != 256 or table.shape[0] > n_configs:
        raise ConstraintError(
            f"saved constraint is corrupt (table of shape {table.shape} for {n_configs} configurations)"
        )
    if table.size and (int(table.min()) < UNKNOWN or int(table.max()) >= n_configs or table[0].any()):
        raise ConstraintError("saved constraint is corrupt (table targets outside its configurations)")
    if masks.ndim != 2 or masks.shape[1] != words or mask_rows.size != mask_ids.size:
        raise ConstraintError(f"saved constraint is corrupt (masks of shape {masks.shape}, {mask_ids.size} x {words})")
    # every row a mask of some id, each id's row one that exists: no row is there to bloat the blob
    if mask_rows.size and (int(mask_rows.min()) < 0 or int(mask_rows.max()) >= masks.shape[0]):
        raise ConstraintError("saved constraint is corrupt (mask rows)")
    if np.unique(mask_rows).size != masks.shape[0]:
        raise ConstraintError("saved constraint is corrupt (masks no id refers to)")
    if mask_ids.size and (
        int(mask_ids.min()) < 0 or int(mask_ids.max()) >= n_configs or np.unique(mask_ids).size != mask_ids.size
    ):
        raise ConstraintError("saved constraint is corrupt (mask ids)")
    if mask_ids.size and vocab.logit_width % 32 and (masks[:, -1].view(np.uint32) >> (vocab.logit_width % 32)).any():
        raise ConstraintError("saved constraint is corrupt (masks allow ids past the logit width)")

    kind = header.get("kind", "dynamic")
    if kind not in ("dynamic", "compiled"):
        raise ConstraintError(f"saved constraint is corrupt (kind {str(kind)[:40]!r})")
    cls = DynamicConstraint if kind == "dynamic" else Constraint
    report = None
    if "report" in header:
        if kind != "compiled":
            raise ConstraintError("saved constraint is corrupt (a compile report for a dynamic constraint)")
        report = CompileReport.from_data(header["report"])
    refused = _list_of(header.get("spine_refused", []), int, "refused splits")
    if any(not 0 <= t < n_terms for t in refused):
        raise ConstraintError("saved constraint is corrupt (refused splits)")
    c = cls(grammar, vocab, machines, system, limits, tuning)
    # the caller's cache bound holds from the start: the saved masks past it are not kept
    c.restore(table, ((cid, masks[row]) for cid, row in zip(mask_ids.tolist(), mask_rows.tolist())))
    if with_parts:
        positions, crossings = _read_parts(members, c, n_terms, limits)
        c.restore_parts(ConstraintParts(positions, [], crossings, refused), report)
    elif refused or report is not None:
        c.restore_parts(ConstraintParts([], [], [], refused), report)
    return c


def _starts(ends: np.ndarray, base: int, total: int, what: str) -> np.ndarray:
    """The starts of ragged ranges given their ``ends``: they must rise from ``base`` to
    ``total`` (none may end before it starts)."""
    starts = np.concatenate([np.asarray([base], dtype=np.int64), ends[:-1]])
    if (ends < starts).any() or (int(ends[-1]) if ends.size else base) != total:
        raise ConstraintError(f"saved constraint is corrupt ({what} offsets)")
    return starts


def _rising_within(values: np.ndarray, starts: np.ndarray, what: str) -> None:
    """``values`` must rise strictly inside each range that begins at one of ``starts``."""
    if values.size < 2:
        return
    first = np.zeros(values.size, dtype=bool)
    first[starts[starts < values.size]] = True
    if ((np.diff(values) <= 0) & ~first[1:]).any():
        raise ConstraintError(f"saved constraint is corrupt ({what} out of order)")


def _read_parts(
    members: dict[str, bytes], c: Constraint, n_terms: int, limits: EngineLimits
) -> tuple[list[tuple[int, tuple[np.ndarray, np.ndarray] | np.ndarray, Exits | None]], list[Any]]:
    """The saved per-position parts of ``c``, every id checked against its configurations,
    terms, trie and logit width, and their size against ``limits`` before they are built."""
    arrays = {name: _array(name, members[name]) for name in _PART_ARRAYS}
    for name, columns in _COLUMNS.items():
        if arrays[name].shape[1] != columns:
            raise ConstraintError(f"saved constraint is corrupt ({name} of shape {arrays[name].shape})")
    system, trie, width = c.system, c._trie, c.vocab.logit_width
    words = words_for(width)
    parts, dense, sparse, groups = arrays[PARTS], arrays[PART_DENSE], arrays[PART_SPARSE], arrays[EXITS]
    nodes, crossings, keys, ids = arrays[EXIT_NODES], arrays[CROSSINGS], arrays[CROSSING_KEYS], arrays[CROSSING_IDS]
    n_configs = len(system.configs)
    cids, kinds, refs = parts[:, 0], parts[:, 1], parts[:, 2]
    if parts.size and (
        int(cids.min()) < 0
        or int(cids.max()) >= n_configs
        or np.unique(cids).size != cids.size
        or not np.isin(kinds, (BOTTOM, RELATIVE)).all()
        or int(refs.min()) < -1
        or int(refs.max()) >= dense.shape[0]
    ):
        raise ConstraintError("saved constraint is corrupt (part ids)")
    for cid, kind in zip(cids.tolist(), kinds.tolist()):
        if not _is_position(system, cid, kind == RELATIVE):
            raise ConstraintError("saved constraint is corrupt (a part of no position)")
    # masks: dense ones of the logit width; sparse ones as rising word indices inside it
    if dense.shape[1] != words:
        raise ConstraintError(f"saved constraint is corrupt (dense masks of {dense.shape[1]} words, not {words})")
    sparse_starts = _starts(parts[:, 3], 0, sparse.shape[0], "sparse mask")
    if ((refs >= 0) & (parts[:, 3] > sparse_starts)).any():
        raise ConstraintError("saved constraint is corrupt (a part both dense and sparse)")
    index, values = sparse[:, 0], sparse[:, 1]
    if index.size and (int(index.min()) < 0 or int(index.max()) >= words):
        raise ConstraintError("saved constraint is corrupt (sparse mask words)")
    _rising_within(index, sparse_starts, "sparse mask words")
    if width % 32 and (
        (dense[:, -1].view(np.uint32) >> (width % 32)).any()
        or (values[index == words - 1].view(np.uint32) >> (width % 32)).any()
    ):
        raise ConstraintError("saved constraint is corrupt (part masks allow ids past the logit width)")
    # exits: rising levels of the trie per part or crossing, nodes of their level
    group_starts = _starts(parts[:, 4], 0, int(parts[-1, 4]) if parts.size else 0, "exit group")
    if ((kinds == BOTTOM) & (parts[:, 4] > group_starts)).any():
        raise ConstraintError("saved constraint is corrupt (exits of a bottom position)")
    split = int(parts[-1, 4]) if parts.size else 0
    crossing_groups = _starts(crossings[:, 2], split, groups.shape[0], "crossing exit group")
    levels = groups[:, 0]
    if levels.size and (int(levels.min()) < 0 or int(levels.max()) >= trie.depth):
        raise ConstraintError("saved constraint is corrupt (exit levels)")
    _rising_within(levels, np.concatenate([group_starts, crossing_groups]), "exit levels")
    node_starts = _starts(groups[:, 1], 0, nodes.size, "exit node")
    level_sizes = np.asarray([b.size for b in trie.level_byte], dtype=np.int64)
    node_levels = np.repeat(levels, groups[:, 1] - node_starts)
    if nodes.size and (int(nodes.min()) < 0 or (nodes >= level_sizes[node_levels]).any()):
        raise ConstraintError("saved constraint is corrupt (exit nodes)")
    # crossings: keys of a relative configuration and the tops crossed, token ids in the width
    key_starts = _starts(crossings[:, 0], 0, keys.size, "crossing key")
    id_starts = _starts(crossings[:, 1], 0, ids.size, "crossing id")
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= width):
        raise ConstraintError("saved constraint is corrupt (crossing token ids)")
    key_list = [tuple(keys[a:b].tolist()) for a, b in zip(key_starts.tolist(), crossings[:, 0].tolist())]
    if len(set(key_list)) != len(key_list) or any(
        len(k) < 2
        or not 0 <= k[0] < n_configs
        or not _is_position(system, k[0], True)
        or any(not 0 <= t < n_terms for t in k[1:])
        for k in key_list
    ):
        raise ConstraintError("saved constraint is corrupt (crossing keys)")
    # what is built: the sparse words as they are, one copy of each dense mask, nodes as int64
    # with their bytes, the crossings' ids, and an entry for each
    need = (
        sparse.nbytes
        + dense.nbytes
        + nodes.size * 9
        + ids.nbytes
        + (parts.shape[0] + groups.shape[0] + crossings.shape[0]) * PART_ENTRY_BYTES
    )
    if c.memory_bytes() + need > limits.max_memory_bytes:
        raise LimitError(
            f"saved constraint's parts would take about {need} bytes beside {c.memory_bytes()}",
            limit="max_memory_bytes",
            value=limits.max_memory_bytes,
        )
    all_nodes = nodes.astype(np.int64)
    exits_of = []
    for level, a, b in zip(levels.tolist(), node_starts.tolist(), groups[:, 1].tolist()):
        at = all_nodes[a:b]
        exits_of.append((level, (at, trie.level_byte[level][at])))

    def exits(a: int, b: int) -> Exits:
        return dict(exits_of[a:b])

    masks = np.array(dense)  # one copy, shared by the parts of each mask
    masks.flags.writeable = False
    index, values = index.astype(np.int32), values.astype(np.int32)
    positions: list[tuple[int, tuple[np.ndarray, np.ndarray] | np.ndarray, Exits | None]] = []
    for cid, kind, ref, a, b, ga, gb in zip(
        cids.tolist(),
        kinds.tolist(),
        refs.tolist(),
        sparse_starts.tolist(),
        parts[:, 3].tolist(),
        group_starts.tolist(),
        parts[:, 4].tolist(),
    ):
        mask = masks[ref] if ref >= 0 else (index[a:b], values[a:b])
        positions.append((cid, mask, exits(ga, gb) if kind == RELATIVE else None))
    found = np.array(ids)
    restored = [
        (key, (found[a:b], exits(ga, gb)))
        for key, a, b, ga, gb in zip(
            key_list, id_starts.tolist(), crossings[:, 1].tolist(), crossing_groups.tolist(), crossings[:, 2].tolist()
        )
    ]
    return positions, restored


def _is_position(system: ConfigSystem, cid: int, relative: bool) -> bool:
    """Whether configuration ``cid`` is one stack at the bottom (a top alone, or a top over a
    bottom caller: ``ahead._caller_mask``), or (``relative``) one stack over the hole
    (``ConfigSystem.relative``): the configurations parts are kept for."""
    stacks = system.configs[cid]
    if len(stacks) != 1:
        return False
    parent = system.stack_parent[stacks[0]]
    if not relative:
        return parent == -1 or (parent >= 0 and system.stack_parent[parent] == -1)
    return parent >= 0 and system.stack_parent[parent] == -2 and system.stack_top[parent] == NOTHING


def _read_members(blob: object, limits: EngineLimits) -> dict[str, bytes]:
    """The members of the zip ``blob``, each checked for what it declares before it is read."""
    if isinstance(blob, (bytearray, memoryview)):
        blob = bytes(blob)
    if not isinstance(blob, bytes):
        raise ConstraintError(f"a saved constraint is bytes, not {type(blob).__name__}")
    if not blob:
        raise ConstraintError("a saved constraint cannot be empty")
    if len(blob) > limits.max_memory_bytes:
        raise LimitError(
            f"saved constraint of {len(blob)} bytes", limit="max_memory_bytes", value=limits.max_memory_bytes
        )
    try:
        zf = zipfile.ZipFile(io.BytesIO(blob))
    except zipfile.BadZipFile as e:
        raise ConstraintError(f"not a saved structgen constraint ({e})") from e
    infos = zf.infolist()
    names = [info.filename for info in infos]
    if len(names) != len(set(names)) or set(names) not in _MEMBER_SETS:
        if set(names) == _VERSION_1_MEMBERS:
            raise ConstraintError(
                f"saved constraint has format version 1, this structgen reads {VERSION}: save it again"
            )
        raise ConstraintError(f"not a saved structgen constraint (members {sorted(names)[:8]})")
    out: dict[str, bytes] = {}
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED:
            raise ConstraintError(f"member {info.filename} is compressed; structgen stores every member as it is")
        if info.flag_bits & 0x1:
            raise ConstraintError(f"member {info.filename} is encrypted")
        if info.file_size != info.compress_size or info.file_size > len(blob):
            raise ConstraintError(f"member {info.filename} declares {info.file_size} bytes in a blob of {len(blob)}")
        out[info.filename] = zf.read(info)
    return out


def _array(name: str, data: bytes) -> np.ndarray:
    """The array in the ``.npy`` bytes of member ``name``: its header is read first (bounded by
    numpy), and its dtype, dimensions and size must be what ``name`` holds."""
    fp = io.BytesIO(data)
    version = np.lib.format.read_magic(fp)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fp)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fp)
    else:
        raise ConstraintError(f"member {name} has .npy version {version}")
    want, ndim = _LAYOUT[name]
    if dtype != np.dtype(want) or fortran or len(shape) != ndim or any(d < 0 for d in shape):
        raise ConstraintError(f"member {name} holds {dtype} {shape}, not {want} in {ndim} dimensions")
    count = 1
    for d in shape:
        count *= d
    offset = fp.tell()
    if count * dtype.itemsize != len(data) - offset:
        raise ConstraintError(f"member {name} declares {count * dtype.itemsize} bytes and holds {len(data) - offset}")
    return np.frombuffer(data, dtype=dtype, count=count, offset=offset).reshape(shape)


def _parse_header(data: bytes) -> dict[str, Any]:
    _check_depth(data)
    header = json.loads(data.decode("utf-8"))
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ConstraintError("not a saved structgen constraint")
    if header.get("version") != VERSION:
        raise ConstraintError(
            f"saved constraint has format version {header.get('version')!r}, this structgen reads {VERSION}"
        )
    return header


def _check_depth(data: bytes) -> None:
    """Refuse JSON nested deeper than MAX_HEADER_DEPTH, counted outside strings without parsing."""
    b = np.frombuffer(data, dtype=np.uint8)
    quote, backslash = b == ord('"'), b == ord("\\")
    if backslash.any():
        # a quote is escaped by an odd run of backslashes just before it: drop those quotes
        at = np.arange(b.size)
        last_other = np.maximum.accumulate(np.where(backslash, -1, at))  # last non-backslash <= i
        q = np.flatnonzero(quote[1:]) + 1
        run = q - 1 - last_other[q - 1]
        quote[q[run % 2 == 1]] = False
    inside = (np.cumsum(quote) - quote) % 2 == 1  # after an odd number of quotes: in a string
    opens = ((b == ord("[")) | (b == ord("{"))) & ~inside
    closes = ((b == ord("]")) | (b == ord("}"))) & ~inside
    depth = np.cumsum(opens.astype(np.int64) - closes.astype(np.int64))
    if depth.size and int(depth.max()) > MAX_HEADER_DEPTH:
        raise ConstraintError(f"saved constraint's header is nested more than {MAX_HEADER_DEPTH} deep")


def _field(d: dict[str, Any], name: str, kind: type) -> Any:
    if not isinstance(d, dict) or name not in d:
        raise ConstraintError(f"saved constraint is corrupt (no {name!r})")
    value = d[name]
    if not _is(value, kind):
        raise ConstraintError(f"saved constraint is corrupt ({name!r} is a {type(value).__name__})")
    return value


def _is(value: object, kind: type) -> bool:
    # a JSON true is no count, and a count is no truth value
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _list_of(value: object, kind: type, what: str) -> list[Any]:
    if not isinstance(value, list) or not all(_is(v, kind) for v in value):
        raise ConstraintError(f"saved constraint is corrupt ({what})")
    return value


def _pair(entry: object, what: str) -> tuple[int, int]:
    if not isinstance(entry, list) or len(entry) != 2 or not all(_is(v, int) for v in entry):
        raise ConstraintError(f"saved constraint is corrupt ({what} entry)")
    return entry[0], entry[1]


def _decode_atom(entry: object) -> ir.Token:
    if not (
        isinstance(entry, list)
        and len(entry) == 3
        and isinstance(entry[0], list)
        and all(_is(i, int) and i >= 0 for i in entry[0])
        and (entry[1] is None or isinstance(entry[1], str))
        and isinstance(entry[2], bool)
    ):
        raise ConstraintError("saved constraint is corrupt (token atom)")
    return ir.Token(tuple(entry[0]), entry[1], entry[2])


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


def _decode_term(store: TermStore, entry: object, grammar: Any, n_machines: int, n_atoms: int) -> int:
    """Intern the saved term ``entry``; every term it refers to must exist already (the saved
    order is the store's), and the caller checks it lands at the id it had."""
    if not isinstance(entry, list) or len(entry) != 3 or not _is(entry[0], int):
        raise ConstraintError("saved constraint is corrupt (term entry)")
    k, a, b = entry
    n = len(store)

    def term(x: object) -> int:
        if not _is(x, int) or not 0 <= x < n:  # type: ignore[operator]
            raise ConstraintError("saved constraint is corrupt (term reference)")
        return x  # type: ignore[return-value]

    if k == BYTES_K:
        if not isinstance(b, str) or not 0 < len(b) <= _MAX_BYTES_HEX or not set(b) <= _HEX_DIGITS:
            raise ConstraintError("saved constraint is corrupt (byte set)")
        return store.bytes_(int(b, 16))
    if k == SYM_K:
        if not _is(a, int) or a < SYMBOL_BASE or symbol_index(a) >= (n_machines if is_call(a) else n_atoms):
            raise ConstraintError("saved constraint is corrupt (symbol)")
        return store.sym(a)
    if k == SEQ_K:
        return store.seq(term(a), term(b))
    if k == ALT_K:
        if not isinstance(b, list):
            raise ConstraintError("saved constraint is corrupt (choice)")
        choice = store.saved_choice([term(x) for x in b])
        if choice is None:
            raise ConstraintError("saved constraint is corrupt (choice)")
        return choice
    if k == REPEAT_K:
        if not (isinstance(b, list) and len(b) == 2 and _is(b[0], int) and b[0] >= 0):
            raise ConstraintError("saved constraint is corrupt (repetition)")
        lo, hi = b
        if hi is not None and (not _is(hi, int) or hi < max(lo, 1)):
            raise ConstraintError("saved constraint is corrupt (repetition)")
        x = term(a)
        return store._make((REPEAT_K, x, lo, hi), REPEAT_K, x, (lo, hi), lo == 0, repeat_flags(store.flags[x], lo, hi))
    if k == AND_K:
        return store.and_(term(a), term(b))
    if k == DIFF_K:
        return store.diff(term(a), term(b))
    if k == POSS_K:
        return store.poss(term(a))
    if k == LAZY_K:
        if not (isinstance(a, list) and len(a) == 2 and isinstance(a[0], bool) and _is(a[1], int)):
            raise ConstraintError("saved constraint is corrupt (lazy term)")
        if not isinstance(b, str) or b not in grammar.rules:
            raise ConstraintError("saved constraint is corrupt (lazy term names no rule)")
        return store.lazy(b, a[0], a[1])
    raise ConstraintError(f"saved constraint is corrupt (term kind {k})")
