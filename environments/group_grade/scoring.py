"""Scoring hooks: the GAR mapping as keyed metrics, the ``valid`` and ``agreement`` rewards.

Async, as verifiers awaits every hook. They read what ``GroupGradeTask.finalize`` left in
``trace.info`` (``verdict``, ``fallback_reason``, ``gar_config``), so they also work plugged
from config:

    [env.taskset.task.metrics]
    gar = { fn = "group_grade.scoring:gar" }
"""

from __future__ import annotations

from typing import get_args

import verifiers.v1 as vf

from group_grade.advantages import F_MIN, LAMBDA_MAX, FallbackReason, gar_records
from group_grade.agreement import Agreement, agreement
from group_grade.data import GroupGradeData
from group_grade.grade_traces import mark_grade_trace
from group_grade.verdict import GroupVerdict


def recorded_verdict(trace: vf.Trace) -> GroupVerdict | None:
    raw = trace.info.get("verdict")
    return GroupVerdict.model_validate(raw) if raw is not None else None


async def gar(task: GroupGradeData, trace: vf.Trace) -> dict[str, float]:
    """The GAR hook (see ``record_gar``)."""
    return record_gar(task, trace)


def record_gar(task: GroupGradeData, trace: vf.Trace) -> dict[str, float]:
    """Map the recorded verdict to advantages: writes ``trace.info["gar"]`` (one record per
    label) and returns the keyed metrics."""
    mark_grade_trace(task, trace)
    knobs = trace.info.get("gar_config") or {}
    verdict = recorded_verdict(trace)
    reason: FallbackReason = trace.info.get("fallback_reason") or "invalid"
    records = gar_records(
        task,
        verdict,
        fallback_reason=reason,
        f_min=knobs.get("f_min", F_MIN),
        lambda_max=knobs.get("lambda_max", LAMBDA_MAX),
    )
    trace.info["gar"] = {r.label: r.model_dump(mode="json") for r in records}
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


async def valid(trace: vf.Trace) -> float:
    """1 when the grader's verdict stood, else 0 (the reason is in ``fallback_reason``)."""
    return float(trace.info.get("verdict") is not None)


def verdict_agreement(task: GroupGradeData, trace: vf.Trace) -> Agreement | None:
    """Agreement of the recorded verdict with the row's truth (None for unlabeled rows)."""
    if task.truth is None:
        return None
    downgraded = (trace.info.get("citations") or {}).get("downgraded", [])
    return agreement(task.truth, recorded_verdict(trace), downgraded, task.mode)


async def agreement_metrics(task: GroupGradeData, trace: vf.Trace) -> dict[str, float]:
    scores = verdict_agreement(task, trace)
    return scores.metrics() if scores is not None else {}


async def agreement_reward(task: GroupGradeData, trace: vf.Trace) -> dict[str, float]:
    """Keyed so that unlabeled rows record no ``agreement`` reward at all."""
    scores = verdict_agreement(task, trace)
    return {"agreement": scores.reward} if scores is not None else {}
