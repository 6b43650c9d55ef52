"""llama.cpp's build-time left-recursion check, reproduced so that GBNF verdicts match llama.cpp's.

llama.cpp compiles every group and every quantifier into generated rules, then refuses a grammar
when a depth-first walk over "leftmost" rule references comes back to a rule still in progress.
A reference counts as leftmost when every element before it in its alternative is a reference
to a rule that is *locally* nullable: one with an alternative that has no elements at all. That
test is syntactic (a rule that can only derive the empty string through another rule is not
nullable to it), so the verdicts differ from a true left-recursion analysis both ways:
``( [x]* )*`` is accepted although the starred group can match nothing, and ``x?*`` is refused.

:class:`RuleGraph` records the generated rules as the GBNF reader meets them, with element lists
built from shared pieces (``cat``) so that chains of quantifiers cost constant work each, and
answers with a rule on a cycle, in time linear in the size of the text.
"""

from __future__ import annotations

from array import array

# list-vertex kinds
_NIL, _TERM, _ATOM, _CAT = 0, 1, 2, 3


class RuleGraph:
    """Rules as llama.cpp builds them: each a list of alternatives, each a list of elements.

    An element list is a vertex: ``NIL`` (no elements), ``TERM`` (a terminal: a character,
    a class, a token), an atom referring to a rule, or the concatenation of two lists.
    """

    NIL = 0
    TERM = 1

    def __init__(self) -> None:
        self._kind = array("b", [_NIL, _TERM])
        self._a = array("i", [0, 0])
        self._b = array("i", [0, 0])
        self._empty = bytearray([1, 0])
        self._atoms: dict[int, int] = {}
        self._alts: list[list[int] | None] = []
        self._owner: list[str] = []
        self._is_rule: list[bool] = []

    def new_rule(self, owner: str, *, generated: bool) -> int:
        """A new rule; ``owner`` is the user rule it belongs to (itself if not generated)."""
        self._alts.append(None)
        self._owner.append(owner)
        self._is_rule.append(not generated)
        return len(self._alts) - 1

    def set_owner(self, rule: int, owner: str) -> None:
        self._owner[rule] = owner

    def set_alternatives(self, rule: int, lists: list[int]) -> None:
        self._alts[rule] = lists

    def atom(self, rule: int) -> int:
        """The one-element list referring to ``rule``."""
        v = self._atoms.get(rule)
        if v is None:
            v = self._push(_ATOM, rule, 0, False)
            self._atoms[rule] = v
        return v

    def cat(self, first: int, second: int) -> int:
        """The list ``first`` followed by ``second``."""
        if first == _NIL:
            return second
        if second == _NIL:
            return first
        return self._push(_CAT, first, second, bool(self._empty[first] and self._empty[second]))

    def is_empty(self, lst: int) -> bool:
        return bool(self._empty[lst])

    def _push(self, kind: int, a: int, b: int, empty: bool) -> int:
        self._kind.append(kind)
        self._a.append(a)
        self._b.append(b)
        self._empty.append(1 if empty else 0)
        return len(self._kind) - 1

    def referenced_rules(self) -> set[int]:
        """Rules that some element of some rule's alternatives refers to."""
        out: set[int] = set()
        seen = bytearray(len(self._kind))
        stack = [lst for alts in self._alts for lst in alts or ()]
        while stack:
            v = stack.pop()
            if seen[v]:
                continue
            seen[v] = 1
            k = self._kind[v]
            if k == _ATOM:
                out.add(self._a[v])
            elif k == _CAT:
                stack.append(self._a[v])
                stack.append(self._b[v])
        return out

    def find_left_recursion(self) -> str | None:
        """The name of a user rule on a left-recursive cycle as llama.cpp sees it, or ``None``."""
        n_lists = len(self._kind)
        nullable = [any(self._empty[lst] for lst in alts or ()) for alts in self._alts]
        passes = bytearray(n_lists)  # "the walk goes on past this list"
        kind, a, b = self._kind, self._a, self._b
        for v in range(n_lists):  # children are always created before their parents
            k = kind[v]
            if k == _NIL:
                passes[v] = 1
            elif k == _ATOM:
                passes[v] = 1 if nullable[a[v]] else 0
            elif k == _CAT:
                passes[v] = passes[a[v]] & passes[b[v]]

        # one vertex space: lists first, then rules
        def successors(v: int) -> list[int]:
            if v >= n_lists:
                return list(self._alts[v - n_lists] or ())
            k = kind[v]
            if k == _ATOM:
                return [n_lists + a[v]]
            if k == _CAT:
                return [a[v], b[v]] if passes[a[v]] else [a[v]]
            return []

        total = n_lists + len(self._alts)
        color = bytearray(total)  # 0 white, 1 on the path, 2 done
        for root in range(n_lists, total):
            if color[root]:
                continue
            path: list[int] = [root]
            iters: list[list[int]] = [successors(root)]
            color[root] = 1
            while path:
                succ = iters[-1]
                if not succ:
                    color[path.pop()] = 2
                    iters.pop()
                    continue
                w = succ.pop()
                if color[w] == 1:
                    return self._report(path[path.index(w) :], n_lists)
                if color[w] == 0:
                    color[w] = 1
                    path.append(w)
                    iters.append(successors(w))
        return None

    def _report(self, cycle: list[int], n_lists: int) -> str:
        rules = [v - n_lists for v in cycle if v >= n_lists]
        for r in rules:
            if self._is_rule[r]:
                return self._owner[r]
        return self._owner[rules[0]]
