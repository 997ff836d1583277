"""The reference grader's responder: the `ChatServer` reply for a conversation, and how it
reads the grader box's files through `shell` (length-framed streams in base64 chunks)."""

from __future__ import annotations

import base64
import binascii
import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from group_grade.chat_server import Reply
from group_grade.hidden_tests import TEST_FILE
from group_grade.layout import MANIFEST_FILE
from group_grade.manifest import GroupManifest
from group_grade.reference.audit import GroupMaterials
from group_grade.reference.ranking import assess, build_verdict, hidden_report, repairs

READ_CHUNK = 12_000
"""Base64 characters per `shell` read: below the harness's default output cap."""
MAX_SUBMISSIONS = 3
STAGED = ("turns.json", "patch.diff", "tests.txt")

# ---------------------------------------------------------------------------------------------
# The conversation


@dataclass(frozen=True)
class PastCall:
    name: str
    arguments: dict[str, Any]
    result: str | None


def text_of(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def past_calls(messages: Sequence[dict[str, Any]]) -> list[PastCall]:
    """Every tool call the grader made, in order, with its result (None: not answered)."""
    results = {
        m.get("tool_call_id"): text_of(m.get("content"))
        for m in messages
        if m.get("role") == "tool"
    }
    calls = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except ValueError:
                arguments = {}
            calls.append(
                PastCall(
                    name=function.get("name", ""),
                    arguments=arguments if isinstance(arguments, dict) else {},
                    result=results.get(call.get("id")),
                )
            )
    return calls


@dataclass(frozen=True)
class ToolNames:
    shell: str | None
    hidden_tests: str | None
    submit: str | None


def tool_names(tools: Sequence[dict[str, Any]]) -> ToolNames:
    """The offered names, bare or server-prefixed (``<server>_<tool>``)."""
    names = [t.get("function", {}).get("name", "") for t in tools]

    def find(*bases: str, avoid: str = "\0") -> str | None:
        for base in bases:
            for name in names:
                if (name == base or name.endswith(f"_{base}")) and not name.endswith(avoid):
                    return name
        return None

    return ToolNames(
        shell=find("shell", "bash", avoid="candidate_shell"),
        hidden_tests=find("run_hidden_tests"),
        submit=find("submit_verdict"),
    )


# ---------------------------------------------------------------------------------------------
# Reading the staged files through `shell`

_LEN = re.compile(r"LEN<(\d+)>")
_B64 = re.compile(r"B64<([A-Za-z0-9+/=\s]*)>")
_RANGE = re.compile(r"cut -c (\d+)-(\d+)")
_TAG = re.compile(r"^: stream (\w+)$", re.MULTILINE)


def _stream(paths: Sequence[str]) -> str:
    files = " ".join(shlex.quote(path) for path in paths)
    return (
        f'for f in {files}; do if [ -f "$f" ]; then printf \'%s\\n\' "$f"; '
        'wc -c < "$f"; cat "$f"; fi; done | base64 | tr -d "\\n"'
    )


def read_command(
    root: str, paths: Sequence[str], start: int, *, tag: str, probe: bool = False
) -> str:
    """One chunk (characters ``start`` .. ``start + READ_CHUNK - 1``) of the base64 stream of
    ``paths`` (relative to ``root``), named ``tag``; the probe also prints its length."""
    stream = _stream(paths)
    lines = [f": stream {tag}", f"cd {shlex.quote(root)} || exit 1"]
    if probe:
        lines.append(f"printf 'LEN<%s>\\n' \"$({stream} | wc -c | tr -d ' ')\"")
    stop = start + READ_CHUNK - 1
    lines.append(f"printf 'B64<%s>\\n' \"$({stream} | cut -c {start}-{stop})\"")
    return "\n".join(lines)


def parse_stream(data: bytes) -> dict[str, bytes]:
    """``path\\nsize\\ncontent`` frames -> path -> content; raises ValueError."""
    files: dict[str, bytes] = {}
    at = 0
    while at < len(data):
        path_end = data.index(b"\n", at)
        size_end = data.index(b"\n", path_end + 1)
        size = int(data[path_end + 1 : size_end].strip())
        content = data[size_end + 1 : size_end + 1 + size]
        if len(content) != size:
            raise ValueError("truncated stream")
        files[data[at:path_end].decode()] = content
        at = size_end + 1 + size
    return files


@dataclass(frozen=True)
class ReadState:
    """Where reading one stream stands: its length (None: not probed) and the chunks read."""

    total: int | None
    chunks: dict[int, str]

    def missing(self) -> list[int]:
        if self.total is None:
            return []
        return [s for s in range(1, self.total + 1, READ_CHUNK) if s not in self.chunks]

    def files(self) -> dict[str, bytes]:
        if self.total is None or self.missing():
            return {}
        joined = "".join(self.chunks[s] for s in sorted(self.chunks))
        try:
            return parse_stream(base64.b64decode(joined, validate=True))
        except (ValueError, binascii.Error, UnicodeDecodeError):
            return {}


def read_state(calls: Sequence[PastCall], shell: str | None, tag: str) -> ReadState:
    """The reading of stream ``tag`` so far, from the grader's own `shell` calls."""
    total: int | None = None
    chunks: dict[int, str] = {}
    for call in calls:
        command = str(call.arguments.get("command", ""))
        if call.name != shell or call.result is None or not (r := _RANGE.search(command)):
            continue
        if (named := _TAG.search(command)) is None or named.group(1) != tag:
            continue
        if "LEN<" in command:
            length = _LEN.search(call.result)
            total = int(length.group(1)) if length else 0
        chunk = _B64.search(call.result)
        chunks[int(r.group(1))] = "".join(chunk.group(1).split()) if chunk else ""
    return ReadState(total=total, chunks=chunks)


# ---------------------------------------------------------------------------------------------
# The reply


def manifest_path(messages: Sequence[dict[str, Any]]) -> str | None:
    """Where the prompt says ``group.json`` is (None: no group-grade prompt)."""
    marker = f"/{MANIFEST_FILE}`"
    for message in messages:
        if message.get("role") not in ("system", "user"):
            continue
        text = text_of(message.get("content"))
        if (end := text.find(marker)) >= 0 and (start := text.rfind("`", 0, end)) >= 0:
            return text[start + 1 : end + len(marker) - 1]
    return None


def read_manifest(files: dict[str, bytes]) -> GroupManifest | None:
    raw = files.get(MANIFEST_FILE)
    try:
        return GroupManifest.model_validate_json(raw) if raw is not None else None
    except ValueError:
        return None


REFERENCE_FIX = re.compile(r"\.(?:patch|diff)$")


def staged_paths(group: GroupManifest) -> list[str]:
    """The files the audit and the ranking read, relative to the grade root: the task
    statement, the reference fixes and hidden test files among the privileged materials,
    and every candidate's ``STAGED`` files."""
    privileged = [p for p in group.privileged if REFERENCE_FIX.search(p) or TEST_FILE.search(p)]
    return [
        group.task,
        *privileged,
        *(
            path
            for c in group.candidates
            for path in c.files
            if path.removeprefix(f"{c.label}/") in STAGED
        ),
    ]


def group_materials(group: GroupManifest, files: dict[str, bytes]) -> GroupMaterials:
    def text(path: str) -> str:
        return files.get(path, b"").decode(errors="replace")

    return GroupMaterials(
        task=text(group.task),
        reference_patches=tuple(text(p) for p in group.privileged if REFERENCE_FIX.search(p)),
        hidden_tests=tuple(text(p) for p in group.privileged if TEST_FILE.search(p)),
    )


def read_next(shell: str, root: str, paths: Sequence[str], state: ReadState, tag: str) -> Reply:
    """The `shell` calls that read the rest of stream ``tag``."""
    if state.total is None:
        command = read_command(root, paths, 1, tag=tag, probe=True)
        return Reply(tool_calls=[(shell, {"command": command})])
    return Reply(
        tool_calls=[
            (shell, {"command": read_command(root, paths, start, tag=tag)})
            for start in state.missing()
        ]
    )


@dataclass(frozen=True)
class ReferenceGrader:
    """A `ChatServer` responder: the next reply of the reference grader for a request body.
    Stateless: the same conversation always gets the same reply."""

    max_submissions: int = MAX_SUBMISSIONS

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        path = manifest_path(messages)
        if path is None:
            return Reply("I can only grade a group-grade prompt; none was found.")
        tools = tool_names(body.get("tools") or [])
        if tools.submit is None:
            return Reply("The submit_verdict tool is not offered; I cannot submit a verdict.")
        if tools.shell is None:
            return Reply("The shell tool is not offered; I cannot read the group.")
        calls = past_calls(messages)
        root = path.removesuffix(f"/{MANIFEST_FILE}") or "/"
        manifest_read = read_state(calls, tools.shell, "manifest")
        if manifest_read.total is None or manifest_read.missing():
            return read_next(tools.shell, root, [MANIFEST_FILE], manifest_read, "manifest")
        group = read_manifest(manifest_read.files())
        if group is None:
            return Reply(f"Stopping: {path} could not be read as the group's manifest.")
        paths = staged_paths(group)
        reading = read_state(calls, tools.shell, "files")
        if reading.total is None or reading.missing():
            return read_next(tools.shell, group.grade_root, paths, reading, "files")
        files = reading.files()
        tested = {
            str(c.arguments.get("label")): hidden_report(c.result)
            for c in calls
            if c.name == tools.hidden_tests
        }
        if tools.hidden_tests is not None and (
            untested := [c.label for c in group.candidates if c.box and c.label not in tested]
        ):
            return Reply(tool_calls=[(tools.hidden_tests, {"label": label}) for label in untested])
        submissions = [c for c in calls if c.name == tools.submit]
        answers = [c.result or "" for c in submissions]
        if any(a.startswith("ACCEPTED") for a in answers):
            return Reply("The verdict was accepted; the review is complete.")
        if len(submissions) >= self.max_submissions:
            return Reply(f"Stopping: {len(submissions)} verdicts were rejected.")
        materials = group_materials(group, files)
        assessments = [assess(c, files, tested.get(c.label), materials) for c in group.candidates]
        verdict = build_verdict(group, assessments, repairs(answers)).model_dump(mode="json")
        if submissions and submissions[-1].arguments == verdict:
            return Reply("Stopping: the rejection names nothing this grader can repair.")
        return Reply(tool_calls=[(tools.submit, verdict)])
