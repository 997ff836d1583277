"""Grade traces read back for people: one ``GradeResult`` per graded group, built with the
package's own models (``GroupGradeData``, ``GroupVerdict``, ``AdvantageRecord``,
``CitationReport``), and the summary of a run (``RunSummary``, written as ``summary.json``
and ``summary.md``). The demo, ``group_grade.report`` and ``tools/inspect_grade.py`` all
read traces through here, so they show the same numbers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import verifiers.v1 as vf
from pydantic import BaseModel, ConfigDict, Field
from verifiers.v1.types import content_text

from group_grade.advantages import AdvantageRecord
from group_grade.citations import CitationReport
from group_grade.data import GroupGradeData, Margin, Mode, Truth
from group_grade.grade_traces import is_grade_trace, read_traces
from group_grade.verdict import GroupVerdict

AGREEMENT_PREFIX = "agreement/"
AGREEMENT_SHOWN = (
    "pairwise",
    "kendall_tau",
    "best_tier",
    "hack_precision",
    "hack_recall",
    "trap_false_positive",
    "margin_error",
)
"""The per-group agreement figures printed next to the ``agreement`` reward (``valid`` and
``unquoted_confirmed`` are printed only when they say something)."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """``text`` with control characters (terminal escapes, bidi overrides) written as
    ``\\xNN`` / ``\\uNNNN``: candidate text may hold any of them, and none must act on
    the reader's terminal or page. Newlines and tabs are kept."""

    def shown(match: re.Match[str]) -> str:
        code = ord(match.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _CONTROL.sub(shown, text)


def one_line(text: str, cap: int | None = None) -> str:
    """``text`` on one line (whitespace runs collapsed), visible, cut to ``cap``."""
    flat = visible(" ".join(text.split()))
    return flat if cap is None or len(flat) <= cap else flat[: cap - 3] + "..."


def grpo_advantages(row: GroupGradeData) -> dict[str, float] | None:
    """Plain GRPO per label (reward minus the group mean) whenever every candidate has a
    reward, whatever the mode; None when some have none (advantages-mode rows may not).
    A group that falls back trains on these in rewards mode, on zeros in advantages mode."""
    rewards = [c.reward for c in row.candidates]
    if any(r is None for r in rewards):
        return None
    mean = sum(rewards) / len(rewards)  # type: ignore[arg-type]
    return {c.label: c.reward - mean for c in row.candidates}  # type: ignore[operator]


@dataclass(frozen=True)
class TierLine:
    """A ranking as a reader sees it: tiers best first with the margins between them, the
    confirmed hacks, and the candidates in no tier (failing ones in rewards mode, others)."""

    ranking: list[list[str]]
    margins: list[Margin]
    mode: Mode
    hacks: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    unranked: list[str] = field(default_factory=list)

    def gap(self, number: int) -> Margin | None:
        """The margin below tier ``number`` (0-based; advantages mode, default ``slight``)."""
        if self.mode != "advantages":
            return None
        return self.margins[number] if number < len(self.margins) else "slight"

    def text(self) -> str:
        """``c02 >large> c01, c05 >slight> c03 >large> hacks: c04`` in advantages mode (every
        gap's margin; confirmed hacks a large gap below the last tier); ``c02 > c01 | hacks:
        c04 | failed: c03`` in rewards mode (hacks drop to the group's lowest reward, failing
        candidates are not ranked); then ``| not ranked: ...``."""
        parts: list[str] = []
        for number, tier in enumerate(self.ranking):
            if number:
                gap = self.gap(number - 1)
                parts.append(f" >{gap}> " if gap else " > ")
            parts.append(", ".join(tier))
        text = "".join(parts) or "(nothing ranked)"
        if self.hacks:
            joint = " >large> " if self.mode == "advantages" and self.ranking else " | "
            text += f"{joint}hacks: {', '.join(self.hacks)}"
        if self.failed:
            text += f" | failed: {', '.join(self.failed)}"
        if self.unranked:
            text += f" | not ranked: {', '.join(self.unranked)}"
        return text


@dataclass(frozen=True)
class ToolCallView:
    """One tool call of the grader, with what it answered."""

    name: str
    arguments: str
    result: str | None


@dataclass(frozen=True)
class GradeResult:
    """One grade trace, read back."""

    trace: vf.Trace
    row: GroupGradeData
    verdict: GroupVerdict | None
    citations: CitationReport
    records: dict[str, AdvantageRecord]
    grpo: dict[str, float] | None
    agreement: dict[str, float]
    """``agreement`` (the reward) and every ``agreement/NAME`` metric, keyed by NAME."""
    fallback_reason: str | None
    problem: str | None
    """Why there is no verdict (the verdict's error or the run's), when there is none."""
    episode_id: str | None = None
    calls: list[ToolCallView] = field(default_factory=list)

    @classmethod
    def of(cls, trace: vf.Trace, episode_id: str | None = None) -> GradeResult:
        info = trace.info
        data = trace.task.data
        row = (
            data
            if isinstance(data, GroupGradeData)
            else GroupGradeData.model_validate(data.model_dump(mode="json"))
        )
        raw = info.get("verdict")
        verdict = GroupVerdict.model_validate(raw) if raw is not None else None
        records = {
            label: AdvantageRecord.model_validate(record)
            for label, record in (info.get("gar") or {}).items()
        }
        scores: dict[str, float] = {}
        reward = trace.rewards.get("agreement")
        if reward is not None:
            scores["agreement"] = float(reward.score)
        for name, value in trace.metrics.items():
            if name.startswith(AGREEMENT_PREFIX) and value is not None:
                scores[name.removeprefix(AGREEMENT_PREFIX)] = float(value)
        problem = None
        if verdict is None:
            problem = info.get("verdict_error") or "; ".join(e.message for e in trace.errors)
        return cls(
            trace=trace,
            row=row,
            verdict=verdict,
            citations=CitationReport.model_validate(info.get("citations") or {}),
            records=records,
            grpo=grpo_advantages(row),
            agreement=scores,
            fallback_reason=info.get("fallback_reason") if verdict is None else None,
            problem=problem or None,
            episode_id=episode_id,
            calls=grader_calls(trace),
        )

    @property
    def group_id(self) -> str:
        return self.row.group_id

    @property
    def mode(self) -> Mode:
        return self.row.mode

    @property
    def truth(self) -> Truth | None:
        return self.row.truth

    @property
    def outcome(self) -> str:
        return "graded" if self.verdict is not None else f"fallback {self.fallback_reason}"

    @property
    def confirmed(self) -> list[str]:
        return sorted(self.verdict.confirmed) if self.verdict is not None else []

    def verdict_line(self) -> TierLine | None:
        if self.verdict is None:
            return None
        return self._line(self.verdict.ranking, self.verdict.margins, self.confirmed)

    def truth_line(self) -> TierLine | None:
        if self.truth is None:
            return None
        return self._line(self.truth.tiers, self.truth.margins, sorted(self.truth.hacks))

    def verdict_text(self) -> str | None:
        line = self.verdict_line()
        return None if line is None else line.text()

    def truth_text(self) -> str | None:
        line = self.truth_line()
        return None if line is None else line.text()

    def _line(
        self, ranking: Sequence[Sequence[str]], margins: Sequence[Margin], hacks: list[str]
    ) -> TierLine:
        ranked = {label for tier in ranking for label in tier}
        rest = [c for c in self.row.candidates if c.label not in ranked and c.label not in hacks]
        failing = self.mode == "rewards"
        return TierLine(
            ranking=[list(tier) for tier in ranking],
            margins=list(margins),
            mode=self.mode,
            hacks=hacks,
            failed=sorted(c.label for c in rest if failing and not c.passed),
            unranked=sorted(c.label for c in rest if not (failing and not c.passed)),
        )

    def truth_of(self, label: str) -> str:
        """The truth's word on one candidate: ``tier 2``, ``hack (test_edit)``, ``failed``."""
        truth = self.truth
        if truth is None:
            return "-"
        if label in truth.hacks:
            return f"hack ({truth.hacks[label]})"
        for number, tier in enumerate(truth.tiers, start=1):
            if label in tier:
                return f"tier {number}"
        return "failed" if self.mode == "rewards" else "-"

    def agreement_text(self) -> str | None:
        """``agreement 1.000 (pairwise 1.000, kendall_tau 1.000, ...)``; None unlabeled."""
        if "agreement" not in self.agreement:
            return None
        shown = [name for name in AGREEMENT_SHOWN if name in self.agreement]
        if self.agreement.get("valid", 1.0) != 1.0:
            shown.insert(0, "valid")
        if self.agreement.get("unquoted_confirmed"):
            shown.append("unquoted_confirmed")
        details = ", ".join(f"{name} {self.agreement[name]:.3f}" for name in shown)
        return f"agreement {self.agreement['agreement']:.3f}" + (f" ({details})" if details else "")

    @property
    def lambda_(self) -> float | None:
        values = {r.lambda_ for r in self.records.values() if r.lambda_ is not None}
        return values.pop() if len(values) == 1 else None


def grader_calls(trace: vf.Trace) -> list[ToolCallView]:
    """The grader's tool calls in order, each with its result (None: no result recorded)."""
    results: dict[str, str] = {}
    for message in trace.tool_messages:
        results.setdefault(message.tool_call_id, content_text(message.content))
    calls = []
    for message in trace.assistant_messages:
        for call in message.tool_calls or []:
            calls.append(ToolCallView(call.name, call.arguments, results.get(call.id)))
    return calls


def results_of(episodes: Iterable[vf.WireEpisode | vf.Episode]) -> list[GradeResult]:
    """A ``GradeResult`` for every grade trace of ``episodes``, in order."""
    return [
        GradeResult.of(trace, episode.id)
        for episode in episodes
        for trace in episode.traces
        if is_grade_trace(trace, episode.env.id)
    ]


def read_results(path: str | Path) -> list[GradeResult]:
    """The grade traces of a run folder or ``traces.jsonl``, in file order
    (``grade_traces.read_traces`` raises ``InputError`` for a file that cannot be read)."""
    return results_of(read_traces(path))


# -- the run's summary -------------------------------------------------------------------


class CandidateSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    label: str
    reward: float | None
    grpo: float | None
    """Reward minus the group mean; None without rewards."""
    gar: float | None
    """The advantage the run recorded (the verdict's, or the fallback's)."""
    tier: int | None
    hack: str
    truth: str | None = None


class GroupSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    group_id: str
    mode: Mode
    outcome: str
    """``graded``, or ``fallback <reason>``."""
    problem: str | None = None
    verdict: str | None = None
    """The verdict's tiers on one line (``tiers_text``)."""
    truth: str | None = None
    hacks: list[str] = Field(default_factory=list)
    """Confirmed hacks of the verdict."""
    true_hacks: dict[str, str] = Field(default_factory=dict)
    agreement: dict[str, float] = Field(default_factory=dict)
    notes: str = ""
    candidates: list[CandidateSummary]

    @classmethod
    def of(cls, result: GradeResult) -> GroupSummary:
        candidates = []
        for c in result.row.candidates:
            record = result.records.get(c.label)
            candidates.append(
                CandidateSummary(
                    label=c.label,
                    reward=c.reward,
                    grpo=None if result.grpo is None else result.grpo[c.label],
                    gar=None if record is None else record.advantage,
                    tier=None if record is None else record.tier,
                    hack="-" if record is None else record.hack,
                    truth=result.truth_of(c.label) if result.truth is not None else None,
                )
            )
        return cls(
            group_id=result.group_id,
            mode=result.mode,
            outcome=result.outcome,
            problem=result.problem,
            verdict=result.verdict_text(),
            truth=result.truth_text(),
            hacks=result.confirmed,
            true_hacks=dict(result.truth.hacks) if result.truth is not None else {},
            agreement=result.agreement,
            notes=result.verdict.notes if result.verdict is not None else "",
            candidates=candidates,
        )


class RunSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    grader: str
    source: str
    seconds: float | None = None
    groups: int
    graded: int
    fallbacks: dict[str, int] = Field(default_factory=dict)
    agreement: dict[str, float] = Field(default_factory=dict)
    """Mean of every agreement figure over the groups that carry it (one grade per group:
    ``margin_error`` is over the advantages-mode groups only)."""
    per_group: list[GroupSummary]

    @classmethod
    def of(
        cls,
        results: Sequence[GradeResult],
        *,
        grader: str,
        source: str,
        seconds: float | None = None,
    ) -> RunSummary:
        fallbacks: dict[str, int] = {}
        for result in results:
            if result.verdict is None:
                reason = result.fallback_reason or "invalid"
                fallbacks[reason] = fallbacks.get(reason, 0) + 1
        return cls(
            grader=grader,
            source=source,
            seconds=seconds,
            groups=len(results),
            graded=sum(r.verdict is not None for r in results),
            fallbacks=fallbacks,
            agreement=mean_agreement(results),
            per_group=[GroupSummary.of(r) for r in results],
        )

    def markdown(self) -> str:
        return summary_markdown(self)


def mean_agreement(results: Iterable[GradeResult]) -> dict[str, float]:
    """Mean of every agreement figure over the results that carry it, ``agreement`` first."""
    values: dict[str, list[float]] = {}
    for result in results:
        for name, value in result.agreement.items():
            values.setdefault(name, []).append(value)
    order = ["agreement", *AGREEMENT_SHOWN]
    names = sorted(values, key=lambda name: (order.index(name) if name in order else 99, name))
    return {name: sum(values[name]) / len(values[name]) for name in names}


def _code(text: str) -> str:
    """``text`` as a markdown code span, whatever backticks it holds."""
    text = one_line(text)
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _cell(value: float | None, signed: bool = True) -> str:
    if value is None:
        return "-"
    return f"{value:+.3f}" if signed else f"{value:g}"


def summary_markdown(summary: RunSummary) -> str:
    """The run as markdown: the overall figures, an index, and per group its verdict, its
    truth, its agreement and its advantages. Every text from a row or a grader is a code
    span, so none of it renders as markup."""
    lines = [
        "# group-grade run",
        "",
        f"- grader: {_code(summary.grader)}",
        f"- rows: {_code(summary.source)}",
        f"- groups: {summary.groups}, graded: {summary.graded}"
        + "".join(f", fallback {reason}: {n}" for reason, n in sorted(summary.fallbacks.items())),
    ]
    if summary.seconds is not None:
        lines.append(f"- grading time: {summary.seconds:.1f} s")
    if summary.agreement:
        lines += ["", "| figure | mean over groups |", "|---|---|"]
        lines += [f"| {name} | {value:.3f} |" for name, value in summary.agreement.items()]
    lines += ["", "| group | mode | outcome | agreement |", "|---|---|---|---|"]
    for group in summary.per_group:
        score = group.agreement.get("agreement")
        lines.append(
            f"| {_code(group.group_id)} | {group.mode} | {group.outcome} | "
            f"{'-' if score is None else f'{score:.3f}'} |"
        )
    for group in summary.per_group:
        lines += ["", f"## {_code(group.group_id)} ({group.mode} mode)", ""]
        if group.verdict is not None:
            lines.append(f"- verdict: {_code(group.verdict)}")
        else:
            lines.append(f"- no verdict: {group.outcome}")
            if group.problem:
                lines.append(f"- why: {_code(group.problem)}")
        if group.truth is not None:
            lines.append(f"- truth: {_code(group.truth)}")
        if group.agreement:
            lines.append(
                "- agreement: "
                + ", ".join(f"{name} {value:.3f}" for name, value in group.agreement.items())
            )
        if group.notes:
            lines.append("- notes:")
            lines += [f"  - {_code(line)}" for line in group.notes.splitlines() if line.strip()]
        lines += [
            "",
            "| label | reward | GRPO | GAR | tier | hack | truth |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in group.candidates:
            lines.append(
                f"| {c.label} | {_cell(c.reward, signed=False)} | {_cell(c.grpo)} | "
                f"{_cell(c.gar)} | {c.tier or '-'} | {c.hack} | {c.truth or '-'} |"
            )
    return "\n".join(lines) + "\n"


__all__ = [
    "GradeResult",
    "GroupSummary",
    "RunSummary",
    "TierLine",
    "ToolCallView",
    "grpo_advantages",
    "mean_agreement",
    "one_line",
    "read_results",
    "results_of",
    "visible",
]
