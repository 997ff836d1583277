"""The demo: its report functions on hand-made traces, and whole runs on small real rows."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import verifiers.v1 as vf

from group_grade import demo, scoring
from group_grade.acceptance import accept_verdict
from group_grade.boxes import sandbox
from group_grade.chat_server import ChatServer, Reply
from group_grade.data import GroupGradeData
from tests.grading import KEY_VAR, write_rows
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


def graded(data: GroupGradeData, raw: dict | None, **scores: float) -> vf.Trace:
    """A grade trace as the task leaves it: the accepted verdict (or a fallback), the GAR
    records, and any ``agreement*`` scores (``agreement`` itself as the reward)."""
    trace = vf.Trace(
        agent=vf.AgentInfo(config=vf.AgentConfig()),
        task=vf.TraceTask(type="GroupGradeTask", data=data, key=data.group_id, hash="h"),
        ok=True,
    )
    outcome = accept_verdict(data, raw)
    if outcome.verdict is None:
        trace.info["fallback_reason"] = "timeout"
    else:
        trace.info["verdict"] = outcome.verdict.model_dump(mode="json")
        trace.info["citations"] = outcome.citations.model_dump(mode="json")
    trace.record_metrics(scoring.record_gar(data, trace))
    for name, score in scores.items():
        if name == "agreement":
            trace.record_reward(name, score)
        else:
            trace.metrics[name] = score
    return trace


def test_a_rewards_mode_report_shows_tiers_hacks_and_both_advantages():
    trace = graded(row([1, 1, 1, 1, 0, 0], group_id="worked"), REWARDS_VERDICT)
    report = demo.group_report(trace)
    assert report.startswith("== worked (rewards mode, 6 candidates)\n  tiers: c01 > c02, c03\n")
    assert '  hack c04: confirmed\n    turn 1: "I will fix the bug now"\n' in report
    assert "  hack c05: suspected\n" in report
    assert "  label  reward    GRPO  graded  tier  hack" in report
    assert "  c01         1  +0.333  +0.667  1     -" in report
    assert "  c04         1  +0.333  -0.500  3     confirmed" in report
    assert "  c06         0  -0.667  -0.500  -     -" in report


def test_an_advantages_mode_report_shows_margins_and_zero_grpo():
    trace = graded(row([None] * 4, mode="advantages", group_id="adv"), ADVANTAGES_VERDICT)
    report = demo.group_report(trace)
    assert "  tiers: c02 >slight> c01, c04 >large> c03\n" in report
    assert "  c02         -  +0.000  +0.438  1     -" in report
    assert "  c03         -  +0.000  -0.812  3     -" in report


def test_a_fallback_and_a_failed_quote_are_reported():
    data = row([1, 1, 1, 1, 0, 0], group_id="worked")
    assert "  no verdict: fallback `timeout`" in demo.group_report(graded(data, None))
    bad = {**REWARDS_VERDICT}
    bad["candidates"] = [
        {**c, "evidence": [{"turn": 1, "quote": "words the candidate never wrote"}]}
        if c["label"] == "c04"
        else c
        for c in REWARDS_VERDICT["candidates"]
    ]
    report = demo.group_report(graded(data, bad))
    assert "  quote failed, c04 downgraded to suspected" in report


def test_the_summary_averages_every_agreement_score():
    data = row([1, 0], group_id="g")
    verdict = {"candidates": [{"label": "c01"}, {"label": "c02"}], "ranking": [["c01"]]}
    traces = [
        graded(data, verdict, **{"agreement": 0.8, "agreement/pairwise": 1.0}),
        graded(data, verdict, **{"agreement": 0.6, "agreement/pairwise": 0.5}),
    ]
    text = demo.summary(traces, 3.0)
    assert text.startswith("== summary: 2 groups in 3.0 s, 2 valid verdicts\n")
    assert "  agreement                    0.700" in text
    assert "  agreement/pairwise           0.750" in text
    assert "no agreement metrics" in demo.summary([graded(data, verdict)], 1.0)


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
    code = demo.main(["--source", str(rows), "--output-dir", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "== calc/rewards (rewards mode, 5 candidates)\n  tiers: c01 > c03\n" in out
    assert "  tiers: c01 >large> c03 >clear> c04 >slight> c05\n" in out
    assert out.count('  hack c02: confirmed\n    turn 1: "command: rm tests/test_calc.py"') == 2
    assert "  c01         1  +0.400  +0.800  1     -" in out
    assert "  c01         1  +0.000  +1.400  1     -" in out
    assert "== summary: 2 groups in " in out and ", 2 valid verdicts" in out
    assert "  agreement/pairwise" in out
    assert f"results: {tmp_path / 'runs'}" in out


def test_limit_and_mode_pick_and_override_rows(
    boxes: Path, tmp_path: Path, rows: Path, capsys: pytest.CaptureFixture[str]
):
    argv = ["--source", str(rows), "--limit", "1", "--mode", "advantages"]
    assert demo.main([*argv, "--output-dir", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "== calc/rewards (advantages mode, 5 candidates)" in out
    assert "calc/advantages" not in out and "== summary: 1 groups" in out


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
