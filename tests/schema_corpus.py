"""Helpers for the schema corpus tests: key reordering, serialisations, time limits, the ratchet.

Not a test module. The ratchet (``tests/ratchet.json``) holds per-corpus counts that may only
improve: ``compiled`` and ``passing`` may not drop, ``valid_rejected`` and ``invalid_accepted``
may not rise. Improvements are printed; the file is updated by hand.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import signal
from typing import Any, Iterator

import jsonschema

RATCHET = pathlib.Path(__file__).resolve().parent / "ratchet.json"
HIGHER_IS_BETTER = ("compiled", "passing")
LOWER_IS_BETTER = ("valid_rejected", "invalid_accepted", "errors")


class TimeLimit(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise TimeLimit in this (main) thread after ``seconds`` of this process's CPU time (CPU,
    not wall-clock time: the machine running the tests may be shared)."""

    def handler(signum: int, frame: Any) -> None:
        raise TimeLimit()

    old = signal.signal(signal.SIGPROF, handler)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)


def serialisations(value: Any) -> list[str]:
    """Compact JSON and ``json.dumps`` default spacing."""
    compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    spaced = json.dumps(value, ensure_ascii=False)
    return [compact] if compact == spaced else [compact, spaced]


def check_ratchet(name: str, counts: dict[str, int]) -> list[str]:
    """Compare ``counts`` with the ratchet entry ``name``; return failure messages, print gains."""
    data = json.loads(RATCHET.read_text()) if RATCHET.exists() else {}
    old = data.get(name)
    if old is None:
        print(f"ratchet {name}: no entry yet; measured {json.dumps(counts)}")
        return []
    failures = []
    for key in HIGHER_IS_BETTER:
        if key in old and key in counts:
            if counts[key] < old[key]:
                failures.append(f"{name}.{key} dropped from {old[key]} to {counts[key]}")
            elif counts[key] > old[key]:
                print(f"ratchet {name}.{key} improved: {old[key]} -> {counts[key]} (update tests/ratchet.json)")
    for key in LOWER_IS_BETTER:
        if key in old and key in counts:
            if counts[key] > old[key]:
                failures.append(f"{name}.{key} rose from {old[key]} to {counts[key]}")
            elif counts[key] < old[key]:
                print(f"ratchet {name}.{key} improved: {old[key]} -> {counts[key]} (update tests/ratchet.json)")
    return failures


# ---------------------------------------------------------------------------------------------
# Key order: put an instance's keys in the order the grammar writes them (schema order)


class Orderer:
    """Reorders object keys: keys the schema lists (following $ref, allOf, the matching
    anyOf/oneOf branch, if/then/else), in its order, then the others as given."""

    def __init__(self, root: Any) -> None:
        from structgen.schema.loader import Document
        from structgen.schema.options import SchemaOptions

        self.root = root
        self.doc = Document.load(root, SchemaOptions())
        cls = jsonschema.validators.validator_for(root, default=jsonschema.Draft202012Validator)
        self.validator = cls(root)

    def _valid(self, ptr: tuple, instance: Any) -> bool:
        try:
            sub = self.doc.at(ptr)
            return self.validator.evolve(schema=sub).is_valid(instance)
        except Exception:  # noqa: BLE001 - a helper: when in doubt, keep the branch
            return False

    def _visit(self, ptr: tuple, instance: Any, out: list[tuple], depth: int = 0) -> None:
        """Collect applicable schema pointers in the order the translator merges them."""
        if depth > 50:
            return
        node = self.doc.at(ptr)
        if not isinstance(node, dict):
            return
        ref_alone = self.doc.draft in ("draft-03", "draft-04", "draft-06", "draft-07")
        if not (ref_alone and isinstance(node.get("$ref"), str)):  # there, siblings of $ref are ignored
            out.append(ptr)
        if isinstance(node.get("$ref"), str):
            try:
                self._visit(self.doc.resolve(node["$ref"], ptr), instance, out, depth + 1)
            except Exception:  # noqa: BLE001
                pass
            if ref_alone:
                return
        for i, _ in enumerate(node.get("allOf", []) if isinstance(node.get("allOf"), list) else []):
            self._visit(ptr + ("allOf", i), instance, out, depth + 1)
        for kw in ("anyOf", "oneOf"):
            branches = node.get(kw)
            if isinstance(branches, list):
                for i, _ in enumerate(branches):
                    if self._valid(ptr + (kw, i), instance):
                        self._visit(ptr + (kw, i), instance, out, depth + 1)
                        break
        if "if" in node and self.doc.draft not in ("draft-03", "draft-04", "draft-06"):
            if self._valid(ptr + ("if",), instance):
                self._visit(ptr + ("if",), instance, out, depth + 1)
                if "then" in node:
                    self._visit(ptr + ("then",), instance, out, depth + 1)
            elif "else" in node:
                self._visit(ptr + ("else",), instance, out, depth + 1)
        deps = node.get("dependentSchemas")
        if isinstance(deps, dict) and isinstance(instance, dict):
            for k in deps:
                if k in instance:
                    self._visit(ptr + ("dependentSchemas", k), instance, out, depth + 1)

    def _listed_names(self, ptr: tuple) -> list[str]:
        """The names a finite ``propertyNames`` (``enum``/``const``, through ``$ref``s) allows,
        sorted: the translator writes more than a few such keys in that order."""
        parent = self.doc.at(ptr)
        if not isinstance(parent, dict) or "propertyNames" not in parent:
            return []
        at = ptr + ("propertyNames",)
        node = parent["propertyNames"]
        for _ in range(8):
            if not isinstance(node, dict):
                return []
            if "enum" in node or "const" in node or not isinstance(node.get("$ref"), str):
                break
            try:
                at = self.doc.resolve(node["$ref"], at)
                node = self.doc.at(at)
            except Exception:  # noqa: BLE001 - a helper: when in doubt, add nothing
                return []
        if not isinstance(node, dict):
            return []
        values = node["enum"] if isinstance(node.get("enum"), list) else [node.get("const")]
        return sorted({v for v in values if isinstance(v, str)})

    def reorder(self, instance: Any, ptrs: list[tuple] | None = None, depth: int = 0) -> Any:
        if ptrs is None:
            ptrs = [()]
        if depth > 100:
            return instance
        applicable: list[tuple] = []
        for p in ptrs:
            self._visit(p, instance, applicable)
        if isinstance(instance, list):
            out = []
            for i, item in enumerate(instance):
                child = []
                for p in applicable:
                    node = self.doc.at(p)
                    if isinstance(node.get("prefixItems"), list) and i < len(node["prefixItems"]):
                        child.append(p + ("prefixItems", i))
                    elif isinstance(node.get("items"), list):
                        if i < len(node["items"]):
                            child.append(p + ("items", i))
                        elif "additionalItems" in node:
                            child.append(p + ("additionalItems",))
                    elif "items" in node:
                        child.append(p + ("items",))
                out.append(self.reorder(item, child, depth + 1))
            return out
        if not isinstance(instance, dict):
            return instance
        order: list[str] = []
        for p in applicable:
            node = self.doc.at(p)
            const = node.get("const")
            if isinstance(const, dict):
                order.extend(const)
            enum = node.get("enum")
            if isinstance(enum, list):
                for v in enum:
                    if isinstance(v, dict) and jsonschema.Draft202012Validator({"const": v}).is_valid(instance):
                        order.extend(v)
                        break
            if isinstance(node.get("properties"), dict):
                order.extend(node["properties"])
        for p in applicable:
            req = self.doc.at(p).get("required")
            if isinstance(req, list):
                order.extend(k for k in req if isinstance(k, str))
        for p in applicable:
            order.extend(self._listed_names(p))
        seen: dict[str, None] = {}
        for k in order:
            if k in instance:
                seen.setdefault(k, None)
        for k in instance:
            seen.setdefault(k, None)
        result = {}
        for k in seen:
            child = []
            for p in applicable:
                node = self.doc.at(p)
                props = node.get("properties")
                if isinstance(props, dict) and k in props:
                    child.append(p + ("properties", k))
                    continue
                pats = node.get("patternProperties")
                matched = False
                if isinstance(pats, dict):
                    for pat in pats:
                        try:
                            import regex

                            if regex.search(pat, k):
                                child.append(p + ("patternProperties", pat))
                                matched = True
                        except Exception:  # noqa: BLE001
                            pass
                if not matched and "additionalProperties" in node:
                    child.append(p + ("additionalProperties",))
            result[k] = self.reorder(instance[k], child, depth + 1)
        return result
