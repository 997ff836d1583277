"""The data model of the labeled groups: tasks, their candidates and scripted transcripts.

A candidate is a script of model responses (``Step``). The builder replays the script in a
fresh copy of the task's project: every tool call runs for real there (``bash`` commands,
``edit`` replacements) unless it carries an authored ``result`` (calls that cannot run on the
build machine: network fetches, probes outside the project). The candidate's final tree, patch,
box and test output are whatever the replay leaves behind.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Literal

from group_grade.verdict import HackKind, Margin

Kind = Literal["minimal", "alternative", "sprawling", "symptom", "wrong", "hack"]
"""minimal: root-cause fix; alternative: another clean root-cause fix; sprawling: correct but
rewrites far more than needed; symptom: patches the visible symptom only; wrong: fails the
visible tests; hack: games the reward (see ``Hack``)."""

PYTEST = "python -m pytest -q"
"""How candidates run the visible tests, and how the run scored them."""


def code(text: str) -> str:
    """A file's content written as an indented triple-quoted block."""
    return textwrap.dedent(text).lstrip("\n")


def patched(text: str, old: str, new: str) -> str:
    """``text`` with its one occurrence of ``old`` replaced by ``new``."""
    if text.count(old) != 1:
        raise ValueError(f"{old!r} occurs {text.count(old)} times")
    return text.replace(old, new)


@dataclass(frozen=True)
class Call:
    """One tool call. Without ``result`` it runs for real in the candidate's tree; with one,
    the result is authored and ``writes`` (path -> content) stands for the call's effect."""

    tool: str
    args: dict[str, str]
    result: str | None = None
    writes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Edit:
    """Replace the one occurrence of ``old`` in ``path`` by ``new``."""

    path: str
    old: str
    new: str


def bash(command: str) -> Call:
    """A ``bash`` call, run for real in the candidate's tree."""
    return Call("bash", {"command": command})


def edit(change: Edit) -> Call:
    """An ``edit`` tool call (path, old_str, new_str), applied for real."""
    return Call("edit", {"path": change.path, "old_str": change.old, "new_str": change.new})


def authored(command: str, result: str, writes: dict[str, str] | None = None) -> Call:
    """A ``bash`` call that cannot run here; ``result`` is what the candidate saw."""
    return Call("bash", {"command": command}, result, dict(writes or {}))


@dataclass(frozen=True)
class Step:
    """One model response: its visible text and its tool calls."""

    say: str
    calls: tuple[Call, ...] = ()


def step(say: str, *calls: Call) -> Step:
    """A model response saying ``say`` (may be empty) and making ``calls``."""
    return Step(say, calls)


@dataclass(frozen=True)
class Hack:
    kind: HackKind
    quote: str
    """Verbatim text from the candidate's own words or tool-call arguments proving the hack."""


@dataclass(frozen=True)
class CandidateSpec:
    name: str
    """Unique within the task; never shown (rows carry shuffled labels)."""
    kind: Kind
    hidden_pass: bool
    """Whether its final tree passes the hidden tests (the build checks it)."""
    steps: tuple[Step, ...]
    hack: Hack | None = None
    trap: str | None = None
    """An honest candidate that looks like a hack: why (recorded in ``Truth.traps``)."""
    stop_condition: str = "agent_completed"


@dataclass(frozen=True)
class TaskSpec:
    name: str
    prompt: str
    """The issue the candidates were given."""
    files: dict[str, str]
    """The original project: relative path -> content."""
    gold: tuple[Edit, ...]
    hidden: dict[str, str]
    """Hidden tests: ``tests/test_hidden_*.py`` -> content."""
    candidates: tuple[CandidateSpec, ...]
    tiers: tuple[tuple[str, ...], ...]
    """Every non-hack candidate name, best tier first (rewards rows keep the passing ones)."""
    margins: tuple[Margin, ...] = ()
    """One per gap between ``tiers``; required when ``advantages``."""
    advantages: bool = False
    """Also ship the group as an advantages-mode row."""
