"""Rollout state shared by the grading task (host) and its tool server."""

from __future__ import annotations

import verifiers.v1 as vf

from group_grade.verdict import GroupVerdict


class GradeState(vf.State):
    submitted: GroupVerdict | None = None
    """The verdict ``submit_verdict`` accepted (finalize writes it to verdict.json)."""
    submissions: int = 0
    """``submit_verdict`` calls, accepted or not."""
    restores: int = 0
    """Candidate boxes restored by ``candidate_shell``."""
    restore_seconds: float = 0.0
    """Seconds spent restoring candidate boxes, summed."""
