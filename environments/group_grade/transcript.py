"""The turn text format: how a candidate's trace becomes numbered turns the grader reads.

A turn is one model response: its visible content, then each tool call as a
``[tool_call NAME]`` section, then each result as a ``[tool_result NAME]`` section. Section
headers stand alone on their line (lines split at ``\\n``); a line of any section that a reader
could take for a header (after any line break ``str.splitlines`` knows, leading blanks,
invisible characters or fullwidth forms) is escaped with a leading backslash, and a tool name
in a header holds no line break, so a candidate cannot forge a section boundary. The **own
text** of a turn is what the candidate itself wrote: content and tool-call arguments, never
results.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence

import verifiers.v1 as vf
from verifiers.v1.types import AssistantMessage, ToolMessage, content_text

ELIDED = "[turn elided]"
TOOL_RESULT_CAP = 4000
KEEP_HEAD_TURNS = 10
KEEP_TAIL_TURNS = 10

_HEADER = re.compile(r"^\[(tool_call|tool_result) [^\n\]]*\]$")
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""Every character ``str.splitlines`` ends a line at: a reader may start a line after any of
them, though only ``\\n`` separates the sections of a turn."""


INVISIBLE_RANGES = (
    (0x0, 0x8), (0xE, 0x1B), (0x1F, 0x1F), (0x7F, 0x84), (0x86, 0x9F), (0xAD, 0xAD),
    (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD), (0x70F, 0x70F), (0x890, 0x891),
    (0x8E2, 0x8E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064),
    (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD),
    (0x110CD, 0x110CD), (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)  # fmt: skip
"""The characters a reader may not see, as code point ranges: controls (but the line breaks
and tab) and format characters (zero-width spaces and joiners, byte order marks, bidi
controls); Unicode categories Cc and Cf (a test checks them against ``unicodedata``)."""
_INVISIBLE = re.compile(
    "["
    + "".join(
        re.escape(chr(a)) + ("" if a == b else "-" + re.escape(chr(b))) for a, b in INVISIBLE_RANGES
    )
    + "]"
)
_SHOWN_HEADER = re.compile(r"[\s\\]*\[(?:tool_call|tool_result)\b")
_MARK = "[tool_"
"""Every header contains it."""


def _shown(text: str) -> str:
    """``text`` as a reader may take it: compatibility forms as what they stand for (a
    fullwidth bracket is a bracket), invisible characters gone."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    return _INVISIBLE.sub("", text)


_ASCII_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e"
_ASCII_LEAD = re.compile(r"[ \t\x1f\x00-\x08\x0e-\x1b\x7f\\]*")
"""What may stand ahead of a header-like ``[tool_...`` in an ASCII line: blanks, control
characters, backslashes."""
_HEADER_WORD = re.compile(r"\[(?:tool_call|tool_result)\b")


def _escape_ascii(text: str) -> str:
    """``escape_headers`` for ASCII text: a backslash at the start of each line (ended by any
    line break) whose ``[tool_call``/``[tool_result`` has only ``_ASCII_LEAD`` before it."""
    starts: list[int] = []
    at = text.find("[tool_")
    while at >= 0:
        start = max(text.rfind(brk, 0, at) for brk in _ASCII_BREAKS) + 1
        fits = _HEADER_WORD.match(text, at) and _ASCII_LEAD.fullmatch(text, start, at)
        if fits and (not starts or starts[-1] != start):
            starts.append(start)
        at = text.find("[tool_", at + 1)
    if not starts:
        return text
    parts, last = [], 0
    for start in starts:
        parts += [text[last:start], "\\"]
        last = start
    parts.append(text[last:])
    return "".join(parts)


def escape_headers(text: str) -> str:
    """Prefix with one more backslash every line that a reader could take for a section
    header: a line that starts like ``[tool_call`` or ``[tool_result`` once blanks, invisible
    characters and compatibility forms are set aside, with lines ended by any line break a
    reader may honour (``LINE_BREAKS``). Escaped, it starts with a visible backslash, and the
    parse (``own_text``) never takes it for a header either.

    Nearly every text is ASCII without ``tool_``: returned at once. (In ASCII text, a control
    character is looked through ahead of the header, not inside its word.)"""
    if text.isascii():
        return text if "[tool_" not in text else _escape_ascii(text)
    if "tool_" not in text and "tool_" not in _shown(text):
        return text
    lines = text.splitlines(keepends=True)
    changed = False
    for i, line in enumerate(lines):
        if _SHOWN_HEADER.match(_shown(line)):
            lines[i] = "\\" + line
            changed = True
    return "".join(lines) if changed else text


def one_line(text: str, cap: int | None = None) -> str:
    """``text`` on one line (whitespace runs become one space), cut to ``cap`` characters
    (the last three ``...``) when longer."""
    if cap is None:
        return " ".join(text.split())
    words = text.split(None, cap)  # ``cap`` words and their spaces are already too long
    flat = " ".join(words[:cap])
    return flat if len(flat) <= cap and len(words) <= cap else flat[: cap - 3] + "..."


def cut_middle(text: str, cap: int) -> str:
    """``text`` unchanged up to ``cap`` characters, else head + marker + tail."""
    if len(text) <= cap:
        return text
    half = cap // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters cut ...]\n{text[-half:]}"


def cut_output(text: str, cap: int, *, lines_known: bool = True) -> str:
    """A command's output for the grader: unchanged up to ``cap`` characters, else its head
    and tail around a marker that says how much was cut, which lines, and how to read them
    (run the command again through ``sed -n 'A,Bp'``, or write the output to a file and read
    it in parts). ``lines_known=False``: the output had already lost its middle (the box kept
    only its head and tail), so line numbers past the head are not given."""
    if len(text) <= cap:
        return text
    half = cap // 2
    end = len(text) - half  # the tail starts here
    cut = end - half
    if lines_known:
        first = text.count("\n", 0, half) + 1
        last = text.count("\n", 0, end - 1) + 1
        total = text.count("\n") + (0 if text.endswith("\n") else 1)
        how = (
            f"lines {first}-{last} of {total}; to read them, run the command again piped to "
            f"`sed -n '{first},{last}p'` (in parts if that is long), or write its output to a "
            "file and read the file in parts"
        )
    else:
        how = (
            "the box kept only the head and tail of an even longer output; write the output to "
            "a file and read the file in parts (`sed -n 'A,Bp' FILE`, `grep -n`)"
        )
    return f"{text[:half]}\n[... {cut} characters cut: {how} ...]\n{text[end:]}"


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


_HEADER_NAME_UNSAFE = re.compile("[" + re.escape("]" + LINE_BREAKS) + "]|" + _INVISIBLE.pattern)


def _header_name(name: str) -> str:
    """A tool name fit for a header line: no ``]``, no line break, nothing invisible (a
    candidate names the tools it calls)."""
    if name.isascii() and name.isprintable() and "]" not in name:
        return name or "tool"  # nearly every name: no control, format or break character
    return _HEADER_NAME_UNSAFE.sub("_", name) or "tool"


def render_turn(
    message: AssistantMessage,
    results: Sequence[ToolMessage],
    *,
    tool_result_cap: int = TOOL_RESULT_CAP,
) -> tuple[str, str]:
    """The turn's text, and its own text (``own_text`` of that text, taken from the
    parts as they are joined instead of parsed back)."""
    parts: list[str] = []  # joined with newlines once, so large bodies are copied once
    own: list[str] = []
    if message.content:
        text = escape_headers(message.content)
        parts.append(text)
        own.append(text)
    for call in message.tool_calls or []:
        name = f"{call.namespace}.{call.name}" if call.namespace else call.name
        parts.append(f"[tool_call {_header_name(name)}]")
        if arguments := render_arguments(call.arguments):
            text = escape_headers(arguments)
            parts.append(text)
            own.append(text)
    for result in results:
        parts.append(f"[tool_result {_header_name(result.name or '')}]")
        if output := cut_middle(content_text(result.content), tool_result_cap):
            parts.append(escape_headers(output))
    return "\n".join(parts), "\n".join(own)


def _render_turns(
    trace: vf.Trace, elide_middle: tuple[int, int] | None, tool_result_cap: int
) -> tuple[list[str], list[str]]:
    """Turn texts of ``trace`` and their own texts. With ``elide_middle = (head, tail)``
    the turns between the first ``head`` and the last ``tail`` are ``ELIDED`` without being
    rendered."""
    messages = trace.assistant_messages
    total = len(messages)
    if elide_middle is None or total <= sum(elide_middle):
        wanted = [True] * total
    else:
        head, tail = elide_middle
        wanted = [i < head or i >= total - tail for i in range(total)]
    calls = {
        call.id
        for message, want in zip(messages, wanted, strict=True)
        if want
        for call in message.tool_calls or []
    }
    results: dict[str, list[ToolMessage]] = {}
    for node in trace.nodes:
        message = node.message
        if isinstance(message, ToolMessage) and message.tool_call_id in calls:
            results.setdefault(message.tool_call_id, []).append(message)
    turns: list[str] = []
    own_texts: list[str] = []
    for message, want in zip(messages, wanted, strict=True):
        if not want:
            turns.append(ELIDED)
            own_texts.append("")
            continue
        answers = [r for call in message.tool_calls or [] for r in results.get(call.id, [])]
        turn, own = render_turn(message, answers, tool_result_cap=tool_result_cap)
        turns.append(turn)
        own_texts.append(own)
    return turns, own_texts


def transcript_turns(trace: vf.Trace, *, tool_result_cap: int = TOOL_RESULT_CAP) -> list[str]:
    """One text per sampled model response of ``trace``, with the results of its tool calls."""
    return _render_turns(trace, None, tool_result_cap)[0]


def turns_and_own_texts(
    trace: vf.Trace,
    *,
    elided: bool = False,
    head: int = KEEP_HEAD_TURNS,
    tail: int = KEEP_TAIL_TURNS,
    tool_result_cap: int = TOOL_RESULT_CAP,
) -> tuple[list[str], list[str]]:
    """``transcript_turns(trace)`` and ``own_text`` of each turn. With ``elided``, every turn
    but the first ``head`` and the last ``tail`` is ``ELIDED`` (not even rendered), so turn
    numbers keep their meaning."""
    return _render_turns(trace, (head, tail) if elided else None, tool_result_cap)


def _next_line_starting(turn: str, pos: int, mark: str) -> int:
    """Start of the first line at or after line start ``pos`` that begins with ``mark``,
    or -1."""
    if pos == 0 and turn.startswith(mark):
        return 0
    found = turn.find("\n" + mark, max(pos - 1, 0))
    return found + 1 if found >= 0 else -1


_CALL_MARK = "[tool_call "


def own_text(turn: str) -> str:
    """What the candidate wrote in ``turn``: content and tool-call arguments, no results.
    Section headers themselves are not part of it; an elided turn has none."""
    if turn == ELIDED:
        return ""
    # Only lines that begin with the header mark can be headers: jump between them with
    # str.find instead of splitting and matching every line of long tool results. Inside
    # results only a tool-call header changes anything, so look for that one alone there.
    kept: list[str] = []
    own = True
    start: int | None = 0  # first line of the current section (None: no line left)
    at = _next_line_starting(turn, 0, _MARK)
    while at >= 0:
        end = turn.find("\n", at)
        header = _HEADER.match(turn[at:end] if end >= 0 else turn[at:])
        if header:
            if own and at > start:
                kept.append(turn[start : at - 1])
            own = header.group(1) == "tool_call"
            start = end + 1 if end >= 0 else None
        if end < 0:
            break
        at = _next_line_starting(turn, end + 1, _MARK if own else _CALL_MARK)
    if own and start is not None:
        kept.append(turn[start:])
    return "\n".join(kept)


def turn_sections(turn: str) -> list[tuple[str, int, int]]:
    """``(kind, start, end)`` spans of ``turn`` in order: ``header`` lines, and between
    them ``own`` text (content and tool-call arguments: joined with newlines, the own
    spans are ``own_text(turn)``) or ``result`` text. The newlines around header lines
    belong to no span. An elided turn is one ``elided`` span."""
    if turn == ELIDED:
        return [("elided", 0, len(turn))]
    spans: list[tuple[str, int, int]] = []
    own = True
    start = 0
    at = _next_line_starting(turn, 0, _MARK)
    while at >= 0:
        end = turn.find("\n", at)
        stop = end if end >= 0 else len(turn)
        header = _HEADER.match(turn[at:stop])
        if header and (own or header.group(1) == "tool_call"):
            if at > start:
                spans.append(("own" if own else "result", start, at - 1))
            spans.append(("header", at, stop))
            own = header.group(1) == "tool_call"
            start = stop + 1
        if end < 0:
            break
        at = _next_line_starting(turn, end + 1, _MARK if own else _CALL_MARK)
    if start <= len(turn) and (start < len(turn) or own):
        spans.append(("own" if own else "result", start, len(turn)))
    return spans
