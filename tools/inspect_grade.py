"""Print a grade trace readably: the outcome, then the group's report as the demo prints it
(the verdict next to the truth, the hack calls with their quotes, GAR advantages next to plain
GRPO's, the notes), in detail: every citation failure, the trace ids, lambda.

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

from group_grade.grade_record import GradeRecord
from group_grade.grade_traces import is_grade_trace, read_traces
from group_grade.group_report import group_report
from group_grade.results import GradeResult, results_of, shown_line
from group_grade.sources import InputError

__all__ = ["find_grade_trace", "list_results", "main", "render_grade"]


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


def render_grade(trace: vf.Trace) -> str:
    """The grade trace as text: what it is, then its group's report in detail (the report the
    demo prints, plus every citation failure, the candidates' trace ids and lambda)."""
    result = GradeResult.of(trace)
    outcome = "graded" if result.verdict is not None else f"fallback ({result.fallback_reason})"
    lines = [f"grade trace {trace.id}", f"outcome: {outcome}"]
    if result.record.verdict_error:
        lines.append(f"verdict error: {shown_line(result.record.verdict_error)}")
    if trace.errors:
        lines.append(f"error: {trace.errors[-1].type}: {shown_line(trace.errors[-1].message)}")
    return "\n".join([*lines, group_report(result, detail=True)])


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
