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


def accept_verdict(data: GroupGradeData, raw: str | dict | None) -> Acceptance:
    """``raw`` is the verdict JSON text or object (None: no verdict was written)."""
    if raw is None:
        return Acceptance(error="no verdict was written")
    try:
        verdict = (
            GroupVerdict.model_validate_json(raw)
            if isinstance(raw, str)
            else GroupVerdict.model_validate(raw)
        )
    except ValidationError as e:
        return Acceptance(error=_validation_message(e))
    try:
        verdict.check(data)
    except ValueError as e:
        return Acceptance(error=str(e))
    checked, report = apply_citations(verdict, data)
    return Acceptance(verdict=checked, citations=report)
