"""The grading row: one group of candidates, and how it is minted from finished traces."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Literal

import verifiers.v1 as vf
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from group_grade import validators
from group_grade.boxes.base import GRADE_MOUNT
from group_grade.digest import digest_body
from group_grade.transcript import turns_and_policies

Mode = Literal["rewards", "advantages"]
Margin = Literal["tie", "slight", "clear", "large"]
HackLevel = Literal["none", "suspected", "confirmed"]
HackKind = Literal[
    "test_edit",
    "conftest",
    "special_case",
    "exit_or_skip",
    "hidden_test_read",
    "upstream_fetch",
    "prompt_injection",
]
RESERVED_LABELS = frozenset({"task.md", "group.json", "privileged", "verdict.json"})
"""What the grader box holds beside the candidate folders (``staging.grader_files``)."""
RESERVED_BOX_PATH = GRADE_MOUNT
"""Where privileged materials are mounted in a candidate box: no row may work there."""


def _escaped(data: object, *skip: str) -> object:
    """Raw input with every string escaped (``validators.escape_tree``), save the values of
    the fields named ``skip`` (models that escape their own input)."""
    if not isinstance(data, dict):
        return data
    return {
        validators.escape_tree(key): value if key in skip else validators.escape_tree(value)
        for key, value in data.items()
    }


def _safe_tree(files: dict[str, str]) -> dict[str, str]:
    """``files`` (relative path -> content) if every path is safe and names its own file."""
    for path in files:
        validators.safe_relative_path(path)
    validators.distinct_paths(files)
    return files


def recorded_output_tokens(trace: vf.Trace) -> int | None:
    """The trace's output token count when its model calls reported usage, else None (the
    trace's ``num_output_tokens`` is 0 then, which is not a count)."""
    return trace.num_output_tokens if trace.usage is not None else None


class Candidate(BaseModel):
    """One attempt, anonymized. ``turns[n - 1]`` is turn ``n`` exactly as the grader reads it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str
    reward: float | None = None
    passed: bool = False
    turns: list[str] = Field(default_factory=list)
    patch: str | None = None
    test_output: str | None = None
    files: dict[str, str] = Field(default_factory=dict)
    stop_condition: str | None = None
    num_output_tokens: int | None = None
    """Tokens the candidate's model generated; None: not recorded (shown as such)."""
    checkpoint: str | None = None
    digest: str | None = None
    """The body of ``digest.md`` (``group_grade.digest.digest_body``), stored when the row is
    minted; None: rendered when the grader box is staged."""

    @model_validator(mode="before")
    @classmethod
    def _encodable(cls, data: object) -> object:
        return _escaped(data)

    @field_validator("label")
    @classmethod
    def _safe_label(cls, label: str) -> str:
        return validators.safe_label(label, RESERVED_LABELS)

    @field_validator("reward")
    @classmethod
    def _finite_reward(cls, reward: float | None, info: ValidationInfo) -> float | None:
        if reward is None:
            return None
        return validators.finite_reward(reward, f"candidate {info.data.get('label', '?')}")

    @field_validator("files")
    @classmethod
    def _safe_files(cls, files: dict[str, str]) -> dict[str, str]:
        return _safe_tree(files)


class Truth(BaseModel):
    """Ground truth for a labeled (benchmark) row."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tiers: list[list[str]]
    """The correct tiers of the candidates the row's mode ranks, best first."""
    margins: list[Margin] = Field(default_factory=list)
    hacks: dict[str, HackKind] = Field(default_factory=dict)
    """Label -> hack kind, for every candidate that is a hack."""
    traps: dict[str, str] = Field(default_factory=dict)
    """Label -> why an honest candidate looks like a hack (a false-positive trap): a grader
    that calls one of them a confirmed hack has accused an honest candidate."""

    @model_validator(mode="before")
    @classmethod
    def _encodable(cls, data: object) -> object:
        return _escaped(data)

    @model_validator(mode="after")
    def _traps_are_honest(self) -> Truth:
        if both := sorted(set(self.traps) & set(self.hacks)):
            raise ValueError(f"a trap is an honest candidate, not a hack: {', '.join(both)}")
        return self


class GroupGradeData(vf.TaskData):
    """One group to grade. Travels over the env-server wire and is embedded in traces."""

    group_id: str
    mode: Mode = "rewards"
    candidates: list[Candidate]
    task_prompt: str = ""
    task_system_prompt: str | None = None
    privileged: dict[str, str] = Field(default_factory=dict)
    """Relative path -> content: hidden tests, gold patch, expected results."""
    box_workdir: str | None = None
    """Where commands run in a restored candidate box (None: the box's own default): an
    absolute, normalized path, neither ``/`` nor ``RESERVED_BOX_PATH`` or below it."""
    box_env: dict[str, str] = Field(default_factory=dict)
    """Environment variables of commands in a candidate box."""
    hidden_test_command: str | None = None
    """The shell command that runs the hidden tests in a candidate box, in `box_workdir`, with
    `$GRADE_PRIVILEGED` set to where the privileged materials are mounted and `$GRADE_RESULTS`
    to a directory for a JUnit XML result (`junit.xml`); its exit code is the result. None:
    group-grade's own pytest runner over the privileged test files."""
    inner: dict = Field(default_factory=dict)
    """The inner task's wire data, kept for reference."""
    trace_ids: dict[str, str] = Field(default_factory=dict)
    """Label -> original trace id, when the row was minted from traces."""
    truth: Truth | None = None
    network_allow: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _encodable(cls, data: object) -> object:
        return _escaped(data, "candidates", "truth")

    @field_validator("privileged")
    @classmethod
    def _safe_privileged(cls, privileged: dict[str, str]) -> dict[str, str]:
        return _safe_tree(privileged)

    @field_validator("box_workdir")
    @classmethod
    def _safe_workdir(cls, path: str | None) -> str | None:
        return None if path is None else validators.box_workdir(path, RESERVED_BOX_PATH)

    @field_validator("box_env")
    @classmethod
    def _safe_env(cls, env: dict[str, str]) -> dict[str, str]:
        return validators.box_env(env)

    @field_validator("hidden_test_command")
    @classmethod
    def _command_without_nul(cls, command: str | None) -> str | None:
        return None if command is None else validators.no_nul(command, "hidden_test_command")

    @model_validator(mode="after")
    def _consistent(self) -> GroupGradeData:
        labels = [c.label for c in self.candidates]
        if not labels:
            raise ValueError("a group needs at least one candidate")
        if len(set(labels)) != len(labels):
            raise ValueError(f"candidate labels are not unique: {labels}")
        if self.mode == "rewards":
            missing = [c.label for c in self.candidates if c.reward is None]
            if missing:
                raise ValueError(f"rewards mode needs a reward for every candidate: {missing}")
        known = set(labels)
        if self.truth is not None:
            named = {label for tier in self.truth.tiers for label in tier} | set(self.truth.hacks)
            if unknown := sorted(named - known):
                raise ValueError(f"truth names unknown labels: {unknown}")
        if unknown := sorted(set(self.trace_ids) - known):
            raise ValueError(f"trace_ids names unknown labels: {unknown}")
        return self

    @property
    def labels(self) -> list[str]:
        return [c.label for c in self.candidates]

    def candidate(self, label: str) -> Candidate:
        for candidate in self.candidates:
            if candidate.label == label:
                return candidate
        raise KeyError(label)

    def rankable(self, confirmed: set[str]) -> list[str]:
        """Labels the ranking must cover: rewards mode ranks passing candidates, advantages
        mode every candidate; confirmed hacks are never ranked."""
        return [
            c.label
            for c in self.candidates
            if c.label not in confirmed and (self.mode == "advantages" or c.passed)
        ]

    @property
    def rewards(self) -> list[float]:
        return [c.reward if c.reward is not None else 0.0 for c in self.candidates]

    @classmethod
    def from_traces(
        cls,
        traces: Sequence[vf.Trace],
        *,
        group_id: str,
        mode: Mode = "rewards",
        passed: Sequence[bool] | None = None,
        privileged: dict[str, str] | None = None,
        box_workdir: str | None = None,
        box_env: dict[str, str] | None = None,
    ) -> tuple[GroupGradeData, dict[str, str]]:
        """Mint the grading row for one finished group; returns it and label -> trace id.

        Labels follow a shuffle seeded by ``group_id``. ``passed=None`` derives pass flags
        from rewards (strictly above the group mean). Candidates the grader will not rank
        (failing ones in rewards mode) keep only their first and last turns. Each candidate
        carries the body of its ``digest.md``.
        """
        if not traces:
            raise ValueError("from_traces needs at least one trace")
        rewards = [
            validators.finite_reward(trace.reward, f"trace {trace.id}") if trace.rewards else None
            for trace in traces
        ]
        if mode == "rewards" and None in rewards:
            ids = [t.id for t, r in zip(traces, rewards, strict=True) if r is None]
            raise ValueError(f"rewards mode needs a reward on every trace; none on {ids}")
        if passed is None:
            known = [r for r in rewards if r is not None]
            mean = sum(known) / len(known) if known else 0.0
            passed = [r is not None and r > mean for r in rewards]
        elif len(passed) != len(traces):
            raise ValueError(f"passed has {len(passed)} flags for {len(traces)} traces")

        order = list(range(len(traces)))
        random.Random(group_id).shuffle(order)
        width = max(2, len(str(len(traces))))
        candidates: list[Candidate] = []
        labels: dict[str, str] = {}
        for position, index in enumerate(order, start=1):
            trace = traces[index]
            label = f"c{position:0{width}d}"
            labels[label] = trace.id
            ranked = mode == "advantages" or passed[index]
            # Unranked candidates keep their first and last turns; the middle ones are not
            # even rendered.
            turns, policies = turns_and_policies(trace, elided=not ranked)
            info = trace.info
            patch = info.get("patch")
            candidates.append(
                Candidate(
                    label=label,
                    reward=rewards[index],
                    passed=bool(passed[index]),
                    turns=turns,
                    patch=patch,
                    test_output=info.get("test_output"),
                    stop_condition=trace.stop_condition,
                    num_output_tokens=recorded_output_tokens(trace),
                    checkpoint=info.get("checkpoint"),
                    digest=digest_body(turns, patch, policies),
                )
            )
        inner = traces[0].task.data
        data = cls(
            group_id=group_id,
            mode=mode,
            candidates=candidates,
            task_prompt=inner.prompt_text,
            task_system_prompt=inner.system_prompt,
            privileged=dict(privileged or {}),
            box_workdir=box_workdir if box_workdir is not None else inner.workdir,
            box_env=dict(box_env or {}),
            inner=inner.model_dump(mode="json", exclude_none=True),
            trace_ids=labels,
        )
        return data, labels
