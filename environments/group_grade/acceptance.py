"""Whether a raw verdict stands for a row: parse, structural rules, then the citation check."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError

from group_grade.citations import CitationReport, apply_citations
from group_grade.data import GroupGradeData
from group_grade.verdict import GroupVerdict


class Acceptance(BaseModel):
    """A verdict that stands (after downgrades), or the error that sank it."""

    model_config = ConfigDict(frozen=True)

    verdict: GroupVerdict | None = None
    error: str | None = None
    citations: CitationReport = CitationReport()


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


def accept_verdict(data: GroupGradeData, raw: str | dict | GroupVerdict | None) -> Acceptance:
    """``raw`` is the verdict: JSON text or object as the grader wrote it, or the model
    ``submit_verdict`` built (None: no verdict was written)."""
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
    return Acceptance(verdict=checked, citations=report)
