"""Whether a raw verdict stands for a row: parse, structural rules, then the citation check."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from group_grade.citations import CitationFailure, CitationReport, apply_citations
from group_grade.data import GroupGradeData
from group_grade.verdict import GroupVerdict

Stage = Literal["submitted", "final"]
"""When a verdict is judged: ``submitted`` while the grader can still fix it (its
``submit_verdict`` call), ``final`` once its run is over (the task's ``finalize``)."""


class Acceptance(BaseModel):
    """A verdict that stands (after downgrades), or what sank it: the error, or the quotes
    of confirmed hacks that do not stand (``unproven``, at the ``submitted`` stage)."""

    model_config = ConfigDict(frozen=True)

    verdict: GroupVerdict | None = None
    error: str | None = None
    citations: CitationReport = CitationReport()
    unproven: list[CitationFailure] = Field(default_factory=list)
    """``submitted`` stage: the failing quotes of confirmed hacks, which reject the verdict."""


def _validation_message(error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "(top level)"
        lines.append(f"- {where}: {item['msg']}")
    return "the verdict does not parse:\n" + "\n".join(lines)


def parse_verdict(raw: str | dict | GroupVerdict) -> GroupVerdict:
    """The verdict in ``raw`` (JSON text, a JSON object, or the model itself); raises
    ValidationError."""
    if isinstance(raw, GroupVerdict):
        return raw
    if isinstance(raw, str):
        return GroupVerdict.model_validate_json(raw)
    return GroupVerdict.model_validate(raw)


def accept_verdict(
    data: GroupGradeData, raw: str | dict | GroupVerdict | None, stage: Stage = "final"
) -> Acceptance:
    """``raw`` is the verdict: JSON text or object as the grader wrote it, or the model
    ``submit_verdict`` built (None: no verdict was written).

    The one rule for a confirmed hack whose quote fails the citation check: while the
    grader can still fix it (``submitted``) the verdict is rejected with those quotes; once
    its run is over (``final``) the hack is downgraded to suspected (``apply_citations``)
    and the verdict stands."""
    if raw is None:
        return Acceptance(error="no verdict was written")
    try:
        verdict = parse_verdict(raw)
    except ValidationError as e:
        return Acceptance(error=_validation_message(e))
    try:
        verdict.check(data)
    except ValueError as e:
        return Acceptance(error=str(e))
    checked, report = apply_citations(verdict, data)
    if stage == "submitted" and report.downgraded:
        unproven = [f for f in report.failures if f.label in report.downgraded]
        return Acceptance(citations=report, unproven=unproven)
    return Acceptance(verdict=checked, citations=report)
