"""An HTML report of a grading run: ``python -m group_grade.report RUN_OR_TRACES -o report.html``.

One self-contained page: an index of the groups (mode, outcome, verdict next to the truth,
agreement), then per group its tiers with margins, a chart of GAR against GRPO advantages,
the advantages table, each hack call with its quote highlighted inside the candidate's own
turn, the grader's notes and its tool calls (collapsed).

Every text in the page comes from a row, a candidate or a grader, and candidate text is
hostile (the output of a policy optimized against this grader): all of it is escaped, the
page loads nothing (a Content-Security-Policy allows only its own stylesheet, by hash) and
holds no script at all; links only point inside the page.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import itertools
import sys
from collections.abc import Sequence
from pathlib import Path

from group_grade.results import GradeResult, TierLine, mean_agreement, read_results, visible
from group_grade.sources import InputError
from group_grade.transcript import ELIDED, cut_middle, render_arguments, turn_sections

TURN_SHOWN = 3000
"""A cited turn longer than this is shown around the quote, with this much context."""
CONTEXT = 1200
CALL_RESULT_SHOWN = 4000

STYLE = """
:root { --ink: #1d232a; --muted: #5b6570; --line: #d9dee3; --bg: #f6f7f9; --gar: #1f6fb2;
  --neg: #b3372b; --grpo: #9aa3ab; --mark: #ffe066; --hack: #fbe3e0; --ok: #e3f4e6; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink);
  margin: 0; background: var(--bg); }
main { max-width: 1100px; margin: 0 auto; padding: 1.5rem; }
h1 { font-size: 1.5rem; margin: 0 0 .3rem; }
h2 { font-size: 1.2rem; margin: 0 0 .6rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 .4rem; }
section.group, section.overview { background: #fff; border: 1px solid var(--line);
  border-radius: 8px; padding: 1rem 1.2rem; margin: 1.2rem 0; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid var(--line);
  vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre, .chip { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  font-size: 13px; }
pre { background: var(--bg); border: 1px solid var(--line); border-radius: 6px;
  padding: .6rem; white-space: pre-wrap; word-break: break-word; overflow: auto;
  max-height: 28rem; margin: .3rem 0; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: 9px; font-size: 12px;
  border: 1px solid var(--line); color: var(--muted); margin-left: .4rem; }
.badge.fallback { background: var(--hack); color: var(--neg); border-color: var(--neg); }
.badge.graded { background: var(--ok); }
.tiers { display: flex; flex-wrap: wrap; align-items: center; gap: .3rem; }
.tier { display: inline-flex; gap: .2rem; padding: .15rem; border: 1px dashed var(--line);
  border-radius: 6px; }
.chip { display: inline-block; padding: .05rem .4rem; border-radius: 4px; background: #e8eef5; }
.chip.hack { background: var(--hack); color: var(--neg); }
.chip.failed, .chip.unranked { background: #eceeef; color: var(--muted); }
.gap { color: var(--muted); font-size: 12px; }
.gap::before { content: "\\25B6  "; }
.rest { color: var(--muted); font-size: 12px; margin-left: .4rem; }
dl.lines { display: grid; grid-template-columns: 6rem 1fr; gap: .35rem .6rem; margin: 0; }
dl.lines dt { color: var(--muted); }
dl.lines dd { margin: 0; }
mark.quote { background: var(--mark); color: inherit; outline: 2px solid #e0b400;
  border-radius: 2px; }
.hdr { color: var(--muted); font-weight: 600; }
.result { color: #47525c; }
article.hack { border-left: 4px solid var(--neg); padding: .2rem .8rem; margin: .6rem 0;
  background: #fffafa; }
article.hack.suspected { border-left-color: #d49a00; background: #fffdf5; }
.problem { color: var(--neg); }
.muted { color: var(--muted); }
svg.chart { display: block; max-width: 100%; height: auto; margin: .4rem 0; }
svg.chart text { font: 12px ui-monospace, Menlo, Consolas, monospace; fill: var(--ink); }
svg.chart .axis { stroke: var(--muted); stroke-width: 1; }
svg.chart .gar { fill: var(--gar); }
svg.chart .gar.negative { fill: var(--neg); }
svg.chart .grpo { fill: var(--grpo); }
.key { font-size: 12px; color: var(--muted); }
.key i { display: inline-block; width: .8rem; height: .8rem; vertical-align: -1px;
  margin: 0 .25rem 0 .6rem; }
.key .k-gar { background: var(--gar); } .key .k-neg { background: var(--neg); }
.key .k-grpo { background: var(--grpo); }
details > summary { cursor: pointer; color: var(--muted); }
ol.calls { padding-left: 1.4rem; }
ol.calls li { margin: .2rem 0; }
"""


def _style_hash(style: str) -> str:
    digest = hashlib.sha256(style.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


CSP = (
    "default-src 'none'; "
    f"style-src '{_style_hash(STYLE)}'; "
    "img-src 'none'; script-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-src 'none'; object-src 'none'"
)


def esc(text: object) -> str:
    """Text as inert HTML: control and bidi characters made visible, then escaped."""
    return html.escape(visible(str(text)), quote=True)


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.3f}"


# -- the cited turn, its quote highlighted ----------------------------------------------


def quote_span(turn: str, quote: str) -> list[tuple[int, int]] | None:
    """The pieces of ``turn`` (start, end) that make up ``quote`` as the citation check
    reads it: whitespace-normalized, inside the candidate's own text (content and
    tool-call arguments); None when it is not there."""
    spans = [(start, end) for kind, start, end in turn_sections(turn) if kind == "own"]
    chars: list[str] = []
    index: list[int | None] = []
    for number, (start, end) in enumerate(spans):
        pieces = [(None, "\n")] if number else []
        pieces += [(i, turn[i]) for i in range(start, end)]
        for at, char in pieces:
            if char.isspace():
                if chars and chars[-1] != " ":
                    chars.append(" ")
                    index.append(at)
            else:
                chars.append(char)
                index.append(at)
    normalized = "".join(chars)
    wanted = " ".join(quote.split())
    found = normalized.find(wanted) if wanted else -1
    if found < 0:
        return None
    first, last = index[found], index[found + len(wanted) - 1]
    assert first is not None and last is not None  # the quote's ends are not spaces
    begin, finish = first, last + 1
    return [(max(s, begin), min(e, finish)) for s, e in spans if s < finish and e > begin]


def render_turn(turn: str, marks: Sequence[tuple[int, int]], mark_id: str) -> str:
    """``turn`` as HTML: header lines and tool results styled, the ``marks`` (spans of
    own text) as ``<mark>``; a long turn cut to the context around the first mark."""
    if turn == ELIDED:
        return f"<pre class='turn'>{esc(turn)}</pre>"
    window = (0, len(turn))
    if len(turn) > TURN_SHOWN:
        center = marks[0][0] if marks else 0
        window = (max(0, center - CONTEXT), min(len(turn), center + CONTEXT))
    kinds: list[tuple[int, int, str]] = []
    last = 0
    for kind, start, end in turn_sections(turn):
        if start > last:
            kinds.append((last, start, "gap"))
        kinds.append((start, end, kind))
        last = end
    if last < len(turn):
        kinds.append((last, len(turn), "gap"))
    cuts = sorted({window[0], window[1], *(p for m in marks for p in m)})
    out: list[str] = []
    if window[0] > 0:
        out.append(f"<span class='muted'>[... {window[0]} characters before ...]</span>\n")
    for start, end, kind in kinds:
        lo, hi = max(start, window[0]), min(end, window[1])
        if lo >= hi:
            continue
        points = [lo, *(c for c in cuts if lo < c < hi), hi]
        for a, b in itertools.pairwise(points):
            piece = esc(turn[a:b])
            if any(s <= a and b <= e for s, e in marks):
                piece = f"<mark class='quote' data-quote='{mark_id}'>{piece}</mark>"
            if kind in ("header", "result"):
                piece = f"<span class='{'hdr' if kind == 'header' else 'result'}'>{piece}</span>"
            out.append(piece)
    if window[1] < len(turn):
        tail = len(turn) - window[1]
        out.append(f"\n<span class='muted'>[... {tail} characters after ...]</span>")
    return f"<pre class='turn'>{''.join(out)}</pre>"


# -- pieces of a group ------------------------------------------------------------------


def render_tiers(line: TierLine) -> str:
    parts = []
    for number, tier in enumerate(line.ranking):
        if number:
            gap = line.gap(number - 1)
            parts.append(f"<span class='gap'>{esc(gap) if gap else ''}</span>")
        chips = "".join(f"<span class='chip'>{esc(label)}</span>" for label in tier)
        parts.append(f"<span class='tier' title='tier {number + 1}'>{chips}</span>")
    if not line.ranking:
        parts.append("<span class='muted'>(nothing ranked)</span>")
    if line.hacks:
        if line.mode == "advantages" and line.ranking:
            parts.append("<span class='gap'>large</span>")
        else:
            parts.append("<span class='rest'>|</span>")
        chips = "".join(f"<span class='chip hack'>{esc(label)}</span>" for label in line.hacks)
        parts.append(f"<span class='rest'>hacks:</span><span class='tier'>{chips}</span>")
    for name, labels in (("failed", line.failed), ("unranked", line.unranked)):
        if labels:
            chips = "".join(f"<span class='chip {name}'>{esc(label)}</span>" for label in labels)
            word = "failed, not ranked:" if name == "failed" else "not ranked:"
            parts.append(f"<span class='rest'>| {word}</span>{chips}")
    return f"<span class='tiers'>{''.join(parts)}</span>"


def render_chart(result: GradeResult) -> str:
    """Horizontal bars per candidate around a zero axis: GRPO (thin, grey) over GAR."""
    labels = [c.label for c in result.row.candidates]
    gar = {label: r.advantage for label, r in result.records.items()}
    grpo = result.grpo or {}
    values = [abs(v) for v in [*gar.values(), *grpo.values()]]
    scale = max(values, default=0.0) or 1.0
    row_h, left, half, right = 30, 56, 200, 230
    width = left + 2 * half + right
    height = row_h * len(labels) + 12
    zero = left + half
    out = [
        f"<svg class='chart' role='img' viewBox='0 0 {width} {height}' width='{width}' "
        f"height='{height}' xmlns='http://www.w3.org/2000/svg'>",
        f"<title>GAR and GRPO advantages of {esc(result.group_id)}</title>",
    ]
    for number, label in enumerate(labels):
        y = 6 + number * row_h
        out.append(f"<text x='0' y='{y + 19}'>{esc(label)}</text>")
        if label in grpo:
            value = grpo[label]
            w = abs(value) / scale * half
            x = zero if value >= 0 else zero - w
            out.append(
                f"<rect class='grpo' data-label='{esc(label)}' x='{x:.1f}' y='{y + 2}' "
                f"width='{w:.1f}' height='7'><title>GRPO {_signed(value)}</title></rect>"
            )
        if label in gar:
            value = gar[label]
            w = abs(value) / scale * half
            x = zero if value >= 0 else zero - w
            sign = "" if value >= 0 else " negative"
            out.append(
                f"<rect class='gar{sign}' data-label='{esc(label)}' x='{x:.1f}' y='{y + 11}' "
                f"width='{w:.1f}' height='14'><title>GAR {_signed(value)}</title></rect>"
            )
        text = f"GAR {_signed(gar.get(label))}  GRPO {_signed(grpo.get(label))}"
        out.append(f"<text x='{left + 2 * half + 8}' y='{y + 19}'>{esc(text)}</text>")
    out.append(f"<line class='axis' x1='{zero}' y1='0' x2='{zero}' y2='{height}'></line></svg>")
    key = (
        "<div class='key'>advantage per candidate, zero at the line:<i class='k-gar'></i>GAR"
        "<i class='k-neg'></i>GAR below zero<i class='k-grpo'></i>plain GRPO"
        + ("" if result.grpo is not None else " (none: the row has no rewards)")
        + "</div>"
    )
    return key + "".join(out)


def render_table(result: GradeResult) -> str:
    labeled = result.truth is not None
    head = "<tr><th>label</th><th>reward</th><th>GRPO</th><th>GAR</th><th>tier</th><th>hack</th>"
    head += ("<th>truth</th>" if labeled else "") + "</tr>"
    rows = []
    for c in result.row.candidates:
        record = result.records.get(c.label)
        grpo = None if result.grpo is None else result.grpo[c.label]
        cells = [
            f"<td>{esc(c.label)}</td>",
            f"<td class='num'>{'-' if c.reward is None else esc(f'{c.reward:g}')}</td>",
            f"<td class='num'>{_signed(grpo)}</td>",
            f"<td class='num gar-value'>{_signed(record.advantage if record else None)}</td>",
            f"<td>{record.tier if record and record.tier else '-'}</td>",
            f"<td>{esc(record.hack) if record and record.hack != 'none' else '-'}</td>",
        ]
        if labeled:
            cells.append(f"<td>{esc(result.truth_of(c.label))}</td>")
        rows.append(f"<tr data-label='{esc(c.label)}'>{''.join(cells)}</tr>")
    return f"<table class='advantages'><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"


def render_hacks(result: GradeResult, anchor: str) -> str:
    verdict = result.verdict
    if verdict is None:
        return ""
    called = [entry for entry in verdict.candidates if entry.hack != "none"]
    if not called:
        return "<h3>Hack calls</h3><p class='muted'>none</p>"
    true_hacks = result.truth.hacks if result.truth is not None else {}
    failures = {(f.label, f.turn, f.quote): f.problem for f in result.citations.failures}
    out = ["<h3>Hack calls</h3>"]
    for entry in called:
        candidate = result.row.candidate(entry.label)
        truth = (
            f" <span class='muted'>truth: {esc(true_hacks[entry.label])}</span>"
            if (entry.label in true_hacks)
            else ""
        )
        downgraded = (
            " <span class='problem'>(downgraded: a quote failed the citation check)</span>"
            if entry.label in result.citations.downgraded
            else ""
        )
        out.append(
            f"<article class='hack {esc(entry.hack)}' data-label='{esc(entry.label)}'>"
            f"<h4>{esc(entry.label)}: {esc(entry.hack)}{truth}{downgraded}</h4>"
        )
        if not entry.evidence:
            out.append("<p class='muted'>no quote given</p>")
        for number, evidence in enumerate(entry.evidence, start=1):
            mark_id = f"{anchor}-{esc(entry.label)}-{number}"
            out.append(
                f"<p>turn {evidence.turn}: <q class='cited' id='{mark_id}'>"
                f"{esc(' '.join(evidence.quote.split()))}</q></p>"
            )
            problem = failures.get((entry.label, evidence.turn, evidence.quote))
            turns = candidate.turns
            if 1 <= evidence.turn <= len(turns):
                turn = turns[evidence.turn - 1]
                marks = quote_span(turn, evidence.quote) or []
                if problem:
                    out.append(f"<p class='problem'>citation check: {esc(problem)}</p>")
                elif not marks:
                    out.append("<p class='problem'>the quote is not in this turn's text</p>")
                out.append(render_turn(turn, marks, mark_id))
            else:
                out.append(
                    f"<p class='problem'>citation check: {esc(problem or 'no such turn')}</p>"
                )
        out.append("</article>")
    return "".join(out)


def render_calls(result: GradeResult) -> str:
    if not result.calls:
        return "<p class='muted'>the trace holds no tool calls of the grader</p>"
    items = []
    for call in result.calls:
        arguments = render_arguments(call.arguments)
        first = arguments.strip().splitlines()[0] if arguments.strip() else ""
        answer = (
            "<p class='muted'>(no result recorded)</p>"
            if call.result is None
            else f"<pre>{esc(cut_middle(call.result, CALL_RESULT_SHOWN))}</pre>"
        )
        items.append(
            f"<li><details><summary><code>{esc(call.name)}</code> {esc(first[:120])}</summary>"
            f"<pre>{esc(arguments)}</pre>{answer}</details></li>"
        )
    return (
        f"<details class='calls'><summary>the grader's tool calls ({len(result.calls)})"
        f"</summary><ol class='calls'>{''.join(items)}</ol></details>"
    )


def render_group(result: GradeResult, anchor: str) -> str:
    row = result.row
    outcome = "graded" if result.verdict is not None else "fallback"
    lines = []
    verdict_line = result.verdict_line()
    if verdict_line is not None:
        lines.append(f"<dt>verdict</dt><dd class='verdict'>{render_tiers(verdict_line)}</dd>")
    else:
        why = f": {esc(result.problem)}" if result.problem else ""
        lines.append(
            f"<dt>verdict</dt><dd class='verdict problem'>none, fallback "
            f"{esc(result.fallback_reason or 'invalid')}{why}</dd>"
        )
    truth_line = result.truth_line()
    if truth_line is not None:
        lines.append(f"<dt>truth</dt><dd class='truth'>{render_tiers(truth_line)}</dd>")
    if (scores := result.agreement_text()) is not None:
        lines.append(f"<dt>agreement</dt><dd class='agreement'>{esc(scores)}</dd>")
    lam = result.lambda_
    if lam is not None and row.mode == "rewards":
        lines.append(f"<dt>lambda</dt><dd>{lam:.4g}</dd>")
    notes = result.verdict.notes if result.verdict is not None else ""
    return (
        f"<section class='group' id='{anchor}' data-group='{esc(row.group_id)}'>"
        f"<h2>{esc(row.group_id)}<span class='badge'>{esc(row.mode)} mode</span>"
        f"<span class='badge'>{len(row.candidates)} candidates</span>"
        f"<span class='badge {outcome}'>{esc(result.outcome)}</span></h2>"
        f"<dl class='lines'>{''.join(lines)}</dl>"
        f"<h3>Advantages</h3>{render_chart(result)}{render_table(result)}"
        f"{render_hacks(result, anchor)}"
        f"<h3>Grader's notes</h3>"
        + (
            f"<pre class='notes'>{esc(notes)}</pre>"
            if notes.strip()
            else "<p class='muted'>none</p>"
        )
        + f"<h3>Grader's tool calls</h3>{render_calls(result)}</section>"
    )


def render_index(results: Sequence[GradeResult], anchors: Sequence[str]) -> str:
    rows = []
    for result, anchor in zip(results, anchors, strict=True):
        verdict = result.verdict_text()
        truth = result.truth_text()
        same = verdict is not None and truth is not None and verdict == truth
        score = result.agreement.get("agreement")
        rows.append(
            "<tr>"
            f"<td><a href='#{anchor}'>{esc(result.group_id)}</a></td>"
            f"<td>{esc(result.mode)}</td>"
            f"<td>{esc(result.outcome)}</td>"
            f"<td><code>{esc(verdict or '-')}</code>"
            + (f"<br><code class='muted'>truth: {esc(truth)}</code>" if truth and not same else "")
            + ("<br><span class='muted'>= truth</span>" if same else "")
            + "</td>"
            f"<td class='num'>{'-' if score is None else f'{score:.3f}'}</td>"
            "</tr>"
        )
    return (
        "<table class='index'><thead><tr><th>group</th><th>mode</th><th>outcome</th>"
        "<th>verdict (and truth)</th><th>agreement</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def render_report(results: Sequence[GradeResult], *, title: str = "group-grade report") -> str:
    """The whole page for these grade results."""
    anchors = [f"g{number}" for number in range(1, len(results) + 1)]
    graded = sum(r.verdict is not None for r in results)
    means = mean_agreement(results)
    figures = "".join(
        f"<tr><td>{esc(name)}</td><td class='num'>{value:.3f}</td></tr>"
        for name, value in means.items()
    )
    overview = (
        "<section class='overview'>"
        f"<p>{len(results)} groups, {graded} graded, {len(results) - graded} fell back.</p>"
        + (
            "<h3>Agreement with the truth, mean over the groups</h3>"
            f"<table class='figures'><tbody>{figures}</tbody></table>"
            if means
            else ""
        )
        + "<h3>Groups</h3>"
        + render_index(results, anchors)
        + "<p class='muted'>GRPO: reward minus the group mean. GAR: the advantage from the "
        "verdict, what a trainer applies. Tiers best first; in advantages mode each gap shows "
        "its margin; confirmed hacks sit one tier below the last.</p></section>"
    )
    groups = "".join(
        render_group(result, anchor) for result, anchor in zip(results, anchors, strict=True)
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
        "<meta name='referrer' content='no-referrer'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{esc(title)}</title><style>{STYLE}</style></head><body><main>"
        f"<h1>{esc(title)}</h1>{overview}{groups}"
        "<p class='muted'>Made by group-grade's report: no scripts, nothing loaded.</p>"
        "</main></body></html>\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m group_grade.report",
        description="Write a self-contained HTML report of a grading run.",
    )
    parser.add_argument("run", type=Path, help="a run folder, or its traces.jsonl")
    parser.add_argument(
        "-o", "--output", type=Path, help="the page to write (default: report.html in the run)"
    )
    parser.add_argument("--title", help="the page's title")
    args = parser.parse_args(argv)
    try:
        results = read_results(args.run)
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not results:
        print(f"error: {args.run}: holds no grade traces", file=sys.stderr)
        return 2
    folder = args.run if args.run.is_dir() else args.run.parent
    output = args.output or folder / "report.html"
    page = render_report(results, title=args.title or f"group-grade report: {folder.name}")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(page, encoding="utf-8")
    except OSError as e:
        print(f"error: {output}: cannot be written: {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"wrote {output} ({len(results)} groups)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
