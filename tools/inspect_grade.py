"""Print a grade trace readably: the outcome, the verdict's tiers next to the truth, the hack
calls with their quotes and citation failures, and GAR advantages next to plain GRPO's.

    python tools/inspect_grade.py runs/demo                      # the first grade trace
    python tools/inspect_grade.py runs/demo --list               # one line per grade trace
    python tools/inspect_grade.py runs/demo --group slugify/0    # the trace of one group
    python tools/inspect_grade.py runs/demo/traces.jsonl --id ID # by episode or trace id
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import verifiers.v1 as vf

from group_grade.advantages import grpo_advantages
from group_grade.grade_record import GradeRecord
from group_grade.grade_traces import is_grade_trace, read_traces
from group_grade.results import GradeResult, results_of, shown_line
from group_grade.sources import InputError

__all__ = ["find_grade_trace", "grpo_advantages", "list_results", "main", "render_grade"]


def find_grade_trace(
    episodes: Sequence[vf.WireEpisode], wanted: str | None = None, group: str | None = None
) -> vf.Trace:
    """The first grade trace, or the one whose trace or episode id is ``wanted``, or the
    first of group ``group``."""
    for episode in episodes:
        for trace in episode.traces:
            if not is_grade_trace(trace, episode.env.id):
                continue
            if wanted not in (None, trace.id, episode.id):
                continue
            record = GradeRecord.of(trace)
            if group is not None and (record is None or record.group_id != group):
                continue
            return trace
    what = f" with id {wanted}" if wanted else f" of group {group!r}" if group else ""
    raise LookupError(f"no grade trace{what} found")


def _number(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.4f}" if signed else f"{value:.4g}"


def _tier_lines(result: GradeResult) -> list[str]:
    verdict = result.verdict
    assert verdict is not None
    line = result.verdict_line()
    assert line is not None
    lines = ["tiers (best first):"]
    for number, tier in enumerate(verdict.ranking, start=1):
        lines.append(f"  {number}. {', '.join(tier)}")
        if result.mode == "advantages" and number < len(verdict.ranking):
            margin = line.gap(number - 1)
            given = number - 1 < len(verdict.margins)
            lines.append(f"       -- {margin}{'' if given else ' (default)'} --")
    if hacks := result.confirmed:
        if result.mode == "advantages":
            lines.append("       -- large (hack tier) --")
        lines.append(f"  hacks: {', '.join(hacks)}")
    if line.failed:
        lines.append(f"  failed, not ranked: {', '.join(line.failed)}")
    if line.unranked:
        lines.append(f"  not ranked: {', '.join(line.unranked)}")
    return lines


def _hack_lines(result: GradeResult) -> list[str]:
    verdict = result.verdict
    assert verdict is not None
    citations = result.citations
    lines = ["hack calls:"]
    called = [c for c in verdict.candidates if c.hack != "none"]
    for entry in called:
        note = " (downgraded: a quote failed the citation check)"
        lines.append(
            f"  {entry.label}: {entry.hack}{note if entry.label in citations.downgraded else ''}"
        )
        lines += [f'    turn {e.turn}: "{shown_line(e.quote)}"' for e in entry.evidence]
    if not called:
        lines.append("  none")
    if citations.failures:
        lines.append("citation failures:")
        lines += [
            f'  {f.label} turn {f.turn}: "{shown_line(f.quote)}" -- {f.problem}'
            for f in citations.failures
        ]
    return lines


def render_grade(trace: vf.Trace) -> str:
    """The grade trace as text."""
    result = GradeResult.of(trace)
    row = result.row
    outcome = "graded" if result.verdict is not None else f"fallback ({result.fallback_reason})"
    lines = [
        f"grade trace {trace.id}",
        f"group: {shown_line(row.group_id)}  mode: {row.mode}  candidates: {len(row.candidates)}",
        f"outcome: {outcome}",
    ]
    if result.record.verdict_error:
        lines.append(f"verdict error: {shown_line(result.record.verdict_error)}")
    if trace.errors:
        lines.append(f"error: {trace.errors[-1].type}: {shown_line(trace.errors[-1].message)}")
    if result.verdict is not None:
        lines += _tier_lines(result) + _hack_lines(result)
        if result.verdict.notes:
            lines.append("notes:")
            lines += [f"  {shown_line(n)}" for n in result.verdict.notes.splitlines() if n.strip()]
    if (truth := result.truth_text()) is not None:
        lines.append(f"truth: {truth}")
    if (scores := result.agreement_text()) is not None:
        lines.append(scores)
    grpo = result.grpo or {}
    lines.append("advantages (GAR: from the verdict; GRPO: reward minus the group mean):")
    lines.append(
        f"  {'label':<6} {'reward':>6} {'tier':>4} {'hack':<9} {'GAR':>8} {'GRPO':>8}  trace"
    )
    for candidate in row.candidates:
        record = result.records.get(candidate.label)
        lines.append(
            f"  {candidate.label:<6} {_number(candidate.reward):>6} "
            f"{(record.tier if record and record.tier else '-')!s:>4} "
            f"{(record.hack if record else '-'):<9} "
            f"{_number(record.advantage if record else None, signed=True):>8} "
            f"{_number(grpo.get(candidate.label), signed=True):>8}  "
            f"{row.trace_ids.get(candidate.label, '-')}"
        )
    lines.append(f"lambda: {_number(result.lambda_)}")
    return "\n".join(lines)


def list_results(results: Sequence[GradeResult]) -> str:
    """One line per grade trace: group, mode, outcome, agreement, trace id."""
    lines = [f"{'group':<24} {'mode':<10} {'outcome':<17} {'agreement':>9}  trace"]
    for result in results:
        score = result.agreement.get("agreement")
        lines.append(
            f"{shown_line(result.group_id, 24):<24} {result.mode:<10} {result.outcome:<17} "
            f"{'-' if score is None else f'{score:.3f}':>9}  {result.trace.id}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="inspect_grade.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("traces", type=Path, help="a run folder, or its traces.jsonl")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--id", help="the grade trace with this episode or trace id")
    which.add_argument("--group", help="the grade trace of this group id")
    which.add_argument("--list", action="store_true", help="list the run's grade traces")
    args = parser.parse_args(argv)
    try:
        episodes = read_traces(args.traces)
        if args.list:
            results = results_of(episodes)
            if not results:
                raise LookupError("no grade trace found")
            print(list_results(results))
            return 0
        trace = find_grade_trace(episodes, args.id, args.group)
    except (InputError, LookupError) as e:
        print(
            f"error: {args.traces}: {e}" if isinstance(e, LookupError) else f"error: {e}",
            file=sys.stderr,
        )
        return 2
    print(render_grade(trace))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
