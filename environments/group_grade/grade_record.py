"""The grade record: everything group-grade keeps in a grade trace's ``trace.info``.

One field per ``trace.info`` key, written by the grading task (``setup`` marks the trace,
``finalize`` adds the verdict and its advantages) and by the env for a run that failed before
it was scored, and read back as models by the scoring hooks, the trainer client, the demo,
the report and the tools. ``trace.info`` is plain JSON on the wire and on disk; this model is
its one schema.
"""

from __future__ import annotations

from typing import Literal

import verifiers.v1 as vf
from pydantic import BaseModel, ConfigDict, Field

from group_grade.advantages import (
    AdvantageRecord,
    FallbackReason,
    GarKnobs,
    gar_records,
)
from group_grade.citations import CitationReport
from group_grade.data import GroupGradeData
from group_grade.verdict import GroupVerdict

GRADE_KIND = "grade"
"""``trace.info["kind"]`` of a grade trace: exports skip it, the trainer refuses it."""


class GradeRecord(BaseModel):
    """What a grade trace records about its group, its verdict and its advantages."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    kind: Literal["grade"] = GRADE_KIND
    """Marks the trace as a grade trace (it holds privileged data)."""
    group_id: str
    trace_ids: dict[str, str] = Field(default_factory=dict)
    """Label -> the candidate's original trace id, when the row was minted from traces."""
    grade_root: str | None = None
    """Where the group was staged in the grader box."""
    gar_config: GarKnobs | None = None
    """The knobs the advantages were mapped with."""
    verdict: GroupVerdict | None = None
    """The verdict that stood: validated and citation-checked (downgrades applied)."""
    citations: CitationReport | None = None
    """The citation check of the verdict: failing quotes and the hacks they downgraded."""
    verdict_error: str | None = None
    """Why no verdict stood."""
    verdict_read_error: str | None = None
    """Why the ``verdict.json`` the grader may have written could not be read."""
    fallback_reason: FallbackReason | None = None
    """Why the advantages are the fallback's (no verdict), when they are."""
    gar: dict[str, AdvantageRecord] | None = None
    """Label -> what the mapping decided for that candidate."""

    @classmethod
    def marks(cls, trace: vf.Trace) -> bool:
        """The trace's info marks it as a grade trace (``kind == "grade"``)."""
        return trace.info.get("kind") == GRADE_KIND

    @classmethod
    def start(cls, data: GroupGradeData, trace: vf.Trace) -> GradeRecord:
        """The trace's record (a new one for ``data`` if it has none), marked for ``data``."""
        record = cls.of(trace) or cls(group_id=data.group_id)
        return record.model_copy(
            update={"group_id": data.group_id, "trace_ids": dict(data.trace_ids)}
        )

    @classmethod
    def of(cls, trace: vf.Trace) -> GradeRecord | None:
        """The trace's record, None when the trace is not marked as a grade trace. Raises a
        ValidationError (a ``ValueError``) when the marked info does not hold one."""
        if not cls.marks(trace):
            return None
        info = trace.info
        return cls.model_validate({name: info[name] for name in cls.model_fields if name in info})

    def write(self, trace: vf.Trace) -> None:
        """Store the record in ``trace.info``, replacing what it held there before; a field
        that is None leaves its key out (the models inside keep all their keys)."""
        for name in type(self).model_fields:
            trace.info.pop(name, None)
        dumped = self.model_dump(mode="json")
        trace.info.update({key: value for key, value in dumped.items() if value is not None})

    def mapped(self, data: GroupGradeData, knobs: GarKnobs) -> GradeRecord:
        """The record with the advantages of its verdict (or of its fallback, for the
        ``fallback_reason``, ``invalid`` when none is given) mapped with ``knobs``."""
        reason: FallbackReason = self.fallback_reason or "invalid"
        records = gar_records(data, self.verdict, fallback_reason=reason, knobs=knobs)
        return self.model_copy(update={"gar_config": knobs, "gar": {r.label: r for r in records}})

    def advantages(self, data: GroupGradeData, knobs: GarKnobs) -> list[AdvantageRecord]:
        """The per-label records in the row's candidate order, as mapped with ``knobs``: the
        recorded ones when they were mapped with these knobs, else the recorded verdict mapped
        again here. Raises ValueError when the record carries neither."""
        if self.verdict is not None and self.gar_config != knobs:
            return gar_records(data, self.verdict, knobs=knobs)
        if self.gar is None:
            raise ValueError("the grade trace carries no advantages (info.gar)")
        if missing := [label for label in data.labels if label not in self.gar]:
            raise ValueError(f"the grade trace has no advantages for {missing}")
        return [self.gar[label] for label in data.labels]

    @property
    def downgraded(self) -> list[str]:
        """Confirmed hacks the citation check downgraded to suspected."""
        return self.citations.downgraded if self.citations is not None else []


__all__ = ["GRADE_KIND", "GradeRecord"]
