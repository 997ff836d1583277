"""The grader box's layout under the grade root (design.md section 7), as path -> content."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

import pydantic_core

from group_grade.data import GroupGradeData
from group_grade.digest import render_digest

VERDICT_FILE = "verdict.json"
PRIVILEGED_DIR = "privileged"


def safe_relative(path: str) -> str:
    """``path`` as a relative POSIX path that stays below its root; raises ValueError."""
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        raise ValueError(f"file path {path!r} must be relative and stay inside its folder")
    return pure.as_posix()


def render_task(data: GroupGradeData) -> str:
    parts = ["# The task the candidates were given", ""]
    if data.task_system_prompt:
        parts += ["## System prompt", "", data.task_system_prompt.strip(), ""]
    parts += ["## Prompt", "", data.task_prompt.strip() or "(not recorded)", ""]
    return "\n".join(parts)


def turns_json(turns: list[str]) -> bytes:
    """``json.dumps(turns, indent=1, ensure_ascii=False)`` in UTF-8, encoded by pydantic-core
    (the same text, several times faster on long transcripts); the json module handles what
    it refuses (lone surrogates, kept as escapes)."""
    try:
        return pydantic_core.to_json(turns, indent=1)
    except (ValueError, UnicodeError):
        return _utf8(json.dumps(turns, indent=1, ensure_ascii=False))


def _utf8(text: str) -> bytes:
    """UTF-8; a lone surrogate (which UTF-8 cannot hold) is written as its escape."""
    return text.encode(errors="backslashreplace")


def grader_files(data: GroupGradeData, grade_root: str) -> dict[str, bytes]:
    """Every file staged in the grader box, as the bytes written. Rewards and test output
    are left out in advantages mode, where the grader judges without them."""
    root = grade_root.rstrip("/") or "/"
    files = {f"{root}/task.md": _utf8(render_task(data))}
    for path, content in data.privileged.items():
        files[f"{root}/{PRIVILEGED_DIR}/{safe_relative(path)}"] = _utf8(content)
    for c in data.candidates:
        base = f"{root}/{c.label}"
        files[f"{base}/turns.json"] = turns_json(c.turns)
        files[f"{base}/digest.md"] = _utf8(render_digest(c, data.mode))
        if c.patch is not None:
            files[f"{base}/patch.diff"] = _utf8(c.patch)
        if c.test_output is not None and data.mode == "rewards":
            files[f"{base}/tests.txt"] = _utf8(c.test_output)
        for path, content in c.files.items():
            files[f"{base}/files/{safe_relative(path)}"] = _utf8(content)
    return files
