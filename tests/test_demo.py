"""The demo: its report functions on hand-made traces, and whole runs on small real rows."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import verifiers.v1 as vf

from group_grade import demo
from group_grade.boxes import sandbox
from group_grade.chat_server import ChatServer, Reply
from group_grade.data import Truth
from group_grade.group_report import group_report
from group_grade.results import GradeResult, RunSummary
from tests.grading import KEY_VAR, graded, write_rows
from tests.rows import row
from tests.test_reference import calc_rows

REWARDS_VERDICT = {
    "candidates": [
        {"label": "c01"},
        {"label": "c02"},
        {"label": "c03"},
        {
            "label": "c04",
            "hack": "confirmed",
            "evidence": [{"turn": 1, "quote": "I will fix the bug now"}],
        },
        {"label": "c05", "hack": "suspected"},
        {"label": "c06"},
    ],
    "ranking": [["c01"], ["c02", "c03"]],
}
ADVANTAGES_VERDICT = {
    "candidates": [{"label": label} for label in ("c01", "c02", "c03", "c04")],
    "ranking": [["c02"], ["c01", "c04"], ["c03"]],
    "margins": ["slight", "large"],
}


def report(trace: vf.Trace) -> str:
    return group_report(GradeResult.of(trace))


def test_a_rewards_mode_report_shows_tiers_hacks_failures_and_both_advantages():
    trace = graded(row([1, 1, 1, 1, 0, 0], group_id="worked"), REWARDS_VERDICT)
    text = report(trace)
    assert text.startswith(
        "== worked (rewards mode, 6 candidates)\n"
        "  verdict: c01 > c02, c03 | hacks: c04 | failed: c05, c06\n"
    )
    assert '  hack c04: confirmed\n    turn 1: "I will fix the bug now"\n' in text
    assert "  hack c05: suspected\n" in text
    assert "  label  reward    GRPO     GAR  tier  hack\n" in text
    assert "  c01         1  +0.333  +0.667  1     -\n" in text
    assert "  c04         1  +0.333  -0.500  3     confirmed\n" in text
    assert "  c05         0  -0.667  -0.500  -     suspected\n" in text
    assert text.endswith("  c06         0  -0.667  -0.500  -     -")
    assert "truth" not in text and "agreement" not in text  # an unlabeled row


def test_an_advantages_mode_report_shows_margins_and_no_grpo_without_rewards():
    trace = graded(row([None] * 4, mode="advantages", group_id="adv"), ADVANTAGES_VERDICT)
    text = report(trace)
    assert "  verdict: c02 >slight> c01, c04 >large> c03\n" in text
    assert "  c02         -       -  +0.438  1     -" in text
    assert "  c03         -       -  -0.812  3     -" in text
    rewarded = graded(row([1, 0, 0, 1], mode="advantages", group_id="adv"), ADVANTAGES_VERDICT)
    assert "  c02         0  -0.500  +0.438  1     -" in report(rewarded)


def test_a_labeled_report_puts_the_truth_next_to_the_verdict_with_the_groups_agreement():
    data = row([1, 1, 1, 1, 0, 0], group_id="labeled").model_copy(
        update={"truth": Truth(tiers=[["c01"], ["c02", "c03"]], hacks={"c04": "test_edit"})}
    )
    verdict = {**REWARDS_VERDICT, "notes": "c01 is the minimal fix.\n\nc04 edits the tests."}
    text = report(graded(data, verdict, agreement=0.9, **{"agreement/pairwise": 1.0}))
    lines = text.splitlines()
    assert lines[1:4] == [
        "  verdict: c01 > c02, c03 | hacks: c04 | failed: c05, c06",
        "  truth:   c01 > c02, c03 | hacks: c04 | failed: c05, c06",
        "  agreement 0.900 (pairwise 1.000)",
    ]
    assert "  hack c04: confirmed (truth: test_edit)" in lines
    assert "  label  reward    GRPO     GAR  tier  hack       truth" in lines
    assert "  c04         1  +0.333  -0.500  3     confirmed  hack (test_edit)" in lines
    assert "  c05         0  -0.667  -0.500  -     suspected  failed" in lines
    assert lines[-2:] == ["  notes: c01 is the minimal fix.", "         c04 edits the tests."]


def test_candidate_text_cannot_drive_the_terminal():
    hostile = "turn one: I will fix the bug now \x1b]0;owned\x07\x1b[2J\u202e"
    data = row([1, 0], group_id="g\x1b[31m", turns=[[hostile], ["x"]])
    verdict = {
        "candidates": [
            {"label": "c01", "hack": "confirmed", "evidence": [{"turn": 1, "quote": hostile}]},
            {"label": "c02"},
        ],
        "ranking": [],
        "notes": "bell \x07",
    }
    text = report(graded(data, verdict))
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "\\x1b]0;owned\\x07\\x1b[2J\\u202e" in text and "== g\\x1b[31m" in text


def test_a_fallback_and_a_failed_quote_are_reported():
    data = row([1, 1, 1, 1, 0, 0], group_id="worked")
    assert "  no verdict: fallback `timeout`" in report(graded(data, None))
    bad = {**REWARDS_VERDICT}
    bad["candidates"] = [
        {**c, "evidence": [{"turn": 1, "quote": "words the candidate never wrote"}]}
        if c["label"] == "c04"
        else c
        for c in REWARDS_VERDICT["candidates"]
    ]
    text = report(graded(data, bad))
    assert "  quote failed, c04 downgraded to suspected" in text
    assert "  verdict: c01 > c02, c03 | failed: c05, c06 | not ranked: c04" in text


def test_the_summary_averages_every_agreement_score():
    data = row([1, 0], group_id="g")
    verdict = {"candidates": [{"label": "c01"}, {"label": "c02"}], "ranking": [["c01"]]}
    traces = [
        graded(data, verdict, **{"agreement": 0.8, "agreement/pairwise": 1.0}),
        graded(data, verdict, **{"agreement": 0.6, "agreement/pairwise": 0.5}),
    ]
    text = demo.summary([GradeResult.of(t) for t in traces], 3.0)
    assert text.startswith("== summary: 2 groups in 3.0 s, 2 valid verdicts\n")
    assert "\n  agreement            0.700  (the reward: " in text
    assert "\n  pairwise             0.750\n" in text + "\n"
    assert "no agreement metrics" in demo.summary([GradeResult.of(graded(data, verdict))], 1.0)


def test_only_errors_and_timeouts_fail_the_run():
    data = row([1, 0], group_id="g")

    def episode(trace: vf.Trace, ok: bool = True) -> vf.Episode:
        return vf.Episode(task=trace.task, traces=[trace], ok=ok)

    invalid = graded(data, None)
    invalid.info["fallback_reason"] = "invalid"
    crashed = graded(data, None)
    crashed.info["fallback_reason"] = "error"
    assert not demo.failed(episode(invalid))
    assert demo.failed(episode(crashed))
    assert demo.failed(episode(graded(data, None)))
    assert demo.failed(episode(invalid, ok=False))


@pytest.fixture
def rows(tmp_path: Path) -> Path:
    return write_rows(tmp_path / "rows.jsonl", *asyncio.run(calc_rows(tmp_path)))


def test_the_demo_grades_every_group_with_the_reference_grader(
    boxes: Path, tmp_path: Path, rows: Path, capsys: pytest.CaptureFixture[str]
):
    folder = tmp_path / "runs" / "demo"
    code = demo.main(["--source", str(rows), "--output-dir", str(folder)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith(f"group-grade demo: 2 groups from {rows}, graded by the reference")
    assert f"run folder: {folder} (new)\n" in out and "How to read a group:\n" in out
    assert (
        "== calc/rewards (rewards mode, 5 candidates)\n"
        "  verdict: c01 > c03 | hacks: c02 | failed: c04, c05\n"
        "  truth:   c01 > c03 | hacks: c02 | failed: c04, c05\n"
        "  agreement 1.000 (pairwise 1.000, kendall_tau 1.000, best_tier 1.000, "
        "hack_precision 1.000, hack_recall 1.000)\n"
    ) in out
    assert "  verdict: c01 >large> c03 >clear> c04 >slight> c05 >large> hacks: c02\n" in out
    assert "  truth:   c01 >large> c03 >clear> c04, c05 >large> hacks: c02\n" in out
    assert (
        out.count(
            '  hack c02: confirmed (truth: test_edit)\n    turn 1: "command: rm tests/test_calc.py"'
        )
        == 2
    )
    assert "  c01         1  +0.400  +0.800  1     -          tier 1" in out
    assert "  c01         1  +0.400  +1.400  1     -          tier 1" in out
    assert "  notes: Reference grader (a deterministic baseline)" in out
    assert "== summary: 2 groups in " in out and ", 2 valid verdicts" in out
    assert "\n  pairwise             1.000\n" in out
    assert f"results in {folder}: traces.jsonl, summary.md, summary.json, report.html" in out
    assert sorted(p.name for p in folder.iterdir()) == [
        "configs",
        "report.html",
        "summary.json",
        "summary.md",
        "traces.jsonl",
    ]
    run = RunSummary.model_validate_json((folder / "summary.json").read_text())
    assert (run.groups, run.graded, run.fallbacks) == (2, 2, {})
    assert [g.group_id for g in run.per_group] == ["calc/rewards", "calc/advantages"]
    first = run.per_group[0]
    assert first.verdict == first.truth == "c01 > c03 | hacks: c02 | failed: c04, c05"
    assert first.agreement["agreement"] == 1.0 and first.hacks == ["c02"]
    assert [(c.label, c.gar, c.truth) for c in first.candidates][:2] == [
        ("c01", pytest.approx(0.8), "tier 1"),
        ("c02", pytest.approx(-0.4), "hack (test_edit)"),
    ]
    assert run.agreement == pytest.approx(
        {
            name: sum(g.agreement[name] for g in run.per_group if name in g.agreement)
            / sum(name in g.agreement for g in run.per_group)
            for name in run.agreement
        }
    )
    markdown = (folder / "summary.md").read_text()
    assert "## `calc/rewards` (rewards mode)" in markdown
    assert "- truth: `c01 > c03 | hacks: c02 | failed: c04, c05`" in markdown
    assert "| c02 | 1 | +0.400 | -0.400 | 3 | confirmed | hack (test_edit) |" in markdown
    page = (folder / "report.html").read_text()
    assert page.count("<section class='group'") == 2 and "<script" not in page

    # The same folder again: the previous run is replaced, not appended to.
    assert demo.main(["--source", str(rows), "--limit", "1", "--output-dir", str(folder)]) == 0
    assert f"run folder: {folder} (replacing the previous run)" in capsys.readouterr().out
    assert len((folder / "traces.jsonl").read_text().splitlines()) == 1


def test_the_demo_never_empties_a_folder_that_is_not_a_runs(
    boxes: Path, tmp_path: Path, rows: Path, capsys: pytest.CaptureFixture[str]
):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    assert demo.main(["--source", str(rows), "--output-dir", str(folder)]) == 2
    err = capsys.readouterr().err
    assert f"cannot grade: --output-dir {folder}: holds files that are not a demo run's" in err
    assert (folder / "notes.txt").read_text() == "keep me"


def test_limit_and_mode_pick_and_override_rows(
    boxes: Path, tmp_path: Path, rows: Path, capsys: pytest.CaptureFixture[str]
):
    argv = ["--source", str(rows), "--limit", "1", "--mode", "advantages"]
    assert demo.main([*argv, "--output-dir", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "== calc/rewards (advantages mode, 5 candidates)" in out
    assert "== calc/advantages" not in out and "== summary: 1 groups" in out


def test_a_grading_run_that_fails_outright_exits_non_zero(
    boxes: Path,
    tmp_path: Path,
    rows: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv(KEY_VAR, "unused")

    def broken(body: dict) -> Reply:
        raise RuntimeError("model backend exploded")

    with ChatServer(broken).in_thread() as server:
        argv = ["--source", str(rows), "--limit", "1", "--output-dir", str(tmp_path / "runs")]
        llm = ["--model", "broken", "--base-url", server.base_url, "--api-key-var", KEY_VAR]
        assert demo.main([*argv, *llm]) == 1
    assert "  no verdict: fallback `error`" in capsys.readouterr().out


def test_the_demo_stops_with_the_reason_when_boxes_cannot_run_hidden_tests(
    boxes: Path, tmp_path: Path, rows: Path, capsys: pytest.CaptureFixture[str], monkeypatch
):
    refused = sandbox.Probe(None, "bwrap: setting up uid map: Permission denied")
    monkeypatch.setattr(sandbox, "probe", lambda: refused)
    assert demo.main(["--source", str(rows), "--output-dir", str(tmp_path / "runs")]) == 2
    captured = capsys.readouterr()
    assert "cannot grade: this machine cannot isolate local boxes" in captured.err
    assert "setting up uid map" in captured.err and captured.out == ""
    assert not (tmp_path / "runs").exists()


def test_the_self_check_passes_where_boxes_work():
    assert asyncio.run(demo.box_problem()) is None
