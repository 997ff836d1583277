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


def turns_json(turns: list[str]) -> str:
    """``json.dumps(turns, indent=1, ensure_ascii=False)``, encoded by pydantic-core (the same
    text, several times faster on long transcripts); the json module handles what it refuses
    (lone surrogates)."""
    try:
        return pydantic_core.to_json(turns, indent=1).decode()
    except (ValueError, UnicodeError):
        return json.dumps(turns, indent=1, ensure_ascii=False)


def grader_files(data: GroupGradeData, grade_root: str) -> dict[str, str]:
    """Every file staged in the grader box. Rewards and test output are left out in
    advantages mode, where the grader judges without them."""
    root = grade_root.rstrip("/") or "/"
    files = {f"{root}/task.md": render_task(data)}
    for path, content in data.privileged.items():
        files[f"{root}/{PRIVILEGED_DIR}/{safe_relative(path)}"] = content
    for c in data.candidates:
        base = f"{root}/{c.label}"
        files[f"{base}/turns.json"] = turns_json(c.turns)
        files[f"{base}/digest.md"] = render_digest(c, data.mode)
        if c.patch is not None:
            files[f"{base}/patch.diff"] = c.patch
        if c.test_output is not None and data.mode == "rewards":
            files[f"{base}/tests.txt"] = c.test_output
        for path, content in c.files.items():
            files[f"{base}/files/{safe_relative(path)}"] = content
    return files
