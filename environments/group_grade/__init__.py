"""group-grade: grade a whole group of policy attempts and turn the verdict into advantages.

The env's classes are imported on first use, so that importing the pure core (rows,
transcripts, verdict rules, citations, advantages, the grade record) loads nothing above it.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["GraderHarness", "GroupGradeEnv", "GroupGradeTaskset"]

_HOMES = {
    "GraderHarness": "group_grade.harness",
    "GroupGradeEnv": "group_grade.taskset",
    "GroupGradeTaskset": "group_grade.taskset",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'group_grade' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
