"""Small hand-made grading rows for tests."""

from __future__ import annotations

from group_grade.data import Candidate, GroupGradeData, Mode


def row(
    rewards: list[float | None],
    *,
    mode: Mode = "rewards",
    turns: list[list[str]] | None = None,
    group_id: str = "g1",
) -> GroupGradeData:
    known = [r for r in rewards if r is not None]
    mean = sum(known) / len(known) if known else 0.0
    candidates = [
        Candidate(
            label=f"c{i:02d}",
            reward=r,
            passed=r is not None and r > mean,
            turns=turns[i - 1] if turns else [f"turn one of c{i:02d}: I will fix the bug now."],
        )
        for i, r in enumerate(rewards, start=1)
    ]
    return GroupGradeData(group_id=group_id, mode=mode, candidates=candidates)
