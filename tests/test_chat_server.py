from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from openai import AsyncOpenAI, InternalServerError, OpenAI

from group_grade.chat_server import ChatServer, Reply
from tests.scripted_model import ScriptedModel, last_tool_result, offered_tools, tool_results

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "shell",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]


def client_for(server: ChatServer) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=server.base_url, api_key="unused", timeout=10, max_retries=0)


def test_reply_normalizes_tool_calls() -> None:
    reply = Reply(tool_calls=[("echo", {"text": "a"})])
    assert reply.tool_calls == (("echo", {"text": "a"}),)
    assert Reply("hi").content == "hi"


@pytest.mark.anyio
async def test_non_streaming_text_reply_and_recorded_request() -> None:
    async with ChatServer(lambda body: Reply("hello there"), model="m1") as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        async with client_for(server) as client:
            completion = await client.chat.completions.create(
                model="m1", messages=[{"role": "user", "content": "hi"}]
            )
    choice = completion.choices[0]
    assert choice.message.content == "hello there"
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.completion_tokens >= 1
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )
    assert server.requests == [{"model": "m1", "messages": [{"role": "user", "content": "hi"}]}]


@pytest.mark.anyio
async def test_non_streaming_tool_calls() -> None:
    reply = Reply(tool_calls=[("shell", {"command": "ls"}), ("echo", '{"text": "x"}')])
    async with ChatServer(lambda body: reply) as server, client_for(server) as client:
        completion = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "go"}], tools=TOOLS
        )
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert calls is not None
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("shell", {"command": "ls"}),
        ("echo", {"text": "x"}),
    ]
    assert len({c.id for c in calls}) == 2
    assert offered_tools(server.requests[0]) == ["shell"]


@pytest.mark.anyio
async def test_streaming_reply_with_tool_calls_and_usage() -> None:
    async def policy(body: dict[str, Any]) -> Reply:
        await asyncio.sleep(0)
        return Reply("thinking aloud", [("shell", {"command": "echo hi"})])

    async with ChatServer(policy) as server, client_for(server) as client:
        stream = await client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "go"}],
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == "thinking aloud"
    deltas = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert [(d.index, d.function.name, d.function.arguments) for d in deltas] == [
        (0, "shell", '{"command": "echo hi"}')
    ]
    finish = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finish[-1] == "tool_calls"
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens >= 1


@pytest.mark.anyio
async def test_streaming_wire_format_ends_with_done() -> None:
    async with (
        ChatServer(lambda body: Reply("ok")) as server,
        httpx.AsyncClient(timeout=10) as http,
    ):
        response = await http.post(
            f"{server.base_url}/chat/completions",
            json={"model": "m", "messages": [], "stream": True},
        )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [e for e in response.text.split("\n\n") if e]
    assert events[-1] == "data: [DONE]"
    payloads = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    assert payloads[0]["choices"][0]["delta"] == {"role": "assistant", "content": "ok"}
    assert payloads[-1]["choices"][0]["finish_reason"] == "stop"
    assert all("usage" not in p for p in payloads)  # not asked for


@pytest.mark.anyio
async def test_models_endpoint() -> None:
    async with (
        ChatServer(lambda body: Reply("x"), model="judge-1") as server,
        client_for(server) as client,
    ):
        models = await client.models.list()
    assert [m.id for m in models.data] == ["judge-1"]


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_policy_error_answers_500(stream: bool) -> None:
    def broken(body: dict[str, Any]) -> Reply:
        raise RuntimeError("script exhausted")

    async with ChatServer(broken) as server, client_for(server) as client:
        with pytest.raises(InternalServerError, match="script exhausted"):
            await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}], stream=stream
            )


@pytest.mark.anyio
async def test_bad_reply_type_and_slow_policy_answer_500() -> None:
    async def slow(body: dict[str, Any]) -> Reply:
        await asyncio.sleep(30)
        return Reply("late")

    async with httpx.AsyncClient(timeout=10) as http:
        async with ChatServer(lambda body: "not a reply") as server:  # type: ignore[arg-type,return-value]
            response = await http.post(f"{server.base_url}/chat/completions", json={})
            assert response.status_code == 500
            assert "not Reply" in response.json()["error"]["message"]
            bad = await http.post(f"{server.base_url}/chat/completions", content=b"{nope")
            assert bad.status_code == 400
        async with ChatServer(slow, reply_timeout=0.2) as server:
            response = await http.post(f"{server.base_url}/chat/completions", json={})
            assert response.status_code == 500
            assert "TimeoutError" in response.json()["error"]["message"]


def test_in_thread_with_sync_client_and_bounded_requests() -> None:
    server = ChatServer(lambda body: Reply("pong"), max_requests=2)
    with server.in_thread() as running:
        client = OpenAI(base_url=running.base_url, api_key="unused", timeout=10, max_retries=0)
        for text in ("a", "b", "c"):
            completion = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": text}]
            )
            assert completion.choices[0].message.content == "pong"
    assert [r["messages"][0]["content"] for r in server.requests] == ["b", "c"]
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url


def test_scripted_model_steps_and_helpers() -> None:
    model = ScriptedModel(
        [
            Reply(tool_calls=[("shell", {"command": "ls"})]),
            lambda body: Reply(f"saw {last_tool_result(body)}"),
        ]
    )
    first = {"messages": [{"role": "user", "content": "go"}], "tools": TOOLS}
    assert model(first).tool_calls == (("shell", {"command": "ls"}),)
    assert last_tool_result(first) is None
    second = {
        "messages": [
            *first["messages"],
            {"role": "assistant", "content": None, "tool_calls": []},
            {"role": "tool", "tool_call_id": "1", "content": [{"type": "text", "text": "a.txt"}]},
        ]
    }
    assert model(second) == Reply("saw a.txt")
    assert tool_results(second) == ["a.txt"]
    third = {"messages": [*second["messages"], {"role": "assistant", "content": "done"}]}
    with pytest.raises(IndexError):
        model(third)
