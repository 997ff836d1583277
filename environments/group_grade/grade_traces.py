"""Grade traces: how they are recognized, and how traces files are read (their record,
``trace.info``, is ``grade_record.GradeRecord``).

A grade trace holds privileged materials (hidden tests, gold patches) in its task data and
staged files: training and SFT exports must skip every one of them.
"""

from __future__ import annotations

import json
from pathlib import Path

import verifiers.v1 as vf
from pydantic import ValidationError
from verifiers.v1.configs.agent import WireAgentConfig
from verifiers.v1.types import AssistantMessage, ToolMessage
from verifiers.v1.utils.trace_store import TRACES_FILE, type_adapter

from group_grade.grade_record import GradeRecord
from group_grade.sources import InputError, describe_validation_error

WireTrace = vf.Trace[vf.WireTaskData, vf.State, WireAgentConfig]


GRADER_TOOLS = frozenset({"submit_verdict", "candidate_shell", "run_hidden_tests"})
TASKSET_IDS = frozenset({"group-grade", "group_grade"})
ROW_FIELDS = frozenset({"group_id", "privileged", "trace_ids"})


def _labeled(item: object) -> bool:
    return ("label" in item) if isinstance(item, dict) else hasattr(item, "label")


def shaped_like_a_row(data: vf.TaskData) -> bool:
    """Task data with ``candidates`` that carry labels, or ``candidates`` next to any of
    ``group_id``, ``privileged``, ``trace_ids`` (so every valid grading row, too)."""
    fields = set(type(data).model_fields) | set(data.model_extra or {})
    if "candidates" not in fields:
        return False
    candidates = getattr(data, "candidates", None)
    if isinstance(candidates, list) and any(_labeled(c) for c in candidates):
        return True
    return bool(fields & ROW_FIELDS)


def is_grade_record(trace: vf.Trace, env_id: str = "") -> bool:
    """What the env recorded says it is a grade trace: a ``GradeRecord`` mark, a
    ``GroupGradeTask``, a group-grade env (``env_id``: the episode's ``env.id``), task data
    shaped like a grading row, or the grader's tools on offer. A model's output sets none."""
    return (
        GradeRecord.marks(trace)
        or trace.task.type == "GroupGradeTask"
        or bool(TASKSET_IDS & set(env_id.split("+")))
        or shaped_like_a_row(trace.task.data)
        or any(tool.name in GRADER_TOOLS for tool in trace.tools)
    )


def calls_grader_tools(trace: vf.Trace) -> bool:
    """A message of the trace calls, or answers a call of, one of the grader's tools."""
    for node in trace.nodes:
        message = node.message
        if isinstance(message, ToolMessage) and message.name in GRADER_TOOLS:
            return True
        if isinstance(message, AssistantMessage) and any(
            call.name in GRADER_TOOLS for call in message.tool_calls or []
        ):
            return True
    return False


def is_grade_trace(trace: vf.Trace, env_id: str = "") -> bool:
    """A grade trace by its record (``is_grade_record``) or by what it did
    (``calls_grader_tools``): each may hold privileged text. Exports skip all of them; the
    trainer refuses candidates by their record alone, which a policy cannot forge."""
    return is_grade_record(trace, env_id) or calls_grader_tools(trace)


def read_traces(path: str | Path) -> list[vf.WireEpisode]:
    """The episodes of a ``traces.jsonl`` written by vf-eval (or of its run directory),
    read line by line as verifiers' own reader does (its models, no taskset import). A
    path or line that cannot be read raises ``InputError`` (a ``ValueError``) naming the
    file and the line."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    file = path / TRACES_FILE if path.is_dir() else path
    if path.is_dir() and not file.is_file():
        raise InputError(f"{path}: no {TRACES_FILE} in this folder (not a run directory)")
    if not path.is_dir() and path.name != TRACES_FILE:
        raise InputError(f"{path}: expected a {TRACES_FILE} written by vf-eval, or its run dir")
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{file}: no such file") from None
    except OSError as e:
        raise InputError(f"{file}: cannot be read: {e.strerror or e}") from None
    adapter = type_adapter(WireTrace)
    episodes: list[vf.WireEpisode] = []
    for number, raw in enumerate(data.splitlines(), start=1):
        where = f"{file}:{number}"
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InputError(f"{where}: not valid JSON: {e}") from None
        if not isinstance(record, dict) or not isinstance(record.get("traces"), list):
            raise InputError(f"{where}: not an episode (a JSON object with a `traces` list)")
        try:
            episode = vf.WireEpisode.model_validate({**record, "traces": []})
            episode.traces = [adapter.validate_python(trace) for trace in record["traces"]]
        except ValidationError as e:
            raise InputError(f"{where}: not an episode: {describe_validation_error(e)}") from None
        episodes.append(episode)
    return episodes
