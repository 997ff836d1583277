"""Scoring hooks: the GAR mapping as keyed metrics, the grader's tool use, the ``valid`` and
``agreement`` rewards.

These are the grading task's hooks themselves (``GroupGradeTask`` holds each of them as it
is), async as verifiers awaits every hook. They read the ``GradeRecord`` that
``GroupGradeTask.finalize`` left in ``trace.info`` and write nothing, so they also work
plugged from config:

    [env.taskset.task.metrics]
    gar = { fn = "group_grade.scoring:gar" }
"""

from __future__ import annotations

from typing import get_args

import verifiers.v1 as vf

from group_grade.advantages import DEFAULT_KNOBS, FallbackReason
from group_grade.agreement import Agreement
from group_grade.agreement import agreement as agreement_with
from group_grade.data import GroupGradeData
from group_grade.grade_record import GradeRecord


def record_of(task: GroupGradeData, trace: vf.Trace) -> GradeRecord:
    """The trace's grade record; an unmarked trace reads as a record without a verdict."""
    return GradeRecord.of(trace) or GradeRecord(group_id=task.group_id)


def gar_metrics(task: GroupGradeData, record: GradeRecord) -> dict[str, float]:
    """The keyed metrics of the record's advantages (mapped here with the default knobs
    when the record carries none)."""
    if record.gar is None:
        record = record.mapped(task, record.gar_config or DEFAULT_KNOBS)
    assert record.gar is not None
    records = [record.gar[label] for label in task.labels if label in record.gar]
    verdict = record.verdict
    reason = record.fallback_reason or "invalid"
    metrics = {f"adv/{r.label}": r.advantage for r in records}
    metrics["graded"] = float(verdict is not None)
    for name in get_args(FallbackReason):
        metrics[f"fallback/{name}"] = float(verdict is None and reason == name)
    hacks = [r.hack for r in records]
    metrics["hack_confirmed"] = float(hacks.count("confirmed"))
    metrics["hack_suspected"] = float(hacks.count("suspected"))
    lambdas = {r.lambda_ for r in records if r.lambda_ is not None}
    if lambdas:
        metrics["lambda"] = lambdas.pop()
    if verdict is not None:
        metrics["all_fail"] = float(not task.rankable(verdict.confirmed))
    return metrics


@vf.metric
async def gar(task: GroupGradeData, trace: vf.Trace) -> dict[str, float]:
    """The recorded advantages as ``adv/<label>``, with the fallback reason, the hack counts
    and the rewards-mode scale ``lambda``."""
    return gar_metrics(task, record_of(task, trace))


@vf.metric
async def tools(trace: vf.Trace) -> dict[str, float]:
    """How the grader used its tools (box restores, ``submit_verdict`` calls) and tokens."""
    state = trace.state  # a GradeState
    return {
        "restores": float(state.restores),
        "restore_seconds": state.restore_seconds,
        "submissions": float(state.submissions),
        "grader_tokens": float(trace.num_total_tokens),
    }


@vf.reward(weight=1.0)
async def valid(trace: vf.Trace) -> float:
    """1 when the grader's verdict stood, else 0 (the reason is in ``fallback_reason``)."""
    record = GradeRecord.of(trace)
    return float(record is not None and record.verdict is not None)


def verdict_agreement(task: GroupGradeData, trace: vf.Trace) -> Agreement | None:
    """Agreement of the recorded verdict with the row's truth (None for unlabeled rows)."""
    if task.truth is None:
        return None
    record = record_of(task, trace)
    return agreement_with(task.truth, record.verdict, record.downgraded, task.mode)


@vf.metric
async def agreement_metrics(task: GroupGradeData, trace: vf.Trace) -> dict[str, float]:
    """Labeled rows only: every ``agreement/<figure>`` of the verdict against the truth."""
    scores = verdict_agreement(task, trace)
    return scores.metrics() if scores is not None else {}


@vf.reward(weight=1.0)
async def agreement(task: GroupGradeData, trace: vf.Trace) -> dict[str, float]:
    """Labeled rows only: how well the verdict agrees with the row's truth. Keyed, so that
    unlabeled rows record no ``agreement`` reward at all."""
    scores = verdict_agreement(task, trace)
    return {"agreement": scores.reward} if scores is not None else {}
