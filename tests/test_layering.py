"""The package's import graph: no cycles in the front end, deferred (function-level) imports included.

Layers import downwards only (schema -> grammar -> vocab -> engine -> output types -> decoding ->
integrations -> generate -> chat -> agent -> cli): an import inside a function that closes a
cycle hides it from Python, not from this test. The implicit import of a parent package is not an
edge; ``from pkg import name`` is an edge to ``pkg.name`` where that is a module, else to ``pkg``.

Below the front end, three old cycles remain: ``Grammar``'s reader classmethods (GBNF, GLRM, JSON
Schema) and the modules they call, ``Vocab``'s loader classmethods, and ``Constraint.save`` /
``load`` with the artifact module. They are listed here as a ratchet: the list may only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

import structgen
from structgen.grammar.graphs import nodes_on_cycles

ROOT = Path(structgen.__file__).resolve().parent


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _runtime_nodes(tree: ast.AST):  # type: ignore[no-untyped-def]
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (never run)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.If)
                and getattr(child.test, "id", getattr(child.test, "attr", "")) == "TYPE_CHECKING"
            ):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def _graph() -> dict[str, list[str]]:
    files = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, list[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _runtime_nodes(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in files else origin for a in node.names]
            else:
                continue
            edges.update(t for t in targets if t in files and t != name)
        graph[name] = sorted(edges)
    return graph


KNOWN_LOWER_CYCLES = frozenset(
    [f"structgen.engine.{m}" for m in ("artifact", "constraint")]
    + ["structgen.grammar", "structgen.schema"]
    + [
        f"structgen.grammar.{m}"
        for m in (
            "bounded_runs",
            "gbnf",
            "gbnf_write",
            "glrm",
            "glrm_lower",
            "glrm_write",
            "grammar",
            "lark",
            "lowering",
        )
    ]
    + [
        f"structgen.schema.{m}"
        for m in (
            "compiler",
            "emit",
            "formats",
            "json_escapes",
            "pydantic_input",
            "report",
            "scalars",
            "strings",
            "translate",
        )
    ]
    + [f"structgen.vocab.{m}" for m in ("from_gguf", "from_hf", "from_llama_cpp", "from_tiktoken", "vocab")]
)
LOWER_LAYERS = ("structgen.engine", "structgen.grammar", "structgen.schema", "structgen.vocab")


def test_the_front_end_has_no_import_cycle():
    graph = _graph()
    assert len(graph) > 50
    cyclic = set(nodes_on_cycles(graph))
    front = sorted(m for m in cyclic if not m.startswith(LOWER_LAYERS))
    assert front == [], f"front-end modules on import cycles: {front}"
    assert cyclic <= KNOWN_LOWER_CYCLES, f"new modules on import cycles: {sorted(cyclic - KNOWN_LOWER_CYCLES)}"


def test_the_engine_imports_nothing_above_it():
    graph = _graph()
    above = ("structgen.generate", "structgen.chat", "structgen.integrations", "structgen.tools", "structgen.decoding")
    for name, edges in graph.items():
        if name.startswith(("structgen.engine", "structgen.grammar", "structgen.schema", "structgen.vocab")):
            assert not [e for e in edges if e.startswith(above)], name
