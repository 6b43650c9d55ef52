"""One adapter per engine, so the benchmark drives structgen and its peers the same way.

Every adapter is built from the same :class:`VocabData` (the token bytes of a
:class:`structgen.vocab.Vocab`), compiles a JSON Schema with the engine's defaults, and exposes the
four calls a serving loop makes: start a request, fill the packed int32 mask row (bit ``i`` of
word ``w`` is token ``32 * w + i``), commit a token. Special tokens are never text anywhere:

* structgen: the :class:`~structgen.vocab.Vocab` marks them (control, unused, end-of-generation);
* xgrammar: their bytes are given empty, which xgrammar's ``TokenizerInfo`` treats as special
  (its Hugging Face loader would instead let Llama 3's control tokens appear inside strings);
* llguidance: their printed form is prefixed with the 0xFF marker byte and listed as special;
* glrmask and outlines-core: they are left out of the vocabulary map.

End of generation: every engine is given all of the vocabulary's end ids, except outlines-core,
which takes one (the GGUF's ``eos_token_id``).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

PEERS = ("xgrammar", "llguidance", "glrmask", "outlines")
ENGINES = ("structgen",) + PEERS
#: the stream mode (``bench_masks.py --stream``): structgen in each compile mode, and the peers
#: that compile every schema of ``schemas/`` (outlines-core times out on three)
STREAM_ENGINES = ("structgen-lazy", "structgen-aot", "glrmask", "llguidance", "xgrammar")
SPACINGS = ("compact", "default")


@dataclass
class VocabData:
    """What every engine is built from: the token bytes and ids of one vocabulary."""

    name: str
    path: str
    tokens: list[bytes]  #: b"" for tokens that are never text
    is_text: np.ndarray
    special_texts: dict[int, str]
    eos_ids: list[int]
    primary_eos: int
    logit_width: int
    #: SentencePiece byte-fallback tokens (``<0x22>``): a tokenizer uses them only for bytes no
    #: other token spells, so the greedy fallback prefers any other token with the same bytes
    byte_fallback: np.ndarray | None = None
    _index: dict[bytes, int] | None = field(default=None, repr=False)
    _longest: int = field(default=1, repr=False)

    @property
    def words(self) -> int:
        return (self.logit_width + 31) // 32

    def never_words(self) -> np.ndarray:
        """Packed mask of the ids no engine may ever allow: special tokens other than the end
        ids, empty tokens, and padding past the tokens."""
        never = np.ones(self.words * 32, dtype=bool)
        never[: len(self.tokens)] = ~self.is_text
        never[self.eos_ids] = False
        return np.packbits(never, bitorder="little").view(np.int32)

    def greedy_tokenize(self, data: bytes) -> list[int]:
        """Longest match over the text tokens (the fallback tokenizer)."""
        if self._index is None:
            index: dict[bytes, int] = {}
            fallback = self.byte_fallback if self.byte_fallback is not None else np.zeros(len(self.tokens), dtype=bool)
            for i in (
                np.flatnonzero(self.is_text & ~fallback).tolist() + np.flatnonzero(self.is_text & fallback).tolist()
            ):
                index.setdefault(self.tokens[i], i)
            self._index = index
            self._longest = max(map(len, index)) if index else 1
        index, longest = self._index, self._longest
        out, pos = [], 0
        while pos < len(data):
            for n in range(min(longest, len(data) - pos), 0, -1):
                t = index.get(data[pos : pos + n])
                if t is not None:
                    out.append(t)
                    pos += n
                    break
            else:
                raise ValueError(f"cannot tokenize {data[pos : pos + 8]!r}")
        return out


def vocab_data(name: str, path: str) -> VocabData:
    """Read ``path`` with structgen's GGUF loader and keep what the peers need."""
    from structgen.vocab import Vocab
    from structgen.vocab.gguf_file import read_gguf_metadata

    v = Vocab.from_gguf(path)
    buf = v.buffer.tobytes()
    off = v.offsets.tolist()
    tokens = [buf[off[i] : off[i + 1]] for i in range(v.n_tokens)]
    meta = read_gguf_metadata(path, ["tokenizer.ggml.eos_token_id", "tokenizer.ggml.token_type"])
    eos = list(v.eos_token_ids)
    primary = int(meta.get("tokenizer.ggml.eos_token_id", eos[0] if eos else 0))
    if primary not in eos and eos:
        primary = eos[0]
    types = meta.get("tokenizer.ggml.token_type")
    byte_fallback = None
    if types is not None and len(types) == v.n_tokens:
        byte_fallback = np.asarray(types) == 6  # llama.cpp's LLAMA_TOKEN_TYPE_BYTE
    return VocabData(
        name,
        path,
        tokens,
        np.asarray(v.is_text).copy(),
        dict(v.special_texts),
        eos,
        primary,
        v.logit_width,
        byte_fallback,
    )


def _timed(parts: dict[str, float], key: str, fn: Any, *args: Any, **kw: Any) -> Any:
    t = time.perf_counter_ns()
    r = fn(*args, **kw)
    parts[key] = (time.perf_counter_ns() - t) / 1e9
    return r


class CompileError(Exception):
    """The engine refused the schema (unsupported feature, limit, or error)."""


# -- structgen -----------------------------------------------------------------------------------


def any_json_grammar():  # type: ignore[no-untyped-def]
    """Any JSON value (RFC 8259) in structgen's grammar form: exact for the schema ``{}``."""
    from structgen import Grammar
    from structgen.grammar import ir

    ref, lit = ir.Ref, ir.lit
    ws = ir.star(ir.char(" ", "\t", "\n", "\r"))
    hexd = ir.char((48, 57), (97, 102), (65, 70))
    escape = ir.seq(
        lit("\\"), ir.alt(ir.char('"', "\\", "/", "b", "f", "n", "r", "t"), ir.seq(lit("u"), ir.Repeat(hexd, 4, 4)))
    )
    string = ir.seq(
        lit('"'), ir.star(ir.alt(ir.CharClass(((0, 31), (34, 34), (92, 92)), negated=True), escape)), lit('"')
    )
    digits = ir.plus(ir.char((48, 57)))
    number = ir.seq(
        ir.opt(lit("-")),
        ir.alt(lit("0"), ir.seq(ir.char((49, 57)), ir.star(ir.char((48, 57))))),
        ir.opt(ir.seq(lit("."), digits)),
        ir.opt(ir.seq(ir.char("e", "E"), ir.opt(ir.char("+", "-")), digits)),
    )
    sep = ir.seq(ws, lit(","), ws)
    rules = {
        "root": ir.seq(ws, ref("value"), ws),
        "value": ir.alt(ref("object"), ref("array"), string, number, lit("true"), lit("false"), lit("null")),
        "object": ir.seq(
            lit("{"), ws, ir.opt(ir.seq(ref("member"), ir.star(ir.seq(sep, ref("member"))))), ws, lit("}")
        ),
        "member": ir.seq(string, ws, lit(":"), ws, ref("value")),
        "array": ir.seq(lit("["), ws, ir.opt(ir.seq(ref("value"), ir.star(ir.seq(sep, ref("value"))))), ws, lit("]")),
    }
    return Grammar(rules, "root")


def structgen_has_schema_translator() -> bool:
    """Whether ``Grammar.from_json_schema`` has its translator on this branch."""
    try:
        from structgen.schema import json_schema_to_grammar  # noqa: F401
    except ImportError:
        return False
    return True


def structgen_grammar(schema: Any, source: str):  # type: ignore[no-untyped-def]
    """The grammar structgen runs for ``schema``.

    ``source``: ``"schema"`` (``Grammar.from_json_schema``), ``"standin"`` (the any-JSON grammar
    for every schema: measures the engine on the same token walks, not the schema's language), or
    ``"auto"`` (the translator where it exists; otherwise the any-JSON grammar for ``{}`` only).
    """
    from structgen import Grammar

    if source == "standin":
        return any_json_grammar()
    if source == "auto" and not structgen_has_schema_translator():
        if schema == {} or schema is True:
            return any_json_grammar()
        raise CompileError(
            "skipped: structgen's JSON Schema translator (structgen.schema.json_schema_to_grammar) "
            "is not on this branch yet"
        )
    return Grammar.from_json_schema(schema)


class StructgenEngine:
    name = "structgen"
    spacings = SPACINGS

    def __init__(
        self,
        grammar_source: str = "auto",
        mode: str = "lazy",
        tuning: dict[str, Any] | None = None,
        limits: dict[str, Any] | None = None,
    ) -> None:
        self.grammar_source = grammar_source
        self.mode = mode
        #: EngineTuning fields (``bench_masks.py --tuning``)
        self.tuning = dict(tuning or {})
        #: EngineLimits fields (``bench_masks.py --limits``)
        self.limits = dict(limits or {})

    def version(self) -> str:
        import subprocess

        # imported here, as the peers' modules are when their version is read, so that the first
        # compile of a worker does not carry the package's import time (about 100 ms)
        import structgen
        import structgen.grammar.regex  # noqa: F401
        import structgen.schema  # noqa: F401

        # the checkout structgen was imported from (``--structgen-from`` may name another one)
        root = os.path.dirname(os.path.dirname(os.path.abspath(structgen.__file__)))
        try:
            rev = subprocess.run(
                ["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            rev = "?"
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        where = "" if os.path.samefile(root, here) else f", from {root}"
        tuned = "".join(f", {k}={v}" for k, v in sorted({**self.tuning, **self.limits}.items()))
        return f"git {rev} (mode={self.mode}, grammars={self.grammar_source}{where}{tuned})"

    def prepare(self, vd: VocabData) -> dict[str, float]:
        """Vocab.from_gguf + token trie, cold (empty cache directory) and then cached (disk).

        The caller points ``STRUCTGEN_CACHE_DIR`` at a fresh directory before this runs."""
        from structgen.engine import trie_cache
        from structgen.vocab import Vocab

        parts: dict[str, float] = {}
        v = _timed(parts, "cold_from_gguf_s", Vocab.from_gguf, vd.path)
        _timed(parts, "cold_trie_s", trie_cache.token_trie_for, v)
        trie_cache._memory.clear()  # forget the in-memory trie: the next load reads the disk cache
        v = _timed(parts, "cached_from_gguf_s", Vocab.from_gguf, vd.path)
        _timed(parts, "cached_trie_s", trie_cache.token_trie_for, v)
        parts["cold_s"] = parts["cold_from_gguf_s"] + parts["cold_trie_s"]
        parts["cached_s"] = parts["cached_from_gguf_s"] + parts["cached_trie_s"]
        self.vocab = v
        return parts

    def compile(self, schema: Any) -> Any:
        from structgen.engine import Constraint
        from structgen.engine.limits import EngineLimits
        from structgen.engine.tuning import EngineTuning
        from structgen.errors import StructgenError

        try:
            grammar = structgen_grammar(schema, self.grammar_source)
            return Constraint.compile(
                grammar,
                self.vocab,
                mode=self.mode,
                tuning=EngineTuning(**self.tuning),
                limits=EngineLimits(**self.limits),
            )
        except (StructgenError, NotImplementedError) as e:
            raise CompileError(f"{type(e).__name__}: {e}") from None

    def start(self, compiled: Any) -> Any:
        return compiled.start()

    def fill(self, state: Any, row: np.ndarray) -> None:
        state.fill_bitmask(row)

    def mask_words(self, state: Any) -> None:
        state.mask_words()

    def commit(self, state: Any, token: int) -> bool:
        return bool(state.commit_token(token))


# -- xgrammar ------------------------------------------------------------------------------------


class XGrammarEngine:
    name = "xgrammar"
    spacings = SPACINGS

    def version(self) -> str:
        from importlib.metadata import version

        import xgrammar  # noqa: F401 - the import is part of what the worker times

        return version("xgrammar")

    def prepare(self, vd: VocabData) -> dict[str, float]:
        import xgrammar as xgr

        parts: dict[str, float] = {}
        info = _timed(
            parts,
            "tokenizer_info_s",
            xgr.TokenizerInfo,
            vd.tokens,  # special tokens have b"": xgrammar marks empty tokens special
            xgr.VocabType.RAW,
            vocab_size=vd.logit_width,
            stop_token_ids=vd.eos_ids,
        )
        # the cache would turn a repeated compile of one schema into a lookup
        self.compiler = _timed(parts, "compiler_s", xgr.GrammarCompiler, info, cache_enabled=False)
        parts["special_token_ids"] = len(info.special_token_ids)
        return parts

    def compile(self, schema: Any) -> Any:
        try:
            return self.compiler.compile_json_schema(json.dumps(schema), any_whitespace=True)
        except Exception as e:  # noqa: BLE001 - xgrammar raises RuntimeError/ValueError on refusal
            raise CompileError(f"{type(e).__name__}: {str(e)[:300]}") from None

    def start(self, compiled: Any) -> Any:
        import xgrammar as xgr

        return xgr.GrammarMatcher(compiled)

    def fill(self, state: Any, row: np.ndarray) -> None:
        state.fill_next_token_bitmask(row[None, :], 0)

    def commit(self, state: Any, token: int) -> bool:
        return bool(state.accept_token(token))


# -- llguidance ----------------------------------------------------------------------------------


class _LLTokenizerSource:
    """What ``llguidance.TokenizerWrapper`` reads: tokens, special ids, a tokenize callable."""

    def __init__(self, vd: VocabData) -> None:
        self.eos_token_id = vd.primary_eos
        self.bos_token_id = None
        self.tokens = []
        for i, t in enumerate(vd.tokens):
            if vd.is_text[i]:
                self.tokens.append(t)
            else:
                printed = vd.special_texts.get(i) or f"<[special {i}]>"
                self.tokens.append(b"\xff" + printed.encode("utf-8"))
        self.special_token_ids = [int(i) for i in np.flatnonzero(~vd.is_text)]
        self._vd = vd

    def __call__(self, data: bytes) -> list[int]:
        return self._vd.greedy_tokenize(data)


class LLGuidanceEngine:
    name = "llguidance"
    spacings = SPACINGS

    tokenize_with = "?"

    def version(self) -> str:
        import llguidance

        return f"{llguidance.__version__} (tokenizer callback: {self.tokenize_with})"

    def prepare(self, vd: VocabData) -> dict[str, float]:
        """An ``LLTokenizer`` over the shared token bytes. llguidance tokenizes short strings
        while it computes masks, so it gets llama.cpp's native tokenizer for the same GGUF where
        llama-cpp-python is installed (a Python callback would add its cost to every mask)."""
        import llguidance as llg

        parts: dict[str, float] = {}
        src = _LLTokenizerSource(vd)
        vd.greedy_tokenize(b"")  # build the fallback's index outside the timing
        native = self._llama_cpp_tokenizer(vd.path)
        if native is not None:
            vocab_ptr, fptr = native
            self.tokenizer = _timed(
                parts,
                "lltokenizer_s",
                llg.LLTokenizer.from_llamacpp,
                tokens=src.tokens,
                vocab_ptr=vocab_ptr,
                tokenize_fptr=fptr,
                eos_token=vd.eos_ids,
            )
            self.tokenize_with = "llama.cpp"
        else:
            self.tokenizer = _timed(
                parts,
                "lltokenizer_s",
                llg.LLTokenizer,
                llg.TokenizerWrapper(src),
                n_vocab=vd.logit_width,
                eos_token=vd.eos_ids,
            )
            self.tokenize_with = "python greedy"
        return parts

    def _llama_cpp_tokenizer(self, path: str) -> tuple[Any, int] | None:
        try:
            import ctypes

            import llama_cpp

            self._llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
            vocab_ptr = llama_cpp.llama_model_get_vocab(self._llm.model)
            fptr = ctypes.cast(llama_cpp.llama_cpp._lib.llama_tokenize, ctypes.c_void_p).value
            return vocab_ptr, int(fptr)
        except Exception:  # noqa: BLE001 - not installed or cannot load
            return None

    def compile(self, schema: Any) -> Any:
        import llguidance as llg

        try:
            grammar = llg.LLMatcher.grammar_from_json_schema(schema)
        except Exception as e:  # noqa: BLE001
            raise CompileError(f"{type(e).__name__}: {str(e)[:300]}") from None
        matcher = llg.LLMatcher(self.tokenizer, grammar, log_level=0)
        if matcher.is_error():
            raise CompileError(matcher.get_error()[:300])
        return {"grammar": grammar, "matcher": matcher, "used": False}

    def start(self, compiled: Any) -> Any:
        """The compiled matcher for the first walk; afterwards the same matcher ``reset()``
        (its lazily built lexer and mask caches kept), or a new one if it ended in error."""
        import llguidance as llg

        m = compiled["matcher"]
        if compiled["used"]:
            if m.is_error() or not m.reset():
                m = compiled["matcher"] = llg.LLMatcher(self.tokenizer, compiled["grammar"], log_level=0)
        compiled["used"] = True
        return m

    def fill(self, state: Any, row: np.ndarray) -> None:
        state.unsafe_compute_mask_ptr(row.ctypes.data, row.nbytes)

    def commit(self, state: Any, token: int) -> bool:
        return bool(state.consume_token(token))


# -- glrmask -------------------------------------------------------------------------------------


class GLRMaskEngine:
    name = "glrmask"
    spacings = ("default",)  # its JSON Schema grammar accepts only ", " and ": " separators

    def version(self) -> str:
        import glrmask

        return glrmask.__version__

    def prepare(self, vd: VocabData) -> dict[str, float]:
        import glrmask as gm

        parts: dict[str, float] = {}
        ids = {i: vd.tokens[i] for i in np.flatnonzero(vd.is_text).tolist()}
        self.vocab = _timed(parts, "vocab_s", gm.Vocab.from_id_to_bytes, ids)
        self.eos = gm.TokenSet(vd.eos_ids)
        # glrmask does per-vocabulary work on its first compile: count it here, not in a schema
        t = time.perf_counter_ns()
        self._build({"type": "boolean"})
        parts["first_compile_s"] = (time.perf_counter_ns() - t) / 1e9
        return parts

    def _build(self, schema: Any) -> Any:
        import glrmask as gm

        grammar = gm.Grammar.from_expr(gm.Expr.sequence(gm.Grammar.from_json_schema(schema), self.eos))
        return grammar.compile(self.vocab)

    def compile(self, schema: Any) -> Any:
        try:
            return self._build(schema)
        except Exception as e:  # noqa: BLE001
            raise CompileError(f"{type(e).__name__}: {str(e)[:300]}") from None

    def start(self, compiled: Any) -> Any:
        return compiled.start()

    def fill(self, state: Any, row: np.ndarray) -> None:
        state.fill_mask(row)

    def commit(self, state: Any, token: int) -> bool:
        return bool(state.commit_token(token))


# -- outlines-core -------------------------------------------------------------------------------


class OutlinesEngine:
    name = "outlines"
    spacings = SPACINGS  # its default whitespace is "[ ]?": both forms fit

    def version(self) -> str:
        from importlib.metadata import version

        return version("outlines_core")

    def prepare(self, vd: VocabData) -> dict[str, float]:
        import outlines_core as oc

        parts: dict[str, float] = {}
        by_bytes: dict[bytes, list[int]] = {}
        for i in np.flatnonzero(vd.is_text).tolist():
            by_bytes.setdefault(vd.tokens[i], []).append(i)
        self.vocab = _timed(parts, "vocabulary_s", oc.Vocabulary, vd.primary_eos, by_bytes)
        self.eos = vd.primary_eos
        return parts

    def compile(self, schema: Any) -> Any:
        import outlines_core as oc

        try:
            regex = oc.json_schema.build_regex_from_schema(json.dumps(schema))
            return oc.Index(regex, self.vocab)
        except Exception as e:  # noqa: BLE001
            raise CompileError(f"{type(e).__name__}: {str(e)[:300]}") from None

    def start(self, compiled: Any) -> Any:
        import outlines_core as oc

        return oc.Guide(compiled)

    def fill(self, state: Any, row: np.ndarray) -> None:
        state.write_mask_into(row.ctypes.data, row.size, 4)

    def commit(self, state: Any, token: int) -> bool:
        if token == self.eos:
            # the guide has no transition on EOS: generation simply stops where it is allowed
            return bool(state.is_finished())
        try:
            state.advance(token, return_tokens=False)
        except Exception:  # noqa: BLE001 - a disallowed token raises
            return False
        return True


def make_engine(name: str, options: dict[str, Any]) -> Any:
    if name == "structgen":
        return StructgenEngine(
            options.get("structgen_grammars", "auto"),
            options.get("structgen_mode", "lazy"),
            options.get("structgen_tuning"),
            options.get("structgen_limits"),
        )
    if name in ("structgen-lazy", "structgen-aot"):
        return StructgenEngine(
            options.get("structgen_grammars", "auto"),
            name.removeprefix("structgen-"),
            options.get("structgen_tuning"),
            options.get("structgen_limits"),
        )
    return {
        "xgrammar": XGrammarEngine,
        "llguidance": LLGuidanceEngine,
        "glrmask": GLRMaskEngine,
        "outlines": OutlinesEngine,
    }[name]()
