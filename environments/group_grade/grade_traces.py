"""Grade traces: how they are marked and recognized, and how traces files are read.

A grade trace holds privileged materials (hidden tests, gold patches) in its task data and
staged files: training and SFT exports must skip every one of them.
"""

from __future__ import annotations

from pathlib import Path

import verifiers.v1 as vf
from verifiers.v1.configs.agent import WireAgentConfig
from verifiers.v1.utils.trace_store import TRACES_FILE, read_episodes

from group_grade.data import GroupGradeData

WireTrace = vf.Trace[vf.WireTaskData, vf.State, WireAgentConfig]


def mark_grade_trace(data: GroupGradeData, trace: vf.Trace) -> None:
    """Stamp the trace as a grade trace (exports skip these: they hold privileged data)."""
    trace.info["kind"] = "grade"
    trace.info["group_id"] = data.group_id
    if data.trace_ids:
        trace.info["candidates"] = dict(data.trace_ids)


def is_grade_trace(trace: vf.Trace) -> bool:
    """True for a grade trace (``info.kind == "grade"``) and for any trace whose task data is
    a group-grade row (``candidates`` and ``group_id``) even if unmarked: both may hold
    privileged text."""
    if trace.info.get("kind") == "grade":
        return True
    data = trace.task.data
    fields = set(type(data).model_fields) | set(data.model_extra or {})
    return {"candidates", "group_id"} <= fields


def read_traces(path: str | Path) -> list[vf.WireEpisode]:
    """The episodes of a ``traces.jsonl`` written by vf-eval (or of its run directory),
    read with verifiers' own reader, no taskset import needed."""
    path = Path(path)
    if path.is_dir():
        return read_episodes(path, WireTrace)
    if path.name != TRACES_FILE:
        raise ValueError(f"{path}: expected a {TRACES_FILE} written by vf-eval, or its run dir")
    return read_episodes(path.parent, WireTrace)
