"""The turn text format: how a candidate's trace becomes numbered turns the grader reads.

A turn is one model response: its visible content, then each tool call as a
``[tool_call NAME]`` section, then each result as a ``[tool_result NAME]`` section. Section
headers stand alone on their line; a line of any section that looks like a header is escaped
with a leading backslash, so a candidate cannot forge a section boundary. The **policy text**
of a turn is what the candidate itself wrote: content and tool-call arguments, never results.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import verifiers.v1 as vf
from verifiers.v1.types import AssistantMessage, ToolMessage, content_text

ELIDED = "[turn elided]"
TOOL_RESULT_CAP = 4000
KEEP_HEAD_TURNS = 10
KEEP_TAIL_TURNS = 10

_HEADER = re.compile(r"^\[(tool_call|tool_result) [^\n\]]*\]$")
_HEADER_LIKE = re.compile(r"^(\\*)(\[(?:tool_call|tool_result)\b.*)$", re.MULTILINE)


def escape_headers(text: str) -> str:
    """Prefix every header-like line (escaped or not) with one more backslash."""
    return _HEADER_LIKE.sub(lambda m: "\\" + m.group(1) + m.group(2), text)


def cut_middle(text: str, cap: int) -> str:
    """``text`` unchanged up to ``cap`` characters, else head + marker + tail."""
    if len(text) <= cap:
        return text
    half = cap // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters cut ...]\n{text[-half:]}"


def render_arguments(arguments: str) -> str:
    """Tool-call arguments as the grader reads them: a JSON object becomes ``key: value``
    lines with string values unescaped (so commands read as typed); anything else verbatim."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments
    if not isinstance(parsed, dict):
        return arguments
    lines = []
    for key, value in parsed.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines.append(f"{key}: {shown}")
    return "\n".join(lines)


def _header_name(name: str) -> str:
    return re.sub(r"[\]\n\r]", "_", name) or "tool"


def _section(header: str, body: str) -> str:
    return f"[{header}]\n{escape_headers(body)}" if body else f"[{header}]"


def render_turn(
    message: AssistantMessage,
    results: Sequence[ToolMessage],
    *,
    tool_result_cap: int = TOOL_RESULT_CAP,
) -> str:
    parts: list[str] = []
    if message.content:
        parts.append(escape_headers(message.content))
    for call in message.tool_calls or []:
        name = f"{call.namespace}.{call.name}" if call.namespace else call.name
        parts.append(_section(f"tool_call {_header_name(name)}", render_arguments(call.arguments)))
    for result in results:
        text = cut_middle(content_text(result.content), tool_result_cap)
        parts.append(_section(f"tool_result {_header_name(result.name or '')}", text))
    return "\n".join(parts)


def transcript_turns(trace: vf.Trace, *, tool_result_cap: int = TOOL_RESULT_CAP) -> list[str]:
    """One text per sampled model response of ``trace``, with the results of its tool calls."""
    results: dict[str, list[ToolMessage]] = {}
    for node in trace.nodes:
        if isinstance(node.message, ToolMessage):
            results.setdefault(node.message.tool_call_id, []).append(node.message)
    turns = []
    for message in trace.assistant_messages:
        own = [r for call in message.tool_calls or [] for r in results.get(call.id, [])]
        turns.append(render_turn(message, own, tool_result_cap=tool_result_cap))
    return turns


def policy_text(turn: str) -> str:
    """What the candidate wrote in ``turn``: content and tool-call arguments, no results.
    Section headers themselves are not part of it; an elided turn has none."""
    if turn == ELIDED:
        return ""
    kept: list[str] = []
    own = True
    for line in turn.split("\n"):
        header = _HEADER.match(line)
        if header:
            own = header.group(1) == "tool_call"
        elif own:
            kept.append(line)
    return "\n".join(kept)


def elide(
    turns: Sequence[str], *, head: int = KEEP_HEAD_TURNS, tail: int = KEEP_TAIL_TURNS
) -> list[str]:
    """Keep the first ``head`` and last ``tail`` turns; the middle ones become ``ELIDED``
    so turn numbers keep their meaning."""
    if len(turns) <= head + tail:
        return list(turns)
    middle = len(turns) - head - tail
    return [*turns[:head], *([ELIDED] * middle), *turns[len(turns) - tail :]]
