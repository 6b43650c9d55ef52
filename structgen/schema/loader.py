"""Reading a schema document: JSON text or Python data, its draft, its resources and references.

A :class:`Document` holds the schema data and answers two questions: what is at a JSON pointer,
and where does a ``$ref`` (or a static ``$dynamicRef`` / ``$recursiveRef``) point. It knows the
``$id`` resources, ``$anchor`` / ``$dynamicAnchor`` names and draft-07 ``"$id": "#name"``
anchors of the document. References that leave the document (another URI, the meta-schemas) are
refused; references to nothing are errors.

Pointers are tuples of keys (``str``) and array indexes (``int``); :func:`pointer_text` writes
the JSON pointer string used in error messages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

from ..errors import LimitError, SchemaError
from .json_input import check_json_data
from .jsonvalue import check_depth
from .options import SchemaOptions
from .subschema_keys import SCHEMA_ARRAY_KEYWORDS, SCHEMA_KEYWORDS, SCHEMA_MAP_KEYWORDS

Pointer = tuple  # of str | int

DEFAULT_BASE = "https://structgen.invalid/schema.json"


def pointer_text(ptr: Pointer) -> str:
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in ptr)


def _draft_of(root: Any) -> str:
    uri = root.get("$schema") if isinstance(root, dict) else None
    if not isinstance(uri, str):
        return "2020-12"
    for name in ("draft-04", "draft-06", "draft-07", "2019-09", "2020-12", "draft-03"):
        if name in uri:
            return name
    return "2020-12"


def parse_schema_input(schema: Any, options: SchemaOptions) -> Any:
    """JSON text, bytes or Python data to Python data; checks size and nesting first."""
    if isinstance(schema, (bytes, bytearray)):
        if len(schema) > options.max_schema_bytes:
            raise LimitError(
                f"schema text is {len(schema)} bytes", limit="max_schema_bytes", value=options.max_schema_bytes
            )
        try:
            schema = bytes(schema).decode("utf-8")
        except UnicodeDecodeError as e:
            raise SchemaError(f"schema text is not UTF-8: {e}", keyword=None, pointer="") from None
    if isinstance(schema, str):
        if len(schema.encode("utf-8")) > options.max_schema_bytes:
            raise LimitError("schema text is too large", limit="max_schema_bytes", value=options.max_schema_bytes)
        _check_text_depth(schema, options.max_schema_depth)
        try:
            schema = json.loads(schema, parse_float=Decimal)
        except (ValueError, RecursionError) as e:
            raise SchemaError(f"schema is not JSON: {e}", keyword=None, pointer="") from None
    elif not isinstance(schema, (dict, bool)):
        raise SchemaError(
            f"a schema must be an object or a boolean (or JSON text), not {type(schema).__name__}",
            keyword=None,
            pointer="",
        )
    check_depth(schema, options.max_schema_depth, what="schema")
    if not isinstance(schema, (dict, bool)):
        raise SchemaError("a schema must be a JSON object or a boolean", keyword=None, pointer="")
    check_json_data(schema)
    return schema


def _check_text_depth(text: str, limit: int) -> None:
    """Refuse over-deep JSON text before json.loads recurses into it (brackets outside strings)."""
    depth = 0
    in_string = False
    escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                raise LimitError(f"schema nests deeper than {limit} levels", limit="max_schema_depth", value=limit)
        elif ch in "]}":
            depth -= 1


@dataclass
class Document:
    """One schema document with its resources and anchors indexed."""

    root: Any
    options: SchemaOptions
    draft: str = "2020-12"
    resources: dict[str, Pointer] = field(default_factory=dict)  # absolute URI (no fragment) -> pointer
    anchors: dict[tuple[str, str], Pointer] = field(default_factory=dict)
    dynamic_anchors: dict[str, list[Pointer]] = field(default_factory=dict)
    recursive_anchors: list[Pointer] = field(default_factory=list)
    base_at: dict[Pointer, str] = field(default_factory=dict)  # schema pointer -> base URI
    resource_at: dict[Pointer, Pointer] = field(default_factory=dict)  # schema pointer -> its resource root
    schema_count: int = 0

    @classmethod
    def load(cls, schema: Any, options: SchemaOptions) -> Document:
        doc = cls(parse_schema_input(schema, options), options)
        doc.draft = _draft_of(doc.root)
        doc._index()
        return doc

    # -- indexing -----------------------------------------------------------------------------

    def _id_keyword(self) -> str:
        return "id" if self.draft in ("draft-04", "draft-03") else "$id"

    def _index(self) -> None:
        id_kw = self._id_keyword()
        stack: list[tuple[Any, Pointer, str, Pointer]] = [(self.root, (), DEFAULT_BASE, ())]
        self.resources[DEFAULT_BASE] = ()
        count = 0
        while stack:
            node, ptr, base, resource = stack.pop()
            count += 1
            if count > self.options.max_schema_nodes:
                raise LimitError(
                    f"schema has more than {self.options.max_schema_nodes} subschemas",
                    limit="max_schema_nodes",
                    value=self.options.max_schema_nodes,
                )
            if not isinstance(node, dict):
                self.base_at[ptr] = base
                self.resource_at[ptr] = resource
                continue
            ident = node.get(id_kw)
            if isinstance(ident, str) and ident:
                target, frag = urldefrag(_join(base, ident))
                if target:
                    if not frag:
                        base = target
                        resource = ptr
                        self.resources.setdefault(base, ptr)
                    else:  # draft-07 style "#name" id
                        self.anchors.setdefault((target, frag), ptr)
                elif frag:
                    self.anchors.setdefault((base, frag), ptr)
            self.base_at[ptr] = base
            self.resource_at[ptr] = resource
            anchor = node.get("$anchor")
            if isinstance(anchor, str):
                self.anchors.setdefault((base, anchor), ptr)
            dyn = node.get("$dynamicAnchor")
            if isinstance(dyn, str):
                self.anchors.setdefault((base, dyn), ptr)
                self.dynamic_anchors.setdefault(dyn, []).append(ptr)
            if node.get("$recursiveAnchor") is True:
                self.recursive_anchors.append(ptr)
            for kw in SCHEMA_KEYWORDS:
                sub = node.get(kw)
                if isinstance(sub, (dict, bool)):
                    stack.append((sub, ptr + (kw,), base, resource))
            for kw in SCHEMA_ARRAY_KEYWORDS:
                sub = node.get(kw)
                if isinstance(sub, list):
                    for i, item in enumerate(sub):
                        if isinstance(item, (dict, bool)):
                            stack.append((item, ptr + (kw, i), base, resource))
            for kw in SCHEMA_MAP_KEYWORDS:
                sub = node.get(kw)
                if isinstance(sub, dict):
                    for name, item in sub.items():
                        if isinstance(item, (dict, bool)):
                            stack.append((item, ptr + (kw, name), base, resource))
        self.schema_count = count

    # -- access -------------------------------------------------------------------------------

    def at(self, ptr: Pointer) -> Any:
        node = self.root
        for tok in ptr:
            if isinstance(node, dict) and isinstance(tok, str) and tok in node:
                node = node[tok]
            elif isinstance(node, list) and isinstance(tok, int) and 0 <= tok < len(node):
                node = node[tok]
            else:
                raise KeyError(ptr)
        return node

    def _walk_pointer(self, start: Pointer, fragment: str, keyword: str, where: Pointer) -> Pointer:
        node = self.at(start)
        ptr = list(start)
        if fragment == "":
            return start
        if not fragment.startswith("/"):
            raise SchemaError(f"malformed JSON pointer {fragment!r}", keyword=keyword, pointer=pointer_text(where))
        for raw in fragment[1:].split("/"):
            tok = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and tok in node:
                node = node[tok]
                ptr.append(tok)
            elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
                node = node[int(tok)]
                ptr.append(int(tok))
            else:
                raise SchemaError(
                    f"reference #{fragment} points to nothing", keyword=keyword, pointer=pointer_text(where)
                )
        return tuple(ptr)

    def resolve(self, ref: str, where: Pointer, keyword: str = "$ref") -> Pointer:
        """The pointer a reference written at ``where`` points to."""
        base = self.base_at.get(where, DEFAULT_BASE)
        uri, fragment = urldefrag(_join(base, ref))
        fragment = unquote(fragment) if not fragment.startswith("/") else fragment
        if uri not in self.resources:
            raise SchemaError(
                f"reference {ref!r} leaves the document ({uri}); remote references are not supported",
                keyword=keyword,
                pointer=pointer_text(where),
            )
        resource = self.resources[uri]
        if fragment == "" or fragment.startswith("/"):
            target = self._walk_pointer(resource, fragment, keyword, where)
        else:
            key = (uri, fragment)
            if key not in self.anchors:
                raise SchemaError(
                    f"reference {ref!r}: no anchor {fragment!r}", keyword=keyword, pointer=pointer_text(where)
                )
            target = self.anchors[key]
        if not isinstance(self.at(target), (dict, bool)):
            raise SchemaError(
                f"reference {ref!r} does not point to a schema", keyword=keyword, pointer=pointer_text(where)
            )
        return target


def _join(base: str, ref: str) -> str:
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    if ":" in ref.split("/", 1)[0]:  # absolute URI
        return ref
    return urljoin(base, ref)
