"""Directed-graph helpers shared by the grammar and schema layers (no grammar knowledge here)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

N = TypeVar("N", bound=Hashable)


def nodes_on_cycles(graph: Mapping[N, Sequence[N]]) -> set[N]:
    """The nodes that can reach themselves: members of a strongly connected component with more
    than one node, or with a self-loop. Tarjan's algorithm, iterative so that deep graphs cannot
    exhaust Python's recursion limit. Successors missing from ``graph`` are ignored."""
    index: dict[N, int] = {}
    low: dict[N, int] = {}
    on_stack: set[N] = set()
    stack: list[N] = []
    result: set[N] = set()
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[N, int]] = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack.add(v)
            succ = graph[v]
            descended = False
            while i < len(succ):
                w = succ[i]
                i += 1
                if w not in graph:
                    continue
                if w not in index:
                    work.append((v, i))
                    work.append((w, 0))
                    descended = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if descended:
                continue
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1 or v in succ:
                    result.update(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return result
