"""The grade record: the one schema of what group-grade keeps in a grade trace's info."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from group_grade.acceptance import accept_verdict
from group_grade.advantages import GarKnobs
from group_grade.grade_record import GradeRecord
from group_grade.grade_traces import is_grade_record
from tests.rows import row
from tests.traces import Turn, make_trace

VERDICT = {
    "candidates": [{"label": "c01"}, {"label": "c02"}, {"label": "c03"}],
    "ranking": [["c01"], ["c02"]],
}


def test_write_then_read_gives_the_record_back_and_the_info_is_plain_json() -> None:
    data = row([1, 1, 0], group_id="g").model_copy(update={"trace_ids": {"c01": "t1"}})
    outcome = accept_verdict(data, VERDICT)
    record = GradeRecord(
        group_id="g",
        trace_ids=data.trace_ids,
        grade_root="grade",
        verdict=outcome.verdict,
        citations=outcome.citations,
    ).mapped(data, GarKnobs(f_min=0.5, lambda_max=1.5))
    trace = make_trace([Turn("I graded it.")], info={"checkpoint": "local:/x"})
    record.write(trace)
    assert GradeRecord.of(trace) == record
    info = json.loads(json.dumps(trace.info))
    assert sorted(info) == [
        "checkpoint",
        "citations",
        "gar",
        "gar_config",
        "grade_root",
        "group_id",
        "kind",
        "trace_ids",
        "verdict",
    ]
    assert info["kind"] == "grade" and info["trace_ids"] == {"c01": "t1"}
    assert info["gar_config"] == {"f_min": 0.5, "lambda_max": 1.5}
    # rewards 1, 1, 0 (mean 2/3), c01 above c02: w = 1 and 0, f = 1 and 0.5, lambda = 4/3
    assert {label: round(r["advantage"], 4) for label, r in info["gar"].items()} == {
        "c01": 0.4444,
        "c02": 0.2222,
        "c03": -0.6667,
    }
    assert info["gar"]["c01"]["lambda"] == pytest.approx(4 / 3)
    # Only the record's own empty fields are left out: every advantage record keeps its keys.
    assert info["gar"]["c03"] == {
        "label": "c03",
        "reward": 0.0,
        "tier": None,
        "w": None,
        "f": None,
        "lambda": pytest.approx(4 / 3),
        "win_rate": None,
        "hack": "none",
        "evidence": [],
        "advantage": pytest.approx(-2 / 3),
        "fallback_reason": None,
    }


def test_writing_again_replaces_what_the_record_held_and_keeps_other_keys() -> None:
    data = row([1, 0], group_id="g")
    trace = make_trace([], info={"checkpoint": "local:/x"})
    GradeRecord(group_id="g", verdict_error="no verdict was written").write(trace)
    record = GradeRecord.of(trace)
    assert record is not None and record.verdict_error == "no verdict was written"
    record.model_copy(update={"verdict_error": None, "fallback_reason": "timeout"}).mapped(
        data, GarKnobs()
    ).write(trace)
    assert "verdict_error" not in trace.info and trace.info["checkpoint"] == "local:/x"
    assert trace.info["fallback_reason"] == "timeout"
    assert [r["advantage"] for r in trace.info["gar"].values()] == [0.5, -0.5]
    assert {r["fallback_reason"] for r in trace.info["gar"].values()} == {"timeout"}


def test_an_unmarked_trace_has_no_record_and_a_marked_one_must_hold_one() -> None:
    plain = make_trace([Turn("I fixed it.")], info={"group_id": "g"})
    assert GradeRecord.of(plain) is None and not is_grade_record(plain)
    forged = make_trace([], info={"kind": "grade", "group_id": "g", "gar": {"c01": "high"}})
    assert is_grade_record(forged)
    with pytest.raises(ValidationError, match=r"gar\.c01"):
        GradeRecord.of(forged)


def test_the_advantages_are_the_recorded_ones_only_for_the_knobs_they_were_mapped_with() -> None:
    data = row([1, 1, 0], group_id="g")
    verdict = accept_verdict(data, VERDICT).verdict
    record = GradeRecord(group_id="g", verdict=verdict).mapped(data, GarKnobs())
    assert record.gar is not None
    assert record.advantages(data, GarKnobs()) == [record.gar[x] for x in data.labels]
    other = record.advantages(data, GarKnobs(f_min=1.0))
    assert [round(r.advantage, 4) for r in other] == [0.3333, 0.3333, -0.6667]
    bare = GradeRecord(group_id="g")
    with pytest.raises(ValueError, match="carries no advantages"):
        bare.advantages(data, GarKnobs())
