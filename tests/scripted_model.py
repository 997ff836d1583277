"""A scripted chat model for tests: a `ChatServer` policy replaying a list of steps."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from group_grade.chat_server import Reply

Step = Reply | Callable[[dict[str, Any]], Reply]


class ScriptedModel:
    """Answer with ``steps[n]`` where n is the number of assistant turns the request's
    conversation already has; a callable step gets the request body. Past the last step the
    policy raises, so the server answers 500 instead of looping forever."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)

    def __call__(self, body: dict[str, Any]) -> Reply:
        turn = sum(1 for message in body.get("messages", []) if message.get("role") == "assistant")
        if turn >= len(self.steps):
            raise IndexError(f"script has {len(self.steps)} steps, conversation is at turn {turn}")
        step = self.steps[turn]
        return step if isinstance(step, Reply) else step(body)


def text_of(content: Any) -> str:
    """Message content (a string or a list of content parts) as plain text."""
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def tool_results(body: dict[str, Any]) -> list[str]:
    """The text of every tool result in the request's conversation, in order."""
    return [text_of(m.get("content")) for m in body.get("messages", []) if m.get("role") == "tool"]


def last_tool_result(body: dict[str, Any]) -> str | None:
    """The text of the latest tool result in the request's conversation, if any."""
    results = tool_results(body)
    return results[-1] if results else None


def offered_tools(body: dict[str, Any]) -> list[str]:
    """The names of the tools the request offers the model."""
    return [tool["function"]["name"] for tool in body.get("tools") or []]
