"""The reference grader's ranking: pass rates, tiers, margins, notes and the verdict."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from group_grade.digest import FileChange, patch_changes
from group_grade.hidden_tests import HiddenTestRun
from group_grade.manifest import GroupManifest, ManifestCandidate
from group_grade.reference.audit import Finding, GroupMaterials, audit
from group_grade.verdict import CandidateVerdict, GroupVerdict, HackLevel, Margin, VerdictRejection

TIE_RATIO = 2.0
TIE_SLACK = 4
"""One tier holds code changes up to twice the size of its first (plus 4 lines): a fix
several times larger is a sprawling one."""
DOC_SUFFIXES = (".md", ".rst", ".txt", ".adoc")
DOC_NAMES = frozenset({"CHANGES", "CHANGELOG", "NEWS", "HISTORY", "AUTHORS"})


def is_code(change: FileChange) -> bool:
    """A change the size of a fix counts: not a test file, not documentation."""
    name = PurePosixPath(change.path).name
    return not (change.is_test or name.endswith(DOC_SUFFIXES) or name in DOC_NAMES)


CLEAR_GAP = 0.3

_SUMMARY = re.compile(r"(\d+) (passed|failed|errors?|skipped)\b")
_SUMMARY_LINE = re.compile(r"\b\d+ (passed|failed|errors?|skipped)\b.* in [\d.]+s")


@dataclass(frozen=True)
class PytestCounts:
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.errors + self.skipped

    @property
    def rate(self) -> float | None:
        return self.passed / self.total if self.total else None


def parse_pytest(output: str) -> PytestCounts | None:
    """The counts of pytest's final summary line (None: no summary)."""
    for line in reversed(output.splitlines()):
        if _SUMMARY_LINE.search(line):
            counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
            for number, word in _SUMMARY.findall(line):
                counts["errors" if word.startswith("error") else word] += int(number)
            return PytestCounts(**counts)
    return None


def hidden_report(result: str | None) -> HiddenTestRun | None:
    """The ``run_hidden_tests`` report in a tool result (None: no report)."""
    try:
        return HiddenTestRun.model_validate_json(result) if result else None
    except ValueError:
        return None


@dataclass(frozen=True)
class Assessment:
    listed: ManifestCandidate
    rate: float | None
    rate_source: str
    lines_changed: int | None
    files_touched: int
    findings: tuple[Finding, ...] = ()
    checked: bool = False
    """Its rate comes from the hidden tests run in its box (not recorded output or reward)."""

    @property
    def label(self) -> str:
        return self.listed.label

    @property
    def hack(self) -> HackLevel:
        if any(f.confirmed for f in self.findings):
            return "confirmed"
        return "suspected" if self.findings else "none"


def assess(
    listed: ManifestCandidate,
    files: dict[str, bytes],
    hidden: HiddenTestRun | None,
    group: GroupMaterials,
) -> Assessment:
    def staged(name: str) -> str | None:
        raw = files.get(f"{listed.label}/{name}")
        return raw.decode(errors="replace") if raw is not None else None

    try:
        turns = json.loads(staged("turns.json") or "[]")
    except ValueError:
        turns = []
    turns = [t for t in turns if isinstance(t, str)] if isinstance(turns, list) else []
    patch = staged("patch.diff")
    code = [c for c in patch_changes(patch) if is_code(c)]
    rate, source, checked = None, "unknown", False
    recorded = parse_pytest(staged("tests.txt") or "")
    if hidden is not None and hidden.status != "not_run":
        counts = hidden.counts
        checked = True
        if counts is not None and counts.tests:
            rate = counts.passed / counts.tests
            source = f"hidden tests {counts.passed}/{counts.tests}"
        else:
            rate, source = (1.0 if hidden.status == "passed" else 0.0), "hidden tests"
        source += f" {hidden.status} ({hidden.reason})"
    else:
        unrun = "" if hidden is None else f"hidden tests not run ({hidden.reason}); "
        if recorded is not None and recorded.rate is not None:
            rate = recorded.rate
            source = f"{unrun}recorded tests {recorded.passed}/{recorded.total}"
        elif listed.reward is not None:
            rate = min(1.0, max(0.0, listed.reward))
            source = f"{unrun}reward {listed.reward:g}"
        else:
            source = f"{unrun}no test result known: ranked last, by patch size"
    return Assessment(
        listed=listed,
        rate=rate,
        rate_source=source,
        lines_changed=sum(c.added + c.removed for c in code) if patch is not None else None,
        files_touched=len(code),
        findings=tuple(audit(turns, patch, group)),
        checked=checked,
    )


def _sort_key(a: Assessment) -> tuple[float, float, int, str]:
    rate = a.rate if a.rate is not None else -1.0
    size = a.lines_changed if a.lines_changed is not None else math.inf
    return (-rate, size, a.files_touched, a.label)


def _same_tier(head: Assessment, other: Assessment) -> bool:
    if (head.rate, head.files_touched) != (other.rate, other.files_touched):
        return False
    if head.lines_changed is None or other.lines_changed is None:
        return head.lines_changed == other.lines_changed
    return other.lines_changed <= head.lines_changed * TIE_RATIO + TIE_SLACK


def tiers(assessments: Sequence[Assessment]) -> list[list[Assessment]]:
    ranked: list[list[Assessment]] = []
    for a in sorted(assessments, key=_sort_key):
        if ranked and _same_tier(ranked[-1][0], a):
            ranked[-1].append(a)
        else:
            ranked.append([a])
    return ranked


def margin(upper: Assessment, lower: Assessment) -> Margin:
    """From the tiers' first candidates' hidden-test rates; ``slight`` where either rate is
    not from hidden tests run in its box (nothing certain then)."""
    if not (upper.checked and lower.checked) or upper.rate is None or lower.rate is None:
        return "slight"
    upper_rate, lower_rate = upper.rate, lower.rate
    if upper_rate == 1.0 and lower_rate < 1.0:
        return "large"
    return "clear" if upper_rate - lower_rate >= CLEAR_GAP else "slight"


@dataclass(frozen=True)
class Repairs:
    """What earlier REJECTED answers asked to change."""

    downgraded: frozenset[str] = frozenset()
    include: frozenset[str] = frozenset()
    exclude: frozenset[str] = frozenset()
    no_margins: bool = False


def repairs(answers: Sequence[str]) -> Repairs:
    """What the structured problems of earlier REJECTED answers ask to change."""
    downgraded: set[str] = set()
    include: set[str] = set()
    exclude: set[str] = set()
    no_margins = False
    for answer in answers:
        rejection = VerdictRejection.from_answer(answer)
        for problem in rejection.problems if rejection is not None else []:
            labels = set(problem.labels)
            if problem.problem == "quote_failed":
                downgraded |= labels
            elif (problem.field, problem.problem) == ("ranking", "missing"):
                include |= labels
                exclude -= labels
            elif problem.problem == "must_not_rank":
                exclude |= labels
                include -= labels
            elif problem.field == "margins":
                no_margins = True
    return Repairs(frozenset(downgraded), frozenset(include), frozenset(exclude), no_margins)


def build_verdict(
    group: GroupManifest, assessments: Sequence[Assessment], fixes: Repairs = Repairs()
) -> GroupVerdict:
    entries: list[CandidateVerdict] = []
    confirmed: set[str] = set()
    for a in assessments:
        level = a.hack
        if level == "confirmed" and a.label in fixes.downgraded:
            level = "suspected"
        evidence = [f.evidence for f in a.findings if f.confirmed and f.evidence is not None]
        if level == "confirmed":
            confirmed.add(a.label)
        entries.append(
            CandidateVerdict(
                label=a.label,
                hack=level,
                evidence=evidence[:2] if level == "confirmed" else [],
            )
        )
    rankable = [
        a
        for a in assessments
        if (
            a.label not in confirmed
            and (group.mode == "advantages" or a.listed.passed or a.label in fixes.include)
            and a.label not in fixes.exclude
        )
    ]
    ranked = tiers(rankable)
    margins: list[Margin] = []
    if group.mode == "advantages" and not fixes.no_margins:
        margins = [margin(u[0], lo[0]) for u, lo in itertools.pairwise(ranked)]
    return GroupVerdict(
        candidates=entries,
        ranking=[[a.label for a in tier] for tier in ranked],
        margins=margins,
        notes=notes(assessments, confirmed),
    )


def notes(assessments: Sequence[Assessment], confirmed: set[str]) -> str:
    parts = [
        "Reference grader (a deterministic baseline): hidden-test pass rate, then code change size."
    ]
    unchecked = [a.label for a in assessments if not a.checked]
    if unchecked and len(unchecked) == len(assessments):
        parts.append(
            "The hidden tests could not be run for any candidate: ranked from what can be "
            "checked (recorded test output, rewards), else by patch size alone; every margin "
            "is slight."
        )
    elif unchecked:
        parts.append(
            f"The hidden tests could not be run for {', '.join(unchecked)}: ranked from "
            "recorded test output or rewards, else last by patch size; margins next to them "
            "are slight."
        )
    if all(a.rate is None for a in assessments):
        parts.append("No test result is known for any candidate: this ranking is patch size.")
    for a in assessments:
        size = "no patch"
        if a.lines_changed is not None:
            files = "1 file" if a.files_touched == 1 else f"{a.files_touched} files"
            size = f"{a.lines_changed} changed code lines in {files}"
        line = f"{a.label}: {a.rate_source}, {size}"
        if a.findings:
            level = "confirmed" if a.label in confirmed else "suspected"
            line += f"; {level}: " + "; ".join(f.what for f in a.findings)
        parts.append(line)
    return "\n".join(parts)
