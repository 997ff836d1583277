"""``group.json``: the group as data, staged in the grader box next to ``task.md``.

What a grader would otherwise learn from the prompt's prose (labels, mode, outcomes, boxes,
where the files are, how the hidden tests run), rendered from the row. It shows exactly what
the mode shows elsewhere: pass flags and rewards in rewards mode only (as the prompt's
listing and ``digest.md``), and the staged paths are the files actually staged.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from group_grade import hidden_tests
from group_grade.data import GroupGradeData, Mode
from group_grade.layout import TASK_FILE


class ManifestCandidate(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    label: str
    passed: bool | None = None
    """Rewards mode: whether it passed the task's tests. None in advantages mode."""
    reward: float | None = None
    """Rewards mode: its reward. None in advantages mode."""
    box: bool
    """Whether it has a box (`candidate_shell`, `run_hidden_tests`)."""
    turns: int
    """Its turn count: `<label>/turns/001.md` .. `<label>/turns/NNN.md`."""
    files: list[str]
    """Its staged files, relative to the grade root, turn files left out."""


class ManifestHiddenTests(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    runnable: bool
    """Whether `run_hidden_tests` has anything to run (False: it answers `not_run`)."""
    how: str
    """How `run_hidden_tests` runs them."""
    command: str | None = None
    """The row's declared hidden-test command, if it has one."""


class GroupManifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    mode: Mode
    grade_root: str
    task: str
    """The task statement, relative to the grade root."""
    privileged: list[str]
    """The privileged materials (hidden tests, reference fix), relative to the grade root."""
    hidden_tests: ManifestHiddenTests
    candidates: list[ManifestCandidate]

    @property
    def labels(self) -> list[str]:
        return [c.label for c in self.candidates]


def group_manifest(data: GroupGradeData, grade_root: str, staged: Iterable[str]) -> GroupManifest:
    """The manifest of ``data`` staged under ``grade_root``; ``staged``: every path staged
    there (``staging.grader_files``'s keys)."""
    root = grade_root.rstrip("/") or "/"
    prefix = f"{root}/"  # as staging.grader_files joins them
    relative = sorted(p[len(prefix) :] for p in staged if p.startswith(prefix))
    shows_outcome = data.mode == "rewards"
    plan = hidden_tests.hidden_test_plan(data, "$GRADE_DIR")
    labels = set(data.labels)

    def is_turn_file(path: str) -> bool:
        parts = path.split("/")
        return len(parts) == 3 and parts[1] == "turns" and parts[2][:-3].isdigit()

    candidates = [
        ManifestCandidate(
            label=c.label,
            passed=c.passed if shows_outcome else None,
            reward=c.reward if shows_outcome else None,
            box=c.checkpoint is not None,
            turns=len(c.turns),
            files=[p for p in relative if p.startswith(f"{c.label}/") and not is_turn_file(p)],
        )
        for c in data.candidates
    ]
    return GroupManifest(
        mode=data.mode,
        grade_root=root,
        task=TASK_FILE,
        privileged=[p for p in relative if "/" in p and p.split("/", 1)[0] not in labels],
        hidden_tests=ManifestHiddenTests(
            runnable=plan is not None,
            how=hidden_tests.describe(data),
            command=data.hidden_test_command,
        ),
        candidates=candidates,
    )


def render_manifest(data: GroupGradeData, grade_root: str, staged: Iterable[str]) -> bytes:
    return group_manifest(data, grade_root, staged).model_dump_json(indent=1).encode()
