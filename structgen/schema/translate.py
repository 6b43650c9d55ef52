"""The translation pipeline: document, normalisation, emission, clean-up, grammar.

:func:`compile_schema` is the full answer (the grammar plus the books: what was dropped in
lenient mode, what was ignored as annotation or unknown). In ``pretty`` whitespace mode the schema
is translated twice: once to find its recursive parts (where the depth, hence the indentation,
is unknown), then with depth-specific rules everywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..deadline import check_deadline, deadline_scope
from ..errors import LimitError, SchemaError
from ..grammar import Grammar
from ..grammar.emptiness import declare_all_productive
from ..limits import GrammarLimits
from .compiler import Compiler, Dropped, Ignored
from .emit import Emitter
from .loader import Document
from .model import Handle, Loc
from .options import SchemaOptions, make_options
from .trim import trim_rules


@dataclass(frozen=True)
class SchemaCompilation:
    """A translated schema: the grammar, and what lenient mode dropped or was ignored."""

    grammar: Grammar
    options: SchemaOptions
    dropped: tuple[Dropped, ...] = ()
    ignored: tuple[Ignored, ...] = ()
    enforced: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def exact(self) -> bool:
        """True when no keyword was dropped: the grammar accepts exactly the schema's instances
        (up to the documented departures)."""
        return not self.dropped


def _emit(
    doc: Document, opts: SchemaOptions, *, pretty_depths: bool, recursive: frozenset[Handle]
) -> tuple[Compiler, Emitter, str]:
    ctx = Compiler(doc, opts)
    em = Emitter(ctx, pretty_depths=pretty_depths, recursive=recursive)
    start = em.handle_rule(Loc(()), 0).name
    em.run()
    return ctx, em, start


def compile_schema(schema: Any, options: SchemaOptions | None = None, **kwargs: Any) -> SchemaCompilation:
    """Translate a JSON Schema (dict, bool or JSON text) into a grammar, with the books."""
    opts = make_options(options, **kwargs)
    try:
        with deadline_scope(opts.deadline_s, limit="deadline_s"):
            return _compile(schema, opts)
    except RecursionError:  # a safety net: depth is bounded by limits checked before recursing
        raise LimitError(
            "the schema nests too deeply for this Python stack",
            limit="max_applicator_depth",
            value=opts.max_applicator_depth,
        ) from None


def _compile(schema: Any, opts: SchemaOptions) -> SchemaCompilation:
    doc = Document.load(schema, opts)
    recursive: frozenset[Handle] = frozenset()
    pretty = opts.whitespace == "pretty" and opts.whitespace_pattern is None
    if pretty:
        _, em1, start1 = _emit(doc, opts.with_(whitespace="compact"), pretty_depths=False, recursive=frozenset())
        rules1 = {k: v for k, v in em1.rules.items()}
        rec_names = (
            Grammar(rules1, start1, limits=GrammarLimits(max_rules=10**9)).recursive_rules() if rules1 else frozenset()
        )
        recursive = frozenset(em1.name_handle[n] for n in rec_names if n in em1.name_handle)
    ctx, em, start = _emit(doc, opts, pretty_depths=pretty, recursive=recursive)
    check_deadline()
    rules, recursive_rules, scans = trim_rules(em.rules, start)
    check_deadline()
    if not rules:
        kw, ptr = ctx.empty_reason or ("false", "")
        raise SchemaError("the schema accepts no JSON value", keyword=kw, pointer=ptr)
    # the clean-up found the recursive rules and walked most bodies already (tests compare both
    # with the grammar's own)
    limits = GrammarLimits(max_rules=max(opts.max_rules, 1))
    grammar = Grammar(rules, start, limits=limits, recursive=recursive_rules, scans=scans)
    declare_all_productive(grammar)  # trim kept only productive rules
    return SchemaCompilation(
        grammar,
        opts,
        tuple(ctx.dropped),
        tuple(ctx.ignored),
        {p: tuple(k) for p, k in ctx.enforced.items()},
    )


def json_schema_to_grammar(schema: Any, **options: Any) -> Grammar:
    """A grammar whose sentences are the JSON texts valid against ``schema`` (see docs/json-schema.md).

    With ``lenient=True`` refused keywords are dropped instead of failing; the list is kept in
    ``grammar._derived["schema.dropped"]`` - use :func:`compile_schema` to get it directly.
    """
    result = compile_schema(schema, **options)
    result.grammar._derived["schema.dropped"] = result.dropped  # noqa: SLF001
    return result.grammar
