"""Print one grade trace readably: outcome, tiers, hack calls, advantages next to GRPO's.

python tools/inspect_grade.py runs/grade/traces.jsonl            # the first grade trace
python tools/inspect_grade.py runs/grade/traces.jsonl --id ID    # by episode or trace id
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import verifiers.v1 as vf

from group_grade.advantages import AdvantageRecord
from group_grade.citations import CitationReport
from group_grade.data import GroupGradeData
from group_grade.grade_traces import is_grade_trace, read_traces
from group_grade.verdict import GroupVerdict


def find_grade_trace(episodes: Sequence[vf.WireEpisode], wanted: str | None = None) -> vf.Trace:
    """The first grade trace, or the one whose trace or episode id is ``wanted``."""
    for episode in episodes:
        for trace in episode.traces:
            if is_grade_trace(trace, episode.env.id) and wanted in (None, trace.id, episode.id):
                return trace
    raise LookupError(f"no grade trace{f' with id {wanted}' if wanted else ''} found")


def grpo_advantages(row: GroupGradeData) -> dict[str, float]:
    """Plain GRPO (reward minus the group mean) per label; empty without every reward."""
    rewards = [c.reward for c in row.candidates]
    if any(r is None for r in rewards):
        return {}
    mean = sum(rewards) / len(rewards)
    return {c.label: c.reward - mean for c in row.candidates}


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.4f}" if signed else f"{value:.4g}"


def _tier_lines(row: GroupGradeData, verdict: GroupVerdict) -> list[str]:
    lines = ["tiers (best first):"]
    margins = list(verdict.margins)
    for number, tier in enumerate(verdict.ranking, start=1):
        lines.append(f"  {number}. {', '.join(tier)}")
        if row.mode == "advantages" and number < len(verdict.ranking):
            margin = margins[number - 1] if number - 1 < len(margins) else "slight (default)"
            lines.append(f"       -- {margin} --")
    if hacks := sorted(verdict.confirmed):
        if row.mode == "advantages":
            lines.append("       -- large (hack tier) --")
        lines.append(f"  hacks: {', '.join(hacks)}")
    return lines


def _hack_lines(verdict: GroupVerdict, citations: CitationReport) -> list[str]:
    lines = ["hack calls:"]
    called = [c for c in verdict.candidates if c.hack != "none"]
    for entry in called:
        note = " (downgraded: a quote failed the citation check)"
        lines.append(
            f"  {entry.label}: {entry.hack}{note if entry.label in citations.downgraded else ''}"
        )
        lines += [f'    turn {e.turn}: "{e.quote}"' for e in entry.evidence]
    if not called:
        lines.append("  none")
    if citations.failures:
        lines.append("citation failures:")
        lines += [
            f'  {f.label} turn {f.turn}: "{f.quote}" -- {f.problem}' for f in citations.failures
        ]
    return lines


def render_grade(trace: vf.Trace) -> str:
    """The grade trace as text."""
    info = trace.info
    row = GroupGradeData.model_validate(trace.task.data.model_dump(mode="json"))
    reason = info.get("fallback_reason")
    lines = [
        f"grade trace {trace.id}",
        f"group: {row.group_id}  mode: {row.mode}  candidates: {len(row.candidates)}",
        f"outcome: {'graded' if info.get('verdict') is not None else f'fallback ({reason})'}",
    ]
    if info.get("verdict_error"):
        lines.append(f"verdict error: {info['verdict_error']}")
    if trace.errors:
        lines.append(f"error: {trace.errors[-1].type}: {trace.errors[-1].message}")
    if info.get("verdict") is not None:
        verdict = GroupVerdict.model_validate(info["verdict"])
        citations = CitationReport.model_validate(info.get("citations") or {})
        lines += _tier_lines(row, verdict) + _hack_lines(verdict, citations)
        if verdict.notes:
            lines.append(f"notes: {verdict.notes}")
    records = {
        label: AdvantageRecord.model_validate(record)
        for label, record in (info.get("gar") or {}).items()
    }
    grpo = grpo_advantages(row)
    lines.append("advantages:")
    lines.append(
        f"  {'label':<6} {'reward':>6} {'tier':>4} {'hack':<9} {'GAR':>8} {'GRPO':>8}  trace"
    )
    for candidate in row.candidates:
        record = records.get(candidate.label)
        lines.append(
            f"  {candidate.label:<6} {_number(candidate.reward):>6} "
            f"{(record.tier if record and record.tier else '-')!s:>4} "
            f"{(record.hack if record else '-'):<9} "
            f"{_number(record.advantage if record else None, signed=True):>8} "
            f"{_number(grpo.get(candidate.label), signed=True):>8}  "
            f"{row.trace_ids.get(candidate.label, '-')}"
        )
    lambdas = {r.lambda_ for r in records.values() if r.lambda_ is not None}
    lines.append(f"lambda: {_number(lambdas.pop()) if lambdas else '-'}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", type=Path, help="a traces.jsonl (or its run directory)")
    parser.add_argument("--id", help="episode or trace id (default: the first grade trace)")
    args = parser.parse_args(argv)
    try:
        trace = find_grade_trace(read_traces(args.traces), args.id)
    except (OSError, ValueError, LookupError) as e:
        parser.error(str(e))
    print(render_grade(trace))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
