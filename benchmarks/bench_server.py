"""Server benchmark: structgen's OpenAI-compatible server against llama-cpp-python's, same GGUF.

    python benchmarks/bench_server.py [--model smollm2] [--threads 2] [--requests 3]
        [--max-tokens 64] [--schemas 20] [--schema-max-tokens 128] [--servers structgen,llama_cpp]
        [--json out.json]

Not a test. Each server runs as its own process on a free loopback port (one at a time: the
machine has 2 cores), driven by the ``openai`` client:

* speed - the same chat request ``--requests`` times, streamed, with no constraint and with one
  JSON Schema through ``response_format``; reported: tokens per second (completion tokens over
  the request's wall time) and decode milliseconds per token (from the first content chunk to
  the last, over the tokens after the first). "added per token" is the constrained figure minus
  the unconstrained one on the same server: what the constraint costs each token.
* enforcement - ``--schemas`` JSONSchemaBench/MaskBench schemas (the deterministic draw of
  ``benchmarks.inputs.maskbench_sample``) through ``response_format`` (``strict``), at
  temperature 0: each answer is *valid* (HTTP 200, parses, validates with ``jsonschema``),
  *refused* (a 4xx that says why), *invalid* (a 200 whose content does not validate: the server
  failed open), or *error* (5xx, timeout).

``llama_cpp.server`` comes from ``pip install 'llama-cpp-python[server]'`` (the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import selectors
import socket
import statistics
import subprocess
import sys
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import jsonschema  # noqa: E402
import openai  # noqa: E402

from benchmarks.inputs import maskbench_sample  # noqa: E402
from structgen.models import KNOWN_MODELS, require_model  # noqa: E402

SPEED_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "city": {"type": "string", "maxLength": 40},
        "hobbies": {"type": "array", "items": {"type": "string", "maxLength": 30}, "maxItems": 5},
    },
    "required": ["name", "age", "city", "hobbies"],
    "additionalProperties": False,
}
SPEED_PROMPT = [{"role": "user", "content": "Describe a fictional person: name, age, city and hobbies."}]
SCHEMA_PROMPT = [{"role": "user", "content": "Write an example JSON value for the schema."}]
READY = re.compile(r"listening on (http://\S+)/v1")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """A server subprocess; ``url`` is its OpenAI base URL once it answers."""

    def __init__(
        self, kind: str, model: pathlib.Path, model_name: str, threads: int | None, request_timeout: float = 300
    ) -> None:
        self.kind = kind
        self.request_timeout = request_timeout
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if kind == "structgen":
            command = [sys.executable, "-m", "structgen", "serve", model_name, "--port", "0"]
            if threads:
                command += ["--threads", str(threads)]
            self.model_id = model_name
        else:
            port = free_port()
            command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1"]
            command += ["--port", str(port), "--n_ctx", "4096", "--model_alias", model_name]
            if threads:
                command += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
            self.url = f"http://127.0.0.1:{port}/v1"
            self.model_id = model_name
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        self._wait_ready()

    def _wait_ready(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        log: list[str] = []
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.kind} server exited: {''.join(log)[-2000:]}")
            if self.kind == "structgen":
                if selector.select(timeout=1):
                    line = self.process.stdout.readline()
                    log.append(line)
                    match = READY.search(line)
                    if match:
                        self.url = match.group(1) + "/v1"
                        return
            else:
                while selector.select(timeout=0):
                    log.append(self.process.stdout.readline())
                try:
                    openai.OpenAI(base_url=self.url, api_key="none", max_retries=0, timeout=2).models.list()
                    return
                except openai.APIConnectionError:
                    time.sleep(1)
        raise RuntimeError(f"{self.kind} server did not start in {timeout:.0f} s")

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url, api_key="none", max_retries=0, timeout=self.request_timeout)

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def schema_format(schema: Any, kind: str = "structgen") -> dict[str, Any]:
    """The schema as ``response_format``: OpenAI's ``json_schema`` shape, or for
    ``llama_cpp.server`` its own (its 0.3 server accepts only ``text`` and ``json_object``, the
    latter with a ``schema``, and answers the ``json_schema`` shape with a 500)."""
    if kind == "llama_cpp":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}}


def timed_stream(client: openai.OpenAI, model: str, **request: Any) -> dict[str, Any]:
    """One streamed request: tokens, wall time, and the decode time per token.

    Tokens are the usage chunk's count where the server sends one (``stream_options``;
    ``llama_cpp.server`` ignores the field and streams one chunk per token, so there the content
    chunks are counted)."""
    t0 = time.perf_counter()
    stream = client.chat.completions.create(model=model, stream=True, stream_options={"include_usage": True}, **request)
    first = last = None
    chunks = 0
    usage = None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        if chunk.choices and chunk.choices[0].delta.content:
            now = time.perf_counter()
            first = first if first is not None else now
            last = now
            chunks += 1
    wall = time.perf_counter() - t0
    tokens = usage.completion_tokens if usage is not None else chunks
    decode = (last - first) / (tokens - 1) if first is not None and last is not None and tokens > 1 else float("nan")
    return {"tokens": tokens, "wall_s": wall, "ttft_s": (first or t0) - t0, "decode_ms_per_token": 1000 * decode}


def measure_speed(server: ServerProcess, requests: int, max_tokens: int) -> dict[str, Any]:
    client = server.client()
    out = {}
    constrained = {"response_format": schema_format(SPEED_SCHEMA, server.kind)}
    for label, extra in (("unconstrained", {}), ("constrained", constrained)):
        # warm-up: the first request compiles the constraint and fills the engine's caches
        timed_stream(client, server.model_id, messages=SPEED_PROMPT, max_tokens=max_tokens, temperature=0.0, **extra)
        runs = [
            timed_stream(
                client, server.model_id, messages=SPEED_PROMPT, max_tokens=max_tokens, temperature=0.0, **extra
            )
            for _ in range(requests)
        ]
        out[label] = {
            "tokens_per_s": sum(r["tokens"] for r in runs) / sum(r["wall_s"] for r in runs),
            "decode_ms_per_token": statistics.median(r["decode_ms_per_token"] for r in runs),
            "ttft_ms": 1000 * statistics.median(r["ttft_s"] for r in runs),
            "tokens": [r["tokens"] for r in runs],
        }
    out["added_ms_per_token"] = out["constrained"]["decode_ms_per_token"] - out["unconstrained"]["decode_ms_per_token"]
    return out


def measure_enforcement(server: ServerProcess, cases: list[Any], max_tokens: int) -> dict[str, Any]:
    client = server.client()
    verdicts: dict[str, str] = {}
    for case in cases:
        verdicts[case.name] = _verdict(
            client, server.model_id, schema_format(case.schema, server.kind), case.schema, max_tokens
        )
        print(f"{server.kind}: {case.name}: {verdicts[case.name]}", file=sys.stderr, flush=True)
    counts = {k: sum(v.split(" ")[0] == k for v in verdicts.values()) for k in ("valid", "refused", "invalid", "error")}
    return {"counts": counts, "verdicts": verdicts}


def _verdict(client: openai.OpenAI, model: str, response_format: Any, schema: Any, max_tokens: int) -> str:
    try:
        answer = client.chat.completions.create(
            model=model,
            messages=SCHEMA_PROMPT,
            response_format=response_format,
            max_tokens=max_tokens,
            temperature=0.0,
        )
    except openai.APIStatusError as e:
        if not 400 <= e.status_code < 500:
            return "error"
        code = e.body.get("code") if isinstance(e.body, dict) else None
        return f"refused ({code})" if code else "refused"
    except openai.APITimeoutError:
        return "error (timeout)"
    except openai.APIConnectionError:
        return "error"
    try:
        value = json.loads(answer.choices[0].message.content or "")
    except ValueError:
        return "invalid (not JSON: cut off at max_tokens, or never JSON)"
    try:
        jsonschema.validate(value, schema)
    except (jsonschema.ValidationError, jsonschema.SchemaError) as e:
        return f"invalid (fails '{e.validator}' at {e.json_path})"
    return "valid"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="smollm2", choices=list(KNOWN_MODELS))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--requests", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--schemas", type=int, default=20)
    p.add_argument("--schema-max-tokens", type=int, default=128)
    p.add_argument("--servers", default="structgen,llama_cpp")
    p.add_argument("--request-timeout", type=float, default=300, help="seconds; a request past it counts as an error")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)

    model_path = require_model(args.model)
    cases = maskbench_sample(args.schemas)
    results: dict[str, Any] = {
        "model": model_path.name,
        "threads": args.threads,
        "requests": args.requests,
        "max_tokens": args.max_tokens,
        "schemas": [c.name for c in cases],
        "schema_max_tokens": args.schema_max_tokens,
        "servers": {},
    }
    for kind in args.servers.split(","):
        print(f"{kind}: starting", file=sys.stderr, flush=True)
        server = ServerProcess(kind, model_path, args.model, args.threads, args.request_timeout)
        try:
            speed = measure_speed(server, args.requests, args.max_tokens)
            print(f"{kind}: speed {json.dumps(speed)}", file=sys.stderr, flush=True)
            enforcement = measure_enforcement(server, cases, args.schema_max_tokens)
            print(f"{kind}: enforcement {enforcement['counts']}", file=sys.stderr, flush=True)
        finally:
            server.close()
        results["servers"][kind] = {"speed": speed, "enforcement": enforcement}

    print(report(results))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


def report(results: dict[str, Any]) -> str:
    n = len(results["schemas"])
    lines = [
        f"model {results['model']}, {results['threads']} threads, {results['requests']} requests of up to "
        f"{results['max_tokens']} tokens; {n} schemas at up to {results['schema_max_tokens']} tokens",
        "",
        "| server | unconstrained tok/s | constrained tok/s | unconstrained ms/token | constrained ms/token "
        "| added ms/token | valid | refused | invalid (200) | error |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, r in results["servers"].items():
        s, c = r["speed"], r["enforcement"]["counts"]
        lines.append(
            f"| {kind} | {s['unconstrained']['tokens_per_s']:.1f} | {s['constrained']['tokens_per_s']:.1f} "
            f"| {s['unconstrained']['decode_ms_per_token']:.1f} | {s['constrained']['decode_ms_per_token']:.1f} "
            f"| {s['added_ms_per_token']:+.1f} | {c['valid']}/{n} | {c['refused']} | {c['invalid']} | {c['error']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
