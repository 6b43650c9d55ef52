"""The grammar form: immutable expression nodes that every input of structgen becomes.

A grammar is a set of named rules whose bodies are trees of these nodes. The nodes work on
**bytes**: a :class:`Literal` is a byte string, a :class:`CharClass` matches the UTF-8 encoding of
one Unicode scalar value in a set, a :class:`ByteClass` matches one raw byte. Above them sit the
usual sequence, choice and counted repetition, references to rules, and three operators that only
GLRM needs and that are restricted to *regular* operands (no rule that can reach itself):

* :class:`Lexeme` - a greedy terminal, GLRM's lexing model. It matches a string ``w`` of its body's
  language only where the next byte cannot extend ``w`` within that language (or at the end of
  input). ``Lexeme(/a+/) "a"`` therefore never matches anything.
* :class:`Difference` and :class:`Intersection` of two regular languages (GLRM ``-`` and ``&``).

:class:`Token` is a token-level atom: one whole model token, picked by id (llama.cpp's ``<[12]>``
and ``!<[12]>``) or by a name that a vocabulary or a binding resolves later (GBNF ``<|im_end|>``,
GLRM ``extern token END``).

Nodes hash in O(1) (the hash is computed once, bottom-up, at construction), compare structurally,
and print as GBNF-like text. Use the smart constructors :func:`seq`, :func:`alt`, :func:`repeat`
and friends to build normalised trees: they flatten nested sequences and choices, so that
deeply nested input does not become deeply nested trees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

from .. import caches

MAX_CODEPOINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)

Ranges = tuple[tuple[int, int], ...]


def normalize_ranges(ranges: Sequence[tuple[int, int]], upper: int) -> Ranges:
    """Sort and merge inclusive ``(lo, hi)`` ranges; refuse inverted or out-of-domain ones."""
    out: list[list[int]] = []
    for lo, hi in sorted((int(a), int(b)) for a, b in ranges):
        if lo > hi or lo < 0 or hi > upper:
            raise ValueError(f"invalid range {lo:#x}-{hi:#x} (domain 0-{upper:#x})")
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((a, b) for a, b in out)


def complement_ranges(ranges: Ranges, upper: int) -> Ranges:
    """The inclusive ranges of ``0..upper`` not covered by normalised ``ranges``."""
    out: list[tuple[int, int]] = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= upper:
        out.append((nxt, upper))
    return tuple(out)


def subtract_ranges(ranges: Ranges, remove: Ranges) -> Ranges:
    """Normalised ``ranges`` minus normalised ``remove``."""
    out: list[tuple[int, int]] = []
    for lo, hi in ranges:
        cur = lo
        for rlo, rhi in remove:
            if rhi < cur or rlo > hi:
                continue
            if rlo > cur:
                out.append((cur, rlo - 1))
            cur = max(cur, rhi + 1)
            if cur > hi:
                break
        if cur <= hi:
            out.append((cur, hi))
    return tuple(out)


class Node:
    """Base of all grammar expression nodes."""

    __slots__ = ()

    def children(self) -> tuple[Node, ...]:
        return ()

    def __str__(self) -> str:
        return format_node(self)


#: how a frozen node's written-out __init__ sets its fields (as the dataclass's would)
_set = object.__setattr__


def _cached_hash(obj: object, *parts: object) -> None:
    object.__setattr__(obj, "_hash", hash((type(obj).__name__,) + parts))


@dataclass(frozen=True, eq=True, repr=False)
class Literal(Node):
    """An exact byte string (possibly empty, which matches the empty string)."""

    data: bytes
    _hash: int = field(init=False, compare=False, default=0)

    def __init__(self, data: bytes) -> None:
        # written out, as Seq's: nearly half of a translated grammar's nodes are literals
        if not isinstance(data, bytes):
            raise TypeError("Literal.data must be bytes")
        _set(self, "data", data)
        _set(self, "_hash", hash(("Literal", data)))  # _cached_hash's value, without the call

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Literal({self.data!r})"


@dataclass(frozen=True, eq=True, repr=False)
class CharClass(Node):
    """One Unicode scalar value, UTF-8 encoded, in (or, if ``negated``, not in) ``ranges``.

    ``ranges`` are inclusive code point ranges, normalised (sorted, merged) at construction.
    Surrogate code points (U+D800-U+DFFF) are never matched: they have no UTF-8 encoding.
    ``CharClass((), negated=True)`` is "any character" (GBNF ``.``).
    """

    ranges: Ranges
    negated: bool = False
    _hash: int = field(init=False, compare=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ranges", normalize_ranges(self.ranges, MAX_CODEPOINT))
        _cached_hash(self, self.ranges, self.negated)

    def __hash__(self) -> int:
        return self._hash

    def codepoints(self) -> Ranges:
        """The matched code points as normalised positive ranges, surrogates removed."""
        pos = complement_ranges(self.ranges, MAX_CODEPOINT) if self.negated else self.ranges
        return subtract_ranges(pos, (SURROGATES,))

    def __repr__(self) -> str:
        return f"CharClass({self.ranges!r}, negated={self.negated})"


@dataclass(frozen=True, eq=True, repr=False)
class ByteClass(Node):
    """One raw byte in (or, if ``negated``, not in) ``ranges`` (inclusive, over 0-255)."""

    ranges: Ranges
    negated: bool = False
    _hash: int = field(init=False, compare=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ranges", normalize_ranges(self.ranges, 0xFF))
        _cached_hash(self, self.ranges, self.negated)

    def __hash__(self) -> int:
        return self._hash

    def byte_ranges(self) -> Ranges:
        """The matched bytes as normalised positive ranges."""
        return complement_ranges(self.ranges, 0xFF) if self.negated else self.ranges

    def __repr__(self) -> str:
        return f"ByteClass({self.ranges!r}, negated={self.negated})"


@dataclass(frozen=True, eq=True, repr=False)
class Ref(Node):
    """A reference to the rule ``name``."""

    name: str
    _hash: int = field(init=False, compare=False, default=0)

    def __init__(self, name: str) -> None:
        _set(self, "name", name)  # written out, as Seq's
        _set(self, "_hash", hash(("Ref", name)))  # _cached_hash's value, without the call

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Ref({self.name!r})"


def _set_items(node: Node, tag: str, items: Iterable[Node]) -> None:
    """Set a sequence's or choice's ``items`` and its hash, the value ``_cached_hash`` gives,
    from the parts' cached hashes (every node kind has one)."""
    items = items if type(items) is tuple else tuple(items)
    _set(node, "items", items)  # frozen (not through __dict__: that would give each node a dict)
    try:
        _set(node, "_hash", hash((tag, *[i._hash for i in items])))
    except AttributeError:  # a part that is not a node: hashed as it hashes
        _set(node, "_hash", hash((tag, *map(hash, items))))


@dataclass(frozen=True, eq=True, repr=False)
class Seq(Node):
    """Concatenation; ``Seq(())`` matches the empty string."""

    items: tuple[Node, ...]
    _hash: int = field(init=False, compare=False, default=0)

    def __init__(self, items: Iterable[Node]) -> None:
        # written out (the dataclass keeps it): the most built node kinds of a translation,
        # and the generated __init__ with its __post_init__ cost a third of a node's making
        _set_items(self, "Seq", items)

    def __hash__(self) -> int:
        return self._hash

    def children(self) -> tuple[Node, ...]:
        return self.items

    def __repr__(self) -> str:
        return f"Seq({list(self.items)!r})"


@dataclass(frozen=True, eq=True, repr=False)
class Alt(Node):
    """Choice between alternatives, in order (order matters for printing, not for meaning).

    ``Alt(())`` matches nothing.
    """

    items: tuple[Node, ...]
    _hash: int = field(init=False, compare=False, default=0)

    def __init__(self, items: Iterable[Node]) -> None:
        # written out (the dataclass keeps it): the most built node kinds of a translation,
        # and the generated __init__ with its __post_init__ cost a third of a node's making
        _set_items(self, "Alt", items)

    def __hash__(self) -> int:
        return self._hash

    def children(self) -> tuple[Node, ...]:
        return self.items

    def __repr__(self) -> str:
        return f"Alt({list(self.items)!r})"


@dataclass(frozen=True, eq=True, repr=False)
class Repeat(Node):
    """``item`` repeated between ``min`` and ``max`` times (``max=None``: unbounded).

    Counts are kept symbolic: ``Repeat(x, 0, 1_000_000)`` is one node, never a million copies.
    """

    item: Node
    min: int
    max: int | None
    _hash: int = field(init=False, compare=False, default=0)

    def __post_init__(self) -> None:
        if self.min < 0 or (self.max is not None and self.max < self.min):
            raise ValueError(f"invalid repetition {{{self.min},{self.max}}}")
        _cached_hash(self, hash(self.item), self.min, self.max)

    def __hash__(self) -> int:
        return self._hash

    def children(self) -> tuple[Node, ...]:
        return (self.item,)

    def __repr__(self) -> str:
        return f"Repeat({self.item!r}, {self.min}, {self.max})"


@dataclass(frozen=True, eq=True, repr=False)
class Token(Node):
    """One whole model token, matched by id rather than by its bytes.

    ``ids`` are the token ids this atom accepts (``negated``: any single token *except* these).
    ``name`` marks a token known only by name until bound: GBNF ``<|im_end|>`` (resolved against
    a vocabulary) or GLRM ``extern token END`` (resolved by :meth:`Grammar.bind`). A bound atom
    has ``ids`` and may keep ``name`` for printing.
    """

    ids: tuple[int, ...] = ()
    name: str | None = None
    negated: bool = False
    _hash: int = field(init=False, compare=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", tuple(sorted(set(int(i) for i in self.ids))))
        if any(i < 0 for i in self.ids):
            raise ValueError("token ids must be non-negative")
        _cached_hash(self, self.ids, self.name, self.negated)

    def __hash__(self) -> int:
        return self._hash

    @property
    def bound(self) -> bool:
        return bool(self.ids) or (self.name is None)

    def __repr__(self) -> str:
        return f"Token(ids={self.ids!r}, name={self.name!r}, negated={self.negated})"


@dataclass(frozen=True, eq=True, repr=False)
class Lexeme(Node):
    """A greedy terminal (GLRM semantics); ``item`` must be regular.

    It matches ``w`` in the language of ``item`` only where the byte that follows cannot extend
    ``w`` to a longer prefix of some string of that language; the end of input always ends it.
    """

    item: Node
    _hash: int = field(init=False, compare=False, default=0)

    def __post_init__(self) -> None:
        _cached_hash(self, hash(self.item))

    def __hash__(self) -> int:
        return self._hash

    def children(self) -> tuple[Node, ...]:
        return (self.item,)

    def __repr__(self) -> str:
        return f"Lexeme({self.item!r})"


@dataclass(frozen=True, eq=True, repr=False)
class Difference(Node):
    """Strings of ``left`` that are not strings of ``right``; both must be regular."""

    left: Node
    right: Node
    _hash: int = field(init=False, compare=False, default=0)

    def __post_init__(self) -> None:
        _cached_hash(self, hash(self.left), hash(self.right))

    def __hash__(self) -> int:
        return self._hash

    def children(self) -> tuple[Node, ...]:
        return (self.left, self.right)

    def __repr__(self) -> str:
        return f"Difference({self.left!r}, {self.right!r})"


@dataclass(frozen=True, eq=True, repr=False)
class Intersection(Node):
    """Strings in both ``left`` and ``right``; both must be regular."""

    left: Node
    right: Node
    _hash: int = field(init=False, compare=False, default=0)

    def __post_init__(self) -> None:
        _cached_hash(self, hash(self.left), hash(self.right))

    def __hash__(self) -> int:
        return self._hash

    def children(self) -> tuple[Node, ...]:
        return (self.left, self.right)

    def __repr__(self) -> str:
        return f"Intersection({self.left!r}, {self.right!r})"


# ---------------------------------------------------------------------------------------------
# Smart constructors

EMPTY = Seq(())
NOTHING = Alt(())
ANY_CHAR = CharClass((), negated=True)
ANY_BYTE = ByteClass(((0, 255),))


def lit(text: str | bytes) -> Literal:
    """A literal from text (UTF-8 encoded) or bytes."""
    return Literal(text.encode("utf-8") if isinstance(text, str) else bytes(text))


def char(*ranges: tuple[int, int] | str, negated: bool = False) -> CharClass:
    """A character class from ``(lo, hi)`` code point pairs or single characters."""
    rs = [(ord(r), ord(r)) if isinstance(r, str) else r for r in ranges]
    return CharClass(tuple(rs), negated)


def seq(*items: Node) -> Node:
    """Concatenation, flattening nested sequences and dropping empty parts."""
    # one pass: runs of adjacent literals ("a" "b" means "ab") are joined as they end, each once
    # (linear); every literal of the result is a new object (the inliner's size limit counts
    # distinct objects). Parts of a nested sequence are taken as they are (only their literals
    # join their neighbours'); an empty literal is dropped only at the top.
    merged: list[Node] = []
    run: list[bytes] = []
    for it in items:
        cls = it.__class__
        if cls is Literal:
            if it.data:  # type: ignore[attr-defined]
                run.append(it.data)  # type: ignore[attr-defined]
        elif cls is Seq:
            for sub in it.items:  # type: ignore[attr-defined]
                if sub.__class__ is Literal:
                    run.append(sub.data)  # type: ignore[attr-defined]
                else:
                    if run:
                        merged.append(Literal(b"".join(run)))
                        run = []
                    merged.append(sub)
        elif cls is Alt and not it.items:  # type: ignore[attr-defined]
            return NOTHING  # ``it == NOTHING`` without the dataclass __eq__ calls
        else:
            if run:
                merged.append(Literal(b"".join(run)))
                run = []
            merged.append(it)
    if run:
        merged.append(Literal(b"".join(run)))
    return merged[0] if len(merged) == 1 else Seq(tuple(merged))


def alt(*items: Node) -> Node:
    """Choice, flattening nested choices and dropping exact duplicates (first one kept)."""
    out: list[Node] = []
    seen: set[Node] = set()
    for it in items:
        for sub in it.items if isinstance(it, Alt) else (it,):
            if sub not in seen:
                seen.add(sub)
                out.append(sub)
    return out[0] if len(out) == 1 else Alt(tuple(out))


def repeat(item: Node, min: int, max: int | None) -> Node:
    """``item{min,max}`` with the trivial cases folded."""
    if max == 0 or item == EMPTY:
        return EMPTY
    if min == 1 and max == 1:
        return item
    return Repeat(item, min, max)


def opt(item: Node) -> Node:
    return repeat(item, 0, 1)


def star(item: Node) -> Node:
    return repeat(item, 0, None)


def plus(item: Node) -> Node:
    return repeat(item, 1, None)


# ---------------------------------------------------------------------------------------------
# Traversal and printing (iterative: trees may be deep)


def iter_nodes(root: Node) -> Iterator[Node]:
    """Every node of the tree under ``root``, root first, without recursion."""
    stack = [root]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children()))


# Large subtrees without references or token atoms (format grammars: 6,000 nodes for date-time)
# are the same objects in every grammar that uses them. Marked once, their facts are remembered
# and the walks that only look for references, token atoms or operators, or that need a fact
# below, step over them. Keyed by identity; the entry holds the node, so the identity is not
# reused.
@dataclass(frozen=True)
class ClosedFacts:
    """What walks ask of a closed subtree, found in the one walk that marks it."""

    depth: int  #: nesting depth (a leaf has depth 1)
    nullable: bool  #: matches the empty string (a greedy lexeme: as its body)
    #: bytes in its shortest sentence, None if it has none; only for a subtree without lexemes
    #: and set operations (``plain``), None otherwise
    shortest: int | None
    lexeme: bool  #: a greedy lexeme below
    setop: bool  #: a difference or an intersection below

    @property
    def plain(self) -> bool:
        return not (self.lexeme or self.setop)


_CLOSED: dict[int, tuple[Node, ClosedFacts]] = {}
MAX_CLOSED = 1024


def mark_closed(root: Node, *, known_closed: bool = False) -> Node:
    """Remember ``root`` as closed (no :class:`Ref` or :class:`Token` inside) and its facts, if
    it is; return it. Its direct children are marked too: :func:`seq` and :func:`alt` splice a
    sequence or choice into the one around it, so those are the objects later grammars hold.
    Marking is an optimisation: results of every function here are the same. ``known_closed``:
    the caller built ``root`` from characters only, so the search for references is skipped."""
    if id(root) in _CLOSED or isinstance(root, (Ref, Token)):
        return root
    if not known_closed and any(isinstance(n, (Ref, Token)) for n in iter_distinct(root)):
        return root
    facts: dict[int, _Facts] = {}
    _closed_facts(root, facts)
    for n in (root, *root.children()):
        if n.children() and id(n) not in _CLOSED:
            _remember_closed(n, ClosedFacts(*facts[id(n)]))
    return root


def _remember_closed(node: Node, facts: ClosedFacts) -> None:
    """Keep ``node``'s facts, forgetting the oldest entry past ``MAX_CLOSED``: the newest marks
    are those the grammars being built now hold."""
    if len(_CLOSED) >= MAX_CLOSED:
        try:  # the oldest entry; another thread may have removed it first
            del _CLOSED[next(iter(_CLOSED))]
        except (KeyError, RuntimeError, StopIteration):
            pass
    _CLOSED[id(node)] = (node, facts)


def declare_closed(node: Node, facts: ClosedFacts) -> Node:
    """Mark ``node`` closed with ``facts`` its builder knows by construction, without the walk
    (the 24 hours of date-time's leap seconds: 6,000 nodes built on first use in a process).
    The caller guarantees that no Ref or Token is below and that the facts are those
    :func:`mark_closed` would find (tests compare them)."""
    if id(node) not in _CLOSED:
        _remember_closed(node, facts)
    return node


def facts_of(node: Node) -> ClosedFacts:
    """The facts of a closed subtree (no Ref or Token below), walked now or remembered."""
    known = closed_facts(node)
    if known is not None:
        return known
    found: dict[int, _Facts] = {}
    _closed_facts(node, found)
    return ClosedFacts(*found[id(node)])


def closed_facts(node: Node) -> ClosedFacts | None:
    """The facts of ``node`` if it was marked by :func:`mark_closed`, else None."""
    entry = _CLOSED.get(id(node))
    return None if entry is None else entry[1]


def _utf8_length(codepoint: int) -> int:
    return 1 if codepoint < 0x80 else 2 if codepoint < 0x800 else 3 if codepoint < 0x10000 else 4


# (depth, nullable, shortest, lexeme, setop): ClosedFacts' fields, as a tuple while walking
_Facts = tuple[int, bool, "int | None", bool, bool]


def _leaf_facts(n: Node) -> _Facts:
    if isinstance(n, Literal):
        return (1, not n.data, len(n.data), False, False)
    if isinstance(n, CharClass):
        cps = n.codepoints()
        return (1, False, _utf8_length(cps[0][0]) if cps else None, False, False)
    if isinstance(n, ByteClass):
        return (1, False, 1 if n.byte_ranges() else None, False, False)
    if isinstance(n, Seq):  # the empty sequence
        return (1, True, 0, False, False)
    if isinstance(n, Alt):  # the empty choice
        return (1, False, None, False, False)
    raise TypeError(f"{type(n).__name__} is not part of a closed subtree")


def _inner_facts(n: Node, kids: list[_Facts]) -> _Facts:
    # one pass over the children, no generators: this runs for every node of a format grammar
    depth, lexeme, setop = 0, False, False
    for k in kids:
        if k[0] > depth:
            depth = k[0]
        lexeme = lexeme or k[3]
        setop = setop or k[4]
    kind = type(n)
    shortest: int | None = None
    if kind is Seq:
        nullable, shortest = True, 0
        for k in kids:
            nullable = nullable and k[1]
            shortest = None if shortest is None or k[2] is None else shortest + k[2]
    elif kind is Alt:
        nullable = False
        for k in kids:
            nullable = nullable or k[1]
            if k[2] is not None and (shortest is None or k[2] < shortest):
                shortest = k[2]
    elif type(n) is Repeat:  # spelled out so that the type checker knows ``n`` is a Repeat
        k = kids[0]
        nullable = n.min == 0 or n.max == 0 or k[1]
        shortest = 0 if n.min == 0 or n.max == 0 else None if k[2] is None else n.min * k[2]
    elif kind is Lexeme:
        nullable, lexeme = kids[0][1], True
    elif kind is Difference:
        nullable, setop = kids[0][1] and not kids[1][1], True
    elif kind is Intersection:
        nullable, setop = kids[0][1] and kids[1][1], True
    else:  # pragma: no cover - the node kinds with children are the ones above
        raise TypeError(f"unknown node {n!r}")
    return (depth + 1, nullable, None if lexeme or setop else shortest, lexeme, setop)


def _closed_facts(root: Node, done: dict[int, _Facts]) -> None:
    """Fill ``done`` with the facts of every node under ``root`` (closed: no Ref, no Token)."""
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        n, expanded = stack.pop()
        if id(n) in done:
            continue
        known = _CLOSED.get(id(n))
        if known is not None:
            f = known[1]
            done[id(n)] = (f.depth, f.nullable, f.shortest, f.lexeme, f.setop)
            continue
        kids = n.children()
        if not kids:
            done[id(n)] = _leaf_facts(n)
        elif not expanded:
            stack.append((n, True))
            stack.extend((c, False) for c in kids if id(c) not in done)
        else:
            done[id(n)] = _inner_facts(n, [done[id(c)] for c in kids])


def is_closed(node: Node) -> bool:
    """Whether ``node`` was marked by :func:`mark_closed` (so it holds no Ref and no Token)."""
    return id(node) in _CLOSED


def iter_distinct(root: Node, *, skip_closed: bool = False) -> Iterator[Node]:
    """Every distinct node object under ``root`` once, root first, without recursion.

    Trees share subtrees (format grammars heavily): this visits the DAG, not the expanded tree.
    With ``skip_closed``, a subtree marked by :func:`mark_closed` is yielded (its root) but not
    entered.
    """
    seen: set[int] = set()
    stack = [root]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        if not (skip_closed and id(n) in _CLOSED):
            stack.extend(reversed(n.children()))


def refs(root: Node) -> set[str]:
    """Names of all rules referenced under ``root``."""
    return {n.name for n in iter_distinct(root, skip_closed=True) if isinstance(n, Ref)}


def depth(root: Node) -> int:
    """Nesting depth of the tree (a leaf has depth 1), computed without recursion; a shared
    subtree is measured once."""
    done: dict[int, int] = {}
    _depths(root, done)
    return done[id(root)]


def _depths(root: Node, done: dict[int, int]) -> None:
    """Fill ``done`` with the depth of every node under ``root`` (by identity)."""
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        n, expanded = stack.pop()
        if id(n) in done:
            continue
        closed = _CLOSED.get(id(n))
        if closed is not None:
            done[id(n)] = closed[1].depth
            continue
        kids = n.children()
        if kids and not expanded:
            stack.append((n, True))
            stack.extend((c, False) for c in kids if id(c) not in done)
            continue
        done[id(n)] = 1 + max((done[id(c)] for c in kids), default=0)


def _fmt_cp(cp: int) -> str:
    if cp in (0x5C, 0x5D, 0x5E, 0x2D, 0x22):
        return "\\" + chr(cp)
    if 0x20 <= cp < 0x7F:
        return chr(cp)
    if cp <= 0xFF:
        return f"\\x{cp:02X}"
    if cp <= 0xFFFF:
        return f"\\u{cp:04X}"
    return f"\\U{cp:08X}"


def _fmt_ranges(ranges: Ranges, fmt: object = _fmt_cp) -> str:
    f = fmt  # type: ignore[assignment]
    return "".join(f(lo) if lo == hi else f"{f(lo)}-{f(hi)}" for lo, hi in ranges)  # type: ignore[operator]


def format_node(root: Node) -> str:
    """GBNF-like text for any node, for reading and debugging (never raises).

    Constructs GBNF lacks print in an obvious extended notation: ``lexeme(...)``, ``(a - b)``,
    ``(a & b)``, ``bytes[...]``. The GBNF and GLRM writers are in their own modules.
    """
    # iterative post-order: each node's text is built from its children's texts
    out: dict[int, str] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        n, done = stack.pop()
        if not done and n.children():
            stack.append((n, True))
            stack.extend((c, False) for c in n.children())
            continue
        kids = [out[id(c)] for c in n.children()]
        if isinstance(n, Literal):
            s = '"' + "".join(_fmt_byte_in_literal(b) for b in n.data) + '"'
        elif isinstance(n, CharClass):
            s = "." if (n.negated and not n.ranges) else f"[{'^' if n.negated else ''}{_fmt_ranges(n.ranges)}]"
        elif isinstance(n, ByteClass):
            s = f"bytes[{'^' if n.negated else ''}{_fmt_ranges(n.ranges, lambda b: f'{b:02X}')}]"
        elif isinstance(n, Ref):
            s = n.name
        elif isinstance(n, Token):
            body = ",".join(str(i) for i in n.ids) if n.ids else (n.name or "?")
            s = f"{'!' if n.negated else ''}<[{body}]>"
        elif isinstance(n, Seq):
            s = "(" + " ".join(kids) + ")" if kids else '""'
        elif isinstance(n, Alt):
            s = "(" + " | ".join(kids) + ")" if kids else "(/* nothing */)"
        elif isinstance(n, Repeat):
            hi = "" if n.max is None else str(n.max)
            s = f"{kids[0]}{{{n.min},{hi}}}"
        elif isinstance(n, Lexeme):
            s = f"lexeme({kids[0]})"
        elif isinstance(n, Difference):
            s = f"({kids[0]} - {kids[1]})"
        elif isinstance(n, Intersection):
            s = f"({kids[0]} & {kids[1]})"
        else:  # pragma: no cover - all node kinds are listed above
            s = repr(n)
        out[id(n)] = s
    return out[id(root)]


def _fmt_byte_in_literal(b: int) -> str:
    if b == 0x22:
        return '\\"'
    if b == 0x5C:
        return "\\\\"
    if 0x20 <= b < 0x7F:
        return chr(b)
    return f"\\x{b:02X}"


caches.register_dict(
    "grammar.ir.closed",
    _CLOSED,
    estimate="deep_bytes of the dict (the marked subtrees: held by the grammars that built them too)",
)
