"""The grader's harness: an in-process tool-calling chat loop that installs nothing.

Verifiers' built-in ``null``/``bash`` harnesses install a chat program with ``uv`` on every
start (package index required). This loop runs inside the env worker instead: every model call
goes to the rollout's interception ``endpoint`` (streamed, through verifiers' own chat-call
helper), ``shell`` commands run in the grader's box through ``runtime.run``, and the task's MCP
tools are reached with verifiers' own MCP client, named as verifiers' chat program names them
(``<server>_<tool>``, or bare for a server with an empty name, i.e. ``TOOL_PREFIX = None``).

The loop reaches the endpoint and the tool servers from the host process, so the URLs verifiers
hands ``launch`` must be host-reachable: true for the subprocess runtime (loopback) and for
tunneled runtimes such as prime; not for docker/podman, whose URLs are container-side proxies.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
import verifiers.v1 as vf
from openai import APIStatusError, AsyncOpenAI
from openai.types.chat import ChatCompletionMessageFunctionToolCall
from pydantic import Field
from verifiers.v1.dialects.chat import message_to_wire
from verifiers.v1.errors import MODEL_TRANSPORT_ERROR_EXIT_CODE
from verifiers.v1.harnesses.utils.core import chat
from verifiers.v1.harnesses.utils.mcp import MCPConnection, call_mcp, connect_mcp

from group_grade.transcript import cut_output
from group_grade.validators import unencodable

SHELL_TOOL = "shell"
MCP_CONNECT_TIMEOUT = 60.0
"""Seconds to list the tools of every MCP server (the built-in chat loop allows the same)."""
MODEL_TIMEOUT = httpx.Timeout(600.0, connect=5.0)

ToolResult = str | list[dict[str, Any]]


class GraderHarnessConfig(vf.HarnessConfig):
    id: vf.ID = "group-grade"
    max_turns: int | None = Field(None, gt=0)
    """Model turns this loop takes before it stops with stop condition `max_turns` (None = no
    own cap). The agent's `max_turns` and token caps are enforced by verifiers' interception,
    which refuses the next model call and stops the trace."""
    shell_timeout: float = Field(120.0, gt=0, allow_inf_nan=False)
    """Seconds one `shell` command may run; the model then gets a timeout error (the
    subprocess runtime kills the command's process group; container runtimes may not)."""
    shell_output_cap: int = Field(16_000, gt=0)
    """Characters of `shell` output the model gets; beyond it, head + marker + tail."""
    parallel_tool_calls: bool = True
    """Run the tool calls of one model response concurrently (say, hidden tests in several
    candidate boxes at once); their results keep the calls' order."""


class MCPClients:
    """Clients of the rollout's MCP servers, one per call in flight: verifiers' ``MCPConnection``
    runs one call at a time, so calls made at once get a client each (opened on first need,
    reused after, closed with ``stack``)."""

    def __init__(
        self,
        specs: dict[str, dict[str, Any]],
        connected: dict[str, MCPConnection],
        stack: AsyncExitStack,
    ) -> None:
        self.specs = specs
        self.idle = {name: [connection] for name, connection in connected.items()}
        self.stack = stack

    @asynccontextmanager
    async def borrow(self, server: str) -> AsyncIterator[dict[str, MCPConnection]]:
        """``{server: an idle client}``, in the form ``call_mcp`` takes."""
        idle = self.idle[server]
        if idle:
            connection = idle.pop()
        else:
            connection = MCPConnection(self.specs[server])
            self.stack.push_async_callback(connection.aclose)
        try:
            yield {server: connection}
        finally:
            idle.append(connection)


class GraderHarness(vf.Harness[GraderHarnessConfig]):
    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_MCP = True
    EXECUTES_CODE = True
    NEEDS_CONTAINER = False

    def shell_tool(self) -> dict[str, Any]:
        """The `shell` tool declaration offered to the model."""
        return {
            "type": "function",
            "function": {
                "name": SHELL_TOOL,
                "description": (
                    "Run a shell command (`sh -c`) in your workspace and return its combined "
                    f"stdout and stderr. Commands time out after {self.config.shell_timeout:g} "
                    f"seconds. Output past {self.config.shell_output_cap} characters is cut "
                    "to its head and tail, and the cut names the lines left out and the "
                    "`sed -n` command that shows them: read one file per call."
                ),
                "parameters": {
                    "type": "object",
                    "properties": {
                        "command": {"type": "string", "description": "The command to run."}
                    },
                    "required": ["command"],
                },
            },
        }

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
    ) -> vf.ProgramResult:
        system_prompt, prompt = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = []
        if system_prompt:
            messages.append({"role": "system", "content": system_prompt})
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        elif prompt is not None:
            messages.extend(message_to_wire(message) for message in prompt)
        disabled = set(self.config.disabled_tools or ())
        async with (
            AsyncOpenAI(base_url=endpoint, api_key=secret, timeout=MODEL_TIMEOUT) as client,
            AsyncExitStack() as stack,
        ):
            specs = {
                name: {"url": url, "timeout": self.config.tool_timeout}
                for name, url in mcp_urls.items()
            }
            mcp_tools, dispatch, servers = await asyncio.wait_for(
                connect_mcp({"mcpServers": specs}, stack, reserved={SHELL_TOOL}),
                MCP_CONNECT_TIMEOUT,
            )
            clients = MCPClients(specs, servers, stack)
            tools = [
                tool
                for tool in [self.shell_tool(), *mcp_tools]
                if tool["function"]["name"] not in disabled
            ]
            offered = {tool["function"]["name"] for tool in tools}
            turns = 0
            while self.config.max_turns is None or turns < self.config.max_turns:
                try:
                    completion = await chat(client, ctx.model, messages, tools)
                except APIStatusError as error:
                    # Also how a refused call (agent limit, @stop) ends the loop: verifiers
                    # ignores the exit code once the trace has a stop condition.
                    return vf.ProgramResult(1, "", f"model call failed: {error}")
                except SystemExit as exit_:  # `chat` exits like the chat program it serves
                    if exit_.code != MODEL_TRANSPORT_ERROR_EXIT_CODE:
                        raise
                    detail = f"model connection failed: {exit_.__cause__!r}"
                    return vf.ProgramResult(MODEL_TRANSPORT_ERROR_EXIT_CODE, "", detail)
                turns += 1
                message = completion.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    return vf.ProgramResult(0, "", "")
                # Only function tools are offered; anything else is an unknown tool.
                calls = [
                    (call.id, call.function.name, call.function.arguments)
                    if isinstance(call, ChatCompletionMessageFunctionToolCall)
                    else (call.id, "", "")
                    for call in message.tool_calls
                ]
                results = [
                    self._tool_result(name, arguments, offered, runtime, dispatch, clients)
                    for _, name, arguments in calls
                ]
                if self.config.parallel_tool_calls:
                    contents = await asyncio.gather(*results)
                else:
                    contents = [await result for result in results]
                messages.extend(
                    {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}
                    for (call_id, name, _), content in zip(calls, contents, strict=True)
                )
            trace.stop("max_turns")
            return vf.ProgramResult(0, "", "")

    async def _tool_result(
        self,
        name: str,
        raw_arguments: str,
        offered: set[str],
        runtime: vf.Runtime,
        dispatch: dict[str, tuple[str, str]],
        clients: MCPClients,
    ) -> ToolResult:
        """Run one tool call; every failure becomes the result text the model reads."""
        if name not in offered:
            return f"error: unknown tool {name!r}; the tools are: {', '.join(sorted(offered))}"
        try:
            arguments = json.loads(raw_arguments or "{}")
        except json.JSONDecodeError as error:
            return f"error: invalid JSON in tool arguments ({error}); resend the call"
        if not isinstance(arguments, dict):
            return f"error: tool arguments must be a JSON object, got {type(arguments).__name__}"
        try:
            if name == SHELL_TOOL:
                return await self.shell(runtime, arguments.get("command"))
            # The MCP client sends UTF-8: a lone surrogate would drop the connection.
            if (problem := unencodable(arguments)) is not None:
                return f"error: {name} was not called: {problem}"
            async with clients.borrow(dispatch[name][0]) as servers:
                return await call_mcp(servers, dispatch, name, arguments)
        except Exception as error:  # the model reads the failure; the loop goes on
            return f"error: {name} failed: {type(error).__name__}: {error}"

    async def shell(self, runtime: vf.Runtime, command: object) -> str:
        """Run `command` with ``sh -c`` in `runtime`: stdout and stderr interleaved, a non-zero
        exit code noted, the output cut to ``shell_output_cap`` characters."""
        if not isinstance(command, str) or not command.strip():
            return "error: `command` must be a non-empty string"
        timeout = self.config.shell_timeout
        try:
            async with asyncio.timeout(timeout):
                result = await runtime.run(
                    ["sh", "-c", 'sh -c "$1" 2>&1', "sh", command], self.config.resolved_env
                )
        except TimeoutError:
            return f"error: the command timed out after {timeout:g} seconds"
        output = result.stdout + result.stderr
        if result.exit_code:
            output += f"\n[exit code {result.exit_code}]"
        return cut_output(output, self.config.shell_output_cap)
