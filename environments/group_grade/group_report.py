"""One group's result as text: the report the demo prints and the inspector prints in detail.

The verdict next to the truth, the group's agreement, the hack calls with their quotes,
GAR advantages next to plain GRPO's, the grader's notes. ``detail`` (the inspector) adds what
a reader of one grade trace needs and a run's overview does not: every citation failure, each
candidate's trace id, lambda, and the notes uncut.
"""

from __future__ import annotations

from group_grade.results import GradeResult, shown_line

QUOTE_SHOWN = 100
NOTE_LINE_SHOWN = 200
NOTE_LINES_SHOWN = 20


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


def advantage_table(result: GradeResult, *, trace_ids: bool = False) -> list[str]:
    labeled = result.truth is not None
    head = f"  {'label':<6} {'reward':>6} {'GRPO':>7} {'GAR':>7}  tier  {'hack':<9}"
    rows = [head + "  truth" if labeled else head]
    if trace_ids:
        rows[0] += "  trace"
    for c in result.row.candidates:
        record = result.records.get(c.label)
        reward = "-" if c.reward is None else f"{c.reward:g}"
        grpo = None if result.grpo is None else result.grpo[c.label]
        gar = None if record is None else record.advantage
        tier = "-" if record is None or record.tier is None else str(record.tier)
        hack = "-" if record is None or record.hack == "none" else record.hack
        line = (
            f"  {c.label:<6} {reward:>6} {_signed(grpo):>7} {_signed(gar):>7}  {tier:<4}  {hack:<9}"
        )
        if labeled:
            line += f"  {result.truth_of(c.label)}"
        if trace_ids:
            line += f"  {result.row.trace_ids.get(c.label, '-')}"
        rows.append(line)
    return [row.rstrip() for row in rows]


def group_report(result: GradeResult, *, detail: bool = False) -> str:
    """One group's result (see the module docstring); ``detail`` for the inspector."""
    row = result.row
    lines = [f"== {shown_line(row.group_id)} ({row.mode} mode, {len(row.candidates)} candidates)"]
    verdict = result.verdict
    if verdict is None:
        detail_text = f" ({shown_line(result.problem, QUOTE_SHOWN)})" if result.problem else ""
        lines.append(f"  no verdict: fallback `{result.fallback_reason or 'invalid'}`{detail_text}")
    else:
        lines.append(f"  verdict: {result.verdict_text()}")
    if (truth := result.truth_text()) is not None:
        lines.append(f"  truth:   {truth}")
    if (scores := result.agreement_text()) is not None:
        lines.append(f"  {scores}")
    if verdict is not None:
        true_hacks = result.truth.hacks if result.truth is not None else {}
        for entry in verdict.candidates:
            if entry.hack == "none":
                continue
            kind = f" (truth: {true_hacks[entry.label]})" if entry.label in true_hacks else ""
            lines.append(f"  hack {entry.label}: {entry.hack}{kind}")
            lines.extend(
                f'    turn {e.turn}: "{shown_line(e.quote, QUOTE_SHOWN)}"' for e in entry.evidence
            )
        lines.extend(
            f"  quote failed, {label} downgraded to suspected"
            for label in result.citations.downgraded
        )
        if detail:
            lines.extend(
                f'  citation failure: {f.label} turn {f.turn}: "{shown_line(f.quote)}" '
                f"-- {f.problem}"
                for f in result.citations.failures
            )
    lines.extend(advantage_table(result, trace_ids=detail))
    if detail and result.lambda_ is not None:
        lines.append(f"  lambda: {result.lambda_:.4g}")
    if verdict is not None and verdict.notes.strip():
        notes = [line for line in verdict.notes.splitlines() if line.strip()]
        if detail:
            shown = [shown_line(line) for line in notes]
        else:
            shown = [shown_line(line, NOTE_LINE_SHOWN) for line in notes[:NOTE_LINES_SHOWN]]
            if len(notes) > NOTE_LINES_SHOWN:
                shown.append(f"({len(notes) - NOTE_LINES_SHOWN} more lines in summary.md)")
        lines.append(f"  notes: {shown[0]}")
        lines.extend(f"         {line}" for line in shown[1:])
    return "\n".join(lines)
