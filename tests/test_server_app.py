"""The server's HTTP behaviour without a model: routes, auth, limits, error shapes, and whole
answers from a scripted runtime over a byte vocabulary (``generation_support``), through
Starlette's TestClient and through the real ``openai`` client on top of it."""

from __future__ import annotations

import json
import threading
import time

import jsonschema
import pytest
from generation_support import ScriptedRuntime, byte_vocab
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette", reason="the server extra is not installed (pip install '.[server]')")
pytest.importorskip("httpx", reason="httpx is not installed: Starlette's TestClient needs it (pip install '.[test]')")

from starlette.testclient import TestClient  # noqa: E402

from structgen.chat import prepare_chat  # noqa: E402
from structgen.errors import StructgenError  # noqa: E402
from structgen.server import ServerConfig, create_app  # noqa: E402
from structgen.server.errors import ApiError  # noqa: E402
from structgen.server.validation import check_chat_request  # noqa: E402

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 10}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
USER = [{"role": "user", "content": "Give me a person."}]
KEY = "sk-test-123"


def person_format(schema=PERSON):
    return {"type": "json_schema", "json_schema": {"name": "person", "schema": schema, "strict": True}}


@pytest.fixture(scope="module")
def vocab():
    return byte_vocab()


def make_client(vocab, script='{"name": "Ada", "age": 36}', **config):
    config.setdefault("model_name", "scripted")
    app = create_app(ScriptedRuntime(vocab, script), ServerConfig(**config))
    return TestClient(app)


@pytest.fixture
def client(vocab):
    with make_client(vocab) as c:
        yield c


def post(client, body, **kwargs):
    return client.post("/v1/chat/completions", json=body, **kwargs)


def assert_error(response, status, *words):
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) >= {"message", "type", "param", "code"}
    for w in words:
        assert w in error["message"]
    return error


# -- routes -----------------------------------------------------------------------------------


def test_health_and_models(client):
    assert client.get("/health").json()["status"] == "ok"
    models = client.get("/v1/models").json()
    assert models["object"] == "list" and [m["id"] for m in models["data"]] == ["scripted"]
    assert client.get("/v1/models/scripted").json()["id"] == "scripted"
    assert_error(client.get("/v1/models/gpt-4"), 404, "gpt-4")


def test_unknown_routes_and_methods_have_openai_error_shapes(client):
    assert_error(client.get("/v1/completions"), 404, "/v1/completions")
    assert_error(client.get("/v1/chat/completions"), 405)


def test_bad_bodies(client):
    assert_error(client.post("/v1/chat/completions", content=b"{", headers={"content-type": "application/json"}), 400)
    assert_error(client.post("/v1/chat/completions", content=b"", headers={"content-type": "application/json"}), 400)
    assert_error(client.post("/v1/chat/completions", content=b"{}", headers={"content-type": "text/plain"}), 415)
    assert_error(post(client, {"model": "scripted"}), 400, "messages")
    assert_error(post(client, {"messages": USER, "model": "other"}), 404, "other")
    assert_error(post(client, {"messages": USER, "guided_json": PERSON}), 400, "guided_json")
    # "\ud800" is valid JSON that decodes to a lone surrogate: a 500 from the tokenizer before
    body = b'{"messages": [{"role": "user", "content": "a \\ud800"}]}'
    response = client.post("/v1/chat/completions", content=body, headers={"content-type": "application/json"})
    assert_error(response, 400, "lone surrogate")


def test_body_size_limit(vocab):
    with make_client(vocab, max_body_bytes=2000) as c:
        big = [{"role": "user", "content": "x" * 3000}]
        assert_error(post(c, {"messages": big}), 413)


def test_api_key(vocab):
    with make_client(vocab, api_key=KEY) as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}):
            response = c.get("/v1/models", headers=headers)
            assert_error(response, 401)
            assert response.headers["www-authenticate"] == "Bearer"
        assert_error(post(c, {"messages": USER}), 401)
        assert c.get("/v1/models", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200


# -- answers ----------------------------------------------------------------------------------


def test_json_schema_answer(client):
    response = post(client, {"messages": USER, "response_format": person_format(), "max_tokens": 40})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["object"] == "chat.completion" and body["model"] == "scripted"
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant"
    jsonschema.validate(json.loads(choice["message"]["content"]), PERSON)
    assert choice["finish_reason"] in ("stop", "length")
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0


def test_an_invalid_script_still_gives_a_valid_answer(vocab):
    with make_client(vocab, script="I am not JSON at all") as c:
        response = post(c, {"messages": USER, "response_format": person_format(), "max_tokens": 40, "seed": 1})
        jsonschema.validate(json.loads(response.json()["choices"][0]["message"]["content"]), PERSON)


def test_unenforceable_schema_is_a_400_naming_keyword_and_pointer(client):
    schema = {"type": "object", "properties": {"when": {"type": "string", "format": "no-such-format"}}}
    for stream in (False, True):
        response = post(client, {"messages": USER, "response_format": person_format(schema), "stream": stream})
        error = assert_error(response, 400, "format", "/properties/when")
        assert error["keyword"] == "format" and error["pointer"] == "/properties/when"
        assert error["param"] == "response_format" and error["code"] == "unsupported_schema"


def test_max_tokens_too_small_for_any_valid_output_is_a_400(client):
    response = post(client, {"messages": USER, "response_format": person_format(), "max_tokens": 3})
    assert assert_error(response, 400)["param"] == "max_tokens"


def test_tool_call_answer(vocab):
    # the Hermes format, the default for a runtime whose template knows no tools
    script = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    with make_client(vocab, script=script) as c:
        body = {"messages": USER, "tools": [WEATHER], "tool_choice": "required", "max_tokens": 200}
        response = post(c, body)
        assert response.status_code == 200, response.text
        choice = response.json()["choices"][0]
        assert choice["finish_reason"] == "tool_calls"
        calls = choice["message"]["tool_calls"]
        assert calls and all(call["type"] == "function" and call["id"] for call in calls)
        for call in calls:
            assert call["function"]["name"] == "get_weather"
            jsonschema.validate(json.loads(call["function"]["arguments"]), WEATHER["function"]["parameters"])


def sse_events(response) -> list:
    events = []
    for line in response.iter_lines():
        if line.startswith("data: "):
            data = line[len("data: ") :]
            events.append(data if data == "[DONE]" else json.loads(data))
    return events


def test_streamed_answer_joins_into_a_valid_result(client):
    body = {
        "messages": USER,
        "response_format": person_format(),
        "max_tokens": 40,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with client.stream("POST", "/v1/chat/completions", json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response)
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    jsonschema.validate(json.loads(text), PERSON)
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert finishes in (["stop"], ["length"])
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0
    assert all(c["usage"] is None for c in chunks[:-1])


# -- a real server in this process, and the openai client ----------------------------------------


def script_for(prompt: str) -> str:
    """What the scripted model wants to write: a long list of numbers when asked for them."""
    if "numbers" in prompt:
        return "[" + ", ".join(["1"] * 4000) + "]"
    return '{"name": "Ada", "age": 36}'


@pytest.fixture
def live_server(vocab):
    """uvicorn serving the scripted runtime on a free loopback port, in a thread."""
    uvicorn = pytest.importorskip("uvicorn", reason="uvicorn is not installed (pip install '.[server]')")
    app = create_app(ScriptedRuntime(vocab, script_for), ServerConfig("scripted", api_key=KEY))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(500):  # up to 10 s
        if server.started or not thread.is_alive():
            break
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_the_openai_client_against_a_live_server(live_server):
    openai = pytest.importorskip("openai", reason="the openai client is not installed (pip install '.[test]')")
    client = openai.OpenAI(base_url=f"{live_server}/v1", api_key=KEY, max_retries=0)
    answer = client.chat.completions.create(
        model="scripted", messages=USER, response_format=person_format(), max_tokens=40
    )
    jsonschema.validate(json.loads(answer.choices[0].message.content), PERSON)
    assert answer.usage.completion_tokens > 0

    parts = client.chat.completions.create(
        model="scripted", messages=USER, response_format=person_format(), max_tokens=40, stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in parts if chunk.choices)
    jsonschema.validate(json.loads(text), PERSON)

    bad = person_format({"type": "string", "format": "no-such-format"})
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="scripted", messages=USER, response_format=bad)
    assert "format" in str(info.value) and info.value.body["keyword"] == "format" and info.value.body["pointer"] == ""
    with pytest.raises(openai.BadRequestError, match="beam_width"):
        client.chat.completions.create(model="scripted", messages=USER, extra_body={"structgen": {"beam_width": 2}})
    wrong = openai.OpenAI(base_url=f"{live_server}/v1", api_key="nope", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.models.list()


def test_a_client_that_goes_away_cancels_its_generation(live_server):
    httpx = pytest.importorskip("httpx", reason="httpx is not installed (pip install '.[test]')")
    headers = {"Authorization": f"Bearer {KEY}"}
    # an open-ended grammar and a large budget: generation would run on long after the client left
    body = {
        "messages": [{"role": "user", "content": "Many numbers, please."}],
        "response_format": person_format({"type": "array", "items": {"type": "integer"}}),
        "max_tokens": 5000,
        "stream": True,
    }
    with httpx.Client(base_url=live_server, headers=headers, timeout=30) as http:
        before = http.get("/health").json()["cancelled"]
        with http.stream("POST", "/v1/chat/completions", json=body) as response:
            assert response.status_code == 200
            next(response.iter_lines())
        health = http.get("/health").json()
        for _ in range(1000):  # bounded wait for the worker to notice, up to 20 s
            if health["cancelled"] > before and health["waiting"] == 0:
                break
            time.sleep(0.02)
            health = http.get("/health").json()
        assert health["cancelled"] == before + 1 and health["waiting"] == 0


def test_streamed_tool_call_deltas_join_into_valid_calls(vocab):
    script = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    with make_client(vocab, script=script) as c:
        body = {"messages": USER, "tools": [WEATHER], "tool_choice": "required", "max_tokens": 200, "stream": True}
        with c.stream("POST", "/v1/chat/completions", json=body) as response:
            events = sse_events(response)
    assert events[-1] == "[DONE]"
    calls: dict[int, dict] = {}
    finish = None
    for chunk in events[:-1]:
        choice = chunk["choices"][0]
        finish = choice["finish_reason"] or finish
        for part in choice["delta"].get("tool_calls") or []:
            call = calls.setdefault(part["index"], {"arguments": ""})
            if "id" in part:
                assert part["type"] == "function" and "name" in part["function"] and "name" not in call
                call.update(id=part["id"], name=part["function"]["name"])
            call["arguments"] += part.get("function", {}).get("arguments", "")
    assert finish == "tool_calls" and calls
    for call in calls.values():
        assert call["id"] and call["name"] == "get_weather"
        jsonschema.validate(json.loads(call["arguments"]), WEATHER["function"]["parameters"])


def test_response_fields_echoed_back_in_the_history_are_not_prompt(client):
    history = USER + [
        {"role": "assistant", "content": "Hello", "refusal": None, "annotations": [], "reasoning_content": "hm"},
        {"role": "user", "content": "Now a person."},
    ]
    response = post(client, {"messages": history, "response_format": person_format(), "max_tokens": 40})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("seed", range(4))
def test_every_200_validates_whatever_the_model_wants(vocab, seed):
    """A model that wants to write something else entirely (noise over a wrong script) still
    gets only valid answers."""
    with make_client(vocab, script='{"name": 12, "age": "old", "extra": true}') as c:
        body = {"messages": USER, "response_format": person_format(), "max_tokens": 40, "seed": seed}
        response = post(c, dict(body, temperature=1.5))
        assert response.status_code == 200, response.text
        jsonschema.validate(json.loads(response.json()["choices"][0]["message"]["content"]), PERSON)


def test_a_full_queue_is_a_429_and_the_waiting_request_still_completes(vocab):
    release = threading.Event()
    # the model blocks in its first forward pass until released: one request is running
    runtime = ScriptedRuntime(vocab, '{"name": "Ada", "age": 36}', on_feed=lambda n: release.wait(30))
    body = {"messages": USER, "response_format": person_format(), "max_tokens": 40}
    with TestClient(create_app(runtime, ServerConfig("scripted", max_queued=0))) as c:
        first: list = []
        thread = threading.Thread(target=lambda: first.append(post(c, body)))
        thread.start()
        try:
            for _ in range(1500):  # bounded wait for the first request to reach the model, up to 30 s
                if c.get("/health").json()["waiting"] == 1:
                    break
                time.sleep(0.02)
            assert_error(post(c, body), 429, "busy")
        finally:
            release.set()
            thread.join(timeout=60)
        assert first[0].status_code == 200, first[0].text
        jsonschema.validate(json.loads(first[0].json()["choices"][0]["message"]["content"]), PERSON)


def test_closing_the_worker_stops_the_running_generation(vocab):
    """Shutdown cancels the running job between two tokens, so the model can be freed."""
    import asyncio

    from structgen.server.worker import Job, ModelWorker

    runtime = ScriptedRuntime(vocab, "[" + ", ".join(["1"] * 4000) + "]")
    numbers = {
        "type": "json_schema",
        "json_schema": {"name": "n", "schema": {"type": "array", "items": {"type": "integer"}}},
    }

    async def run() -> None:
        worker = ModelWorker(runtime, max_queued=4)
        job = Job(
            {"messages": USER, "response_format": numbers, "max_tokens": 5000}, stream_deltas=True, schema_param=None
        )
        worker.submit(job)
        assert (await job.events.get())[0] == "prepared"
        assert (await job.events.get())[0] == "delta"  # it is generating
        assert await asyncio.to_thread(worker.close)
        assert job.cancelled and worker.cancelled == 1 and worker.waiting == 0

    asyncio.run(run())


@pytest.mark.parametrize("ref", ["http://example.com/s.json", "file:///etc/passwd", "/etc/passwd"])
def test_a_request_cannot_make_the_server_read_a_file_or_fetch_a_url(client, ref):
    response = post(client, {"messages": USER, "response_format": person_format({"$ref": ref})})
    error = assert_error(response, 400, "remote references")
    assert error["keyword"] == "$ref" and error["code"] == "unsupported_schema"


def test_tool_choice_naming_an_unknown_tool_is_a_400(client):
    choice = {"type": "function", "function": {"name": "get_time"}}
    assert_error(post(client, {"messages": USER, "tools": [WEATHER], "tool_choice": choice}), 400, "get_time")


# -- anything that passes the request checks is prepared or refused with a StructgenError -------

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["", "a", "object", "string", "integer"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["type", "properties", "required", "items", "enum", "minimum", "a", "$ref", "format"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=12,
)
_messages = st.lists(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["system", "developer", "user", "assistant", "tool"]),
            "content": st.text(max_size=12),
        },
        optional={
            "tool_call_id": st.text(max_size=4),
            "name": st.text(max_size=4),
            "tool_calls": st.lists(
                st.fixed_dictionaries(
                    {
                        "id": st.text(max_size=4),
                        "type": st.just("function"),
                        "function": st.fixed_dictionaries(
                            {"name": st.sampled_from(["get_weather", "x", ""]), "arguments": st.text(max_size=8)}
                        ),
                    }
                ),
                max_size=2,
            ),
        },
    ),
    min_size=1,
    max_size=4,
)
_bodies = st.fixed_dictionaries(
    {"messages": _messages},
    optional={
        "tools": st.lists(
            st.builds(
                lambda name, params: {"type": "function", "function": {"name": name, "parameters": params}},
                st.sampled_from(["get_weather", "f", "bad name", ""]),
                _json.filter(lambda v: isinstance(v, dict)),
            ),
            max_size=2,
        ),
        "tool_choice": st.sampled_from(
            ["auto", "none", "required", {"type": "function", "function": {"name": "get_weather"}}]
        ),
        "response_format": st.one_of(
            st.just({"type": "json_object"}),
            _json.map(lambda s: {"type": "json_schema", "json_schema": {"name": "x", "schema": s}}),
        ),
        "max_tokens": st.integers(1, 300),
        "stop": st.lists(st.text(min_size=1, max_size=3), max_size=2),
        "structgen": st.fixed_dictionaries(
            {}, optional={"whitespace": st.sampled_from(["compact", "pretty"]), "thinking_budget": st.integers(0, 9)}
        ),
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_bodies)
def test_any_checked_request_is_prepared_or_refused_cleanly(vocab, body):
    """What the server hands to prepare_chat never makes it raise anything but a StructgenError
    (which the server answers with a 400): no 500s and no tracebacks from bad input."""
    try:
        call = check_chat_request(body, ServerConfig("scripted"))
    except ApiError:
        return
    try:
        prepare_chat(ScriptedRuntime(vocab, "x"), **call.prepare_kwargs)
    except StructgenError:
        pass


def test_a_client_that_leaves_mid_body_is_no_server_error(live_server, caplog):
    import socket
    from urllib.parse import urlparse

    httpx = pytest.importorskip("httpx", reason="httpx is not installed (pip install '.[test]')")
    url = urlparse(live_server)
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {KEY}\r\nContent-Length: 1000\r\n\r\n".encode()
            + b'{"messages": ['
        )
    health = httpx.get(f"{live_server}/health", headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
    assert health.json()["status"] == "ok"
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


def test_serve_keeps_compiled_constraints_in_the_cache_directory_unless_told_not_to(monkeypatch, tmp_path):
    from structgen.cli import build_parser
    from structgen.server.serve import constraint_store

    monkeypatch.setenv("STRUCTGEN_CACHE_DIR", str(tmp_path))
    parse = build_parser().parse_args
    assert constraint_store(parse(["serve", "smollm2"]).constraint_cache) == str(tmp_path / "constraints")
    assert constraint_store(parse(["serve", "smollm2", "--constraint-cache", "/x"]).constraint_cache) == "/x"
    assert constraint_store(parse(["serve", "smollm2", "--no-constraint-cache"]).constraint_cache) is None
