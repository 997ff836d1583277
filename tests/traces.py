"""Real ``vf.Trace`` objects built from verifiers' own message types, for tests and benchmarks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import verifiers.v1 as vf


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict
    result: str


@dataclass(frozen=True)
class Turn:
    content: str = ""
    calls: Sequence[Call] = field(default_factory=tuple)


def make_trace(
    turns: Sequence[Turn],
    *,
    reward: float | None = None,
    info: dict | None = None,
    prompt: str = "Fix the bug in calc.py so that the tests pass.",
    trace_id: str | None = None,
) -> vf.Trace:
    nodes = [vf.MessageNode(parent=None, message=vf.UserMessage(content=prompt))]
    for number, turn in enumerate(turns):
        tool_calls = [
            vf.ToolCall(
                id=f"call-{number}-{k}", name=call.name, arguments=json.dumps(call.arguments)
            )
            for k, call in enumerate(turn.calls)
        ]
        message = vf.AssistantMessage(content=turn.content or None, tool_calls=tool_calls or None)
        nodes.append(vf.MessageNode(parent=len(nodes) - 1, message=message, sampled=True))
        for tool_call, call in zip(tool_calls, turn.calls, strict=True):
            result = vf.ToolMessage(tool_call_id=tool_call.id, content=call.result, name=call.name)
            nodes.append(vf.MessageNode(parent=len(nodes) - 1, message=result))
    trace = vf.Trace(
        agent=vf.AgentInfo(config=vf.AgentConfig()),
        task=vf.TraceTask(type="SolveTask", data=vf.TaskData(prompt=prompt), key="k", hash="h"),
        nodes=nodes,
        info=dict(info or {}),
        stop_condition="agent_completed",
        **({"id": trace_id} if trace_id else {}),
    )
    if reward is not None:
        trace.record_reward("tests", reward)
    return trace


def simple_trace(n_turns: int, *, reward: float | None, tag: str = "") -> vf.Trace:
    turns = [
        Turn(
            content=f"{tag} step {i}: I will look at the code and run the tests now.",
            calls=[Call("bash", {"command": f"cat file_{i}.py"}, f"{tag} output of step {i}")],
        )
        for i in range(1, n_turns + 1)
    ]
    return make_trace(turns, reward=reward)
