"""A small OpenAI-compatible chat-completions server on 127.0.0.1 whose replies come from a
Python ``Responder`` (the function that replies): a scripted test model, a deterministic
reference grader, ...

Endpoints: ``GET /v1/models`` and ``POST /v1/chat/completions`` (plain JSON, or SSE chunks
ending in ``data: [DONE]`` when the request sets ``stream: true``). A responder that raises (or
returns something other than a `Reply`, or exceeds ``reply_timeout``) answers HTTP 500 with
the error message, so a client never waits on a broken responder.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web

MAX_BODY_BYTES = 64 * 1024**2


@dataclass(frozen=True)
class Reply:
    """One assistant turn: text and/or tool calls ``(name, arguments)``, the arguments given
    as a dict or as a JSON string (sent verbatim, so a responder can also send malformed JSON)."""

    content: str | None = None
    tool_calls: Sequence[tuple[str, Mapping[str, Any] | str]] = ()

    def __post_init__(self) -> None:
        calls = tuple((name, arguments) for name, arguments in self.tool_calls)
        object.__setattr__(self, "tool_calls", calls)


Responder = Callable[[dict[str, Any]], Reply | Awaitable[Reply]]
"""Receives the request body (``messages``, ``tools``, ...) and returns the reply."""


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class ChatServer:
    """Serve `responder` at ``base_url`` (``http://127.0.0.1:<port>/v1``; ``port=0`` picks a free
    port). Use ``async with ChatServer(responder) as server:`` inside a running loop, or
    ``with ChatServer(responder).in_thread() as server:`` to run it on its own loop in a thread.
    Every request body received is kept in ``requests`` (the last ``max_requests``)."""

    def __init__(
        self,
        responder: Responder,
        *,
        model: str = "scripted-model",
        port: int = 0,
        max_requests: int = 1000,
        reply_timeout: float = 60.0,
    ) -> None:
        self.responder = responder
        self.model = model
        self.port = port
        self.max_requests = max_requests
        self.reply_timeout = reply_timeout
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        if self._runner is None:
            raise RuntimeError("ChatServer is not running")
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> None:
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/chat/completions", self._completions)
        runner = web.AppRunner(app, shutdown_timeout=2.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self.port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self.port = site._server.sockets[0].getsockname()[1]  # the bound port when port=0
        self._runner = runner

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> ChatServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @contextmanager
    def in_thread(self, timeout: float = 10.0) -> Iterator[ChatServer]:
        """Run the server on a fresh event loop in a daemon thread for the block's duration."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="chat-server", daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.start(), loop).result(timeout)
            try:
                yield self
            finally:
                asyncio.run_coroutine_threadsafe(self.stop(), loop).result(timeout)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
            if not thread.is_alive():
                loop.close()

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "object": "list",
                "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "local"}],
            }
        )

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError as error:
            return _error(400, f"request body is not JSON: {error}")
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object")
        self.requests.append(body)
        del self.requests[: -self.max_requests]
        try:
            async with asyncio.timeout(self.reply_timeout):
                reply = self.responder(body)
                if inspect.isawaitable(reply):
                    reply = await reply
            if not isinstance(reply, Reply):
                raise TypeError(f"the responder returned {type(reply).__name__}, not Reply")
        except Exception as error:  # a broken responder answers 500, never hangs
            return _error(500, f"the responder failed: {type(error).__name__}: {error}")
        completion = self._completion(body, reply)
        if not body.get("stream"):
            return web.json_response(completion)
        return await self._stream(request, body, completion)

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        number = next(self._ids)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{number}_{index}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments),
                    },
                }
                for index, (name, arguments) in enumerate(reply.tool_calls)
            ]
        output = (reply.content or "") + "".join(
            call["function"]["name"] + call["function"]["arguments"]
            for call in message.get("tool_calls", [])
        )
        prompt_tokens = _tokens(json.dumps(body.get("messages", [])))
        completion_tokens = _tokens(output)
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    async def _stream(
        self, request: web.Request, body: dict[str, Any], completion: dict[str, Any]
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        for event in _events(completion, include_usage):
            await response.write(event)
        await response.write_eof()
        return response


def _events(completion: dict[str, Any], include_usage: bool) -> Iterator[bytes]:
    """The completion as SSE chunks: role + content, one chunk per tool call, the finish
    reason, the usage (when asked for), then ``[DONE]``."""
    head = {key: completion[key] for key in ("id", "created", "model")}
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        data = {
            **head,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }
        return f"data: {json.dumps(data)}\n\n".encode()

    yield chunk({"role": "assistant", "content": message["content"]})
    for index, call in enumerate(message.get("tool_calls", [])):
        yield chunk({"tool_calls": [{"index": index, **call}]})
    yield chunk({}, choice["finish_reason"])
    if include_usage:
        usage = {
            **head,
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": completion["usage"],
        }
        yield f"data: {json.dumps(usage)}\n\n".encode()
    yield b"data: [DONE]\n\n"


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "server_error"}}, status=status)
