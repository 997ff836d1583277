"""The hidden-test run: which command a row's tests get, how its JUnit result is read and
judged, and the same outcome in real local boxes whatever the privileged layout."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from group_grade import hidden_tests
from group_grade.boxes.base import CommandResult
from group_grade.boxes.local import LocalBackend
from group_grade.data import Candidate, GroupGradeData
from group_grade.hidden_tests import HiddenTestPlan, JUnitCounts, hidden_test_plan, judge
from tests.projects import BUGGY, FIXED, HIDDEN_TESTS, snapshot

TEST = HIDDEN_TESTS["tests/test_hidden.py"]


def row(privileged: dict[str, str], command: str | None = None) -> GroupGradeData:
    return GroupGradeData(
        group_id="g",
        candidates=[Candidate(label="c01", reward=1.0)],
        privileged=privileged,
        hidden_test_command=command,
    )


def junit(*cases: str) -> bytes:
    """A JUnit XML whose test cases hold the given child elements ('' = passed)."""
    body = "".join(
        f'<testcase classname="t" name="case{i}">{f"<{kind}/>" if kind else ""}</testcase>'
        for i, kind in enumerate(cases)
    )
    return f'<?xml version="1.0"?><testsuites><testsuite>{body}</testsuite></testsuites>'.encode()


def test_the_plan_follows_the_layout():
    pytest_plan = hidden_test_plan(row({"hidden_tests/test_a.py": TEST}), "/grade")
    assert pytest_plan is not None and pytest_plan.junit_required
    assert "python" in pytest_plan.command and "/grade/run_hidden_tests.py" in pytest_plan.command
    for layout in ({"tests/test_a.py": TEST}, {"a_test.py": TEST}, {"x/y/test_z.py": TEST}):
        assert hidden_test_plan(row(layout), "/g") == hidden_test_plan(
            row({"t/test_a.py": ""}), "/g"
        )
    script = hidden_test_plan(row({"r2e/run_tests.sh": "true", "r2e/check.py": ""}), "/g")
    assert script == HiddenTestPlan(
        'rm -f "$GRADE_RESULTS/junit.xml"\nbash /g/privileged/r2e/run_tests.sh', False
    )
    declared = hidden_test_plan(row({"tests/test_a.py": TEST}, "make check"), "/g")
    assert declared == HiddenTestPlan('rm -f "$GRADE_RESULTS/junit.xml"\nmake check', False)
    assert hidden_test_plan(row({"gold.patch": "diff"}), "/g") is None


def test_junit_counts_every_outcome_and_refuses_what_is_not_a_junit_result():
    counts = hidden_tests.parse_junit(junit("", "failure", "error", "skipped", ""))
    assert counts == JUnitCounts(
        tests=5, passed=2, failed=1, errors=1, skipped=1, failing=["t::case1", "t::case2"]
    )
    bomb = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><testsuites/>'
    for bad, problem in (
        (bomb, "DOCTYPE"),
        (b"<html/>", "root is <html>"),
        (b"2 passed in 0.01s", "does not parse"),
    ):
        with pytest.raises(ValueError, match=problem):
            hidden_tests.parse_junit(bad)


@pytest.mark.parametrize(
    ("exit_code", "xml", "required", "status", "reason"),
    [
        (0, junit("", ""), True, "passed", "2 passed, 0 failed, 0 errors, 0 skipped (exit code 0)"),
        (1, junit("", "failure"), True, "failed", "1 passed, 1 failed"),
        (0, junit("", "failure"), True, "failed", "1 failed"),  # exit code forced to 0
        (1, junit("", ""), True, "failed", "exit code 1, although the JUnit says 2 passed"),
        (0, None, True, "failed", "wrote no JUnit result"),  # os._exit(0) before pytest reported
        (5, junit(), True, "failed", "no tests ran"),
        (0, b"garbage", True, "failed", "unreadable result"),
        (0, None, False, "passed", "exit code 0 (the declared command wrote no JUnit result)"),
        (3, None, False, "failed", "exit code 3"),
    ],
)
def test_the_status_needs_the_exit_code_and_the_junit_result_to_agree(
    exit_code: int, xml: bytes | None, required: bool, status: str, reason: str
):
    result = CommandResult(exit_code, "..\n2 passed in 0.01s\n")  # printed text never counts
    got_status, got_reason, _ = judge(result, xml, junit_required=required, timeout=60)
    assert got_status == status and reason in got_reason


def test_a_timed_out_run_failed():
    result = CommandResult(124, "2 passed", timed_out=True)
    assert judge(result, junit("", ""), junit_required=True, timeout=5)[:2] == (
        "failed",
        "timed out after 5 s",
    )


RUN_TESTS_SH = f'PYTHONPATH="$PWD" {sys.executable} "$GRADE_PRIVILEGED/r2e/check.py"\n'
CHECK = "from calc import add\nassert add(2, 3) == 5 and add(-2, -3) == -5\n"

LAYOUTS = {
    "tests": {"tests/test_hidden.py": TEST},
    "hidden_tests": {"hidden_tests/test_calc_hidden.py": TEST},
    "run_tests.sh": {"r2e/run_tests.sh": RUN_TESTS_SH, "r2e/check.py": CHECK},
}


@pytest.mark.anyio
@pytest.mark.parametrize("layout", list(LAYOUTS))
async def test_fixed_passes_and_buggy_fails_under_every_layout(tmp_path: Path, layout: str):
    backend = LocalBackend(box_parent=tmp_path / "boxes")
    data = row(LAYOUTS[layout])
    statuses = {}
    for name, code in (("fixed", FIXED), ("buggy", BUGGY)):
        box = await backend.restore(await snapshot(tmp_path, name, code))
        try:
            await box.stage_grading(hidden_tests.grading_files(data))
            run = await hidden_tests.run(box, data, "c01", timeout=120, output_cap=2000)
        finally:
            await box.close()
        statuses[name] = run.status
    assert statuses == {"fixed": "passed", "buggy": "failed"}


@pytest.mark.anyio
async def test_a_row_without_hidden_tests_is_not_run(tmp_path: Path):
    box = await LocalBackend(box_parent=tmp_path / "boxes").restore(
        await snapshot(tmp_path, "fixed", FIXED)
    )
    data = row({"gold.patch": "diff"})
    try:
        run = await hidden_tests.run(box, data, "c01", timeout=60, output_cap=2000)
    finally:
        await box.close()
    assert run.status == "not_run" and "no test file and no run_tests.sh" in run.reason
