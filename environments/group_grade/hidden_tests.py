"""The hidden tests of a row, run in a candidate's box with a result its code cannot fake by
printing: the JUnit XML the run writes outside the candidate's tree, with the exit code.

A row's ``hidden_test_command`` runs as given (its exit code is the result; a JUnit XML it
writes to ``$GRADE_RESULTS/junit.xml`` adds the counts). Otherwise, when the privileged
materials hold test files in any folder, group-grade's own runner
(``box_files/run_hidden_tests.py``) runs pytest over them, ignoring the candidate's test
configuration, and must leave a JUnit XML: a run without one did not pass. Failing both, a
``run_tests.sh`` among them runs (its exit code is the result).

Code under test still runs inside the test process: a module that patches pytest at import
time is out of reach of any runner; the grader's audit of the patch is what catches that.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal
from xml.etree import ElementTree

from pydantic import BaseModel, ConfigDict, Field

from group_grade.boxes.base import Box, BoxError, CommandResult
from group_grade.data import GroupGradeData
from group_grade.layout import PRIVILEGED_SUBDIR
from group_grade.transcript import cut_output, one_line

RUNNER = "run_hidden_tests.py"
RUNNER_CONFIG = "pytest.ini"
JUNIT = "junit.xml"
MAX_JUNIT_BYTES = 8 << 20
MAX_FAILING_SHOWN = 20
COMMAND_SHOWN = 200
_DECLARATIONS = re.compile(rb"<!DOCTYPE|<!ENTITY", re.IGNORECASE)


def grading_files(data: GroupGradeData) -> dict[str, bytes]:
    """A box's grading area, relative to it: the privileged materials and the runner."""
    runner = (Path(__file__).parent / "box_files" / RUNNER).read_bytes()
    files = {RUNNER: runner, RUNNER_CONFIG: b"[pytest]\n"}
    for path, content in data.privileged.items():
        files[f"{PRIVILEGED_SUBDIR}/{path}"] = content.encode(errors="backslashreplace")
    return files


TEST_FILE = re.compile(r"(?:^|/)(?:test_[^/]*|[^/]*_test)\.py$")
"""What pytest collects by default, in any folder of the privileged materials."""
RUN_SCRIPT = "run_tests.sh"


@dataclass(frozen=True)
class HiddenTestPlan:
    """How a row's hidden tests run: a command, and whether its result must be a JUnit XML
    (group-grade's runner) or is its exit code (a declared command, a ``run_tests.sh``)."""

    command: str
    junit_required: bool


def hidden_test_plan(data: GroupGradeData, grade_dir: str) -> HiddenTestPlan | None:
    """The row's declared command; else group-grade's pytest runner when the privileged
    materials hold test files (``test_*.py``, ``*_test.py``, whatever the folder); else their
    ``run_tests.sh``; None when there is nothing to run. Each starts by removing any earlier
    result."""
    clear = 'rm -f "$GRADE_RESULTS/junit.xml"'
    if data.hidden_test_command is not None:
        return HiddenTestPlan(f"{clear}\n{data.hidden_test_command}", junit_required=False)
    if any(TEST_FILE.search(path) for path in data.privileged):
        python = '"$(command -v python3 || command -v python)"'
        runner = shlex.quote(f"{grade_dir}/{RUNNER}")
        return HiddenTestPlan(f"{clear}\n{python} -I {runner}", junit_required=True)
    scripts = sorted(p for p in data.privileged if PurePosixPath(p).name == RUN_SCRIPT)
    if scripts:
        script = shlex.quote(f"{grade_dir}/{PRIVILEGED_SUBDIR}/{scripts[0]}")
        return HiddenTestPlan(f"{clear}\nbash {script}", junit_required=False)
    return None


def describe(data: GroupGradeData) -> str:
    """How ``run_hidden_tests`` runs this row's hidden tests, in a few words for the prompt."""
    plan = hidden_test_plan(data, "$GRADE_DIR")
    if plan is None:
        return "this group has no hidden tests to run: it answers `not_run`"
    if data.hidden_test_command is not None:
        return f"the row's own command `{one_line(data.hidden_test_command, COMMAND_SHOWN)}`"
    if plan.junit_required:
        return "pytest, ignoring the candidate's test configuration, `conftest.py` and plugins"
    return "the hidden `run_tests.sh`; its exit code is the result"


Status = Literal["passed", "failed", "not_run"]


class JUnitCounts(BaseModel):
    model_config = ConfigDict(frozen=True)

    tests: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    failing: list[str] = Field(default_factory=list)
    """Ids (``classname::name``) of the tests that failed or errored."""


def parse_junit(raw: bytes) -> JUnitCounts:
    """The outcome of every ``testcase`` in a JUnit XML; ValueError when it is not one."""
    if _DECLARATIONS.search(raw):
        raise ValueError("the JUnit XML holds DOCTYPE or ENTITY declarations")
    try:
        root = ElementTree.fromstring(raw)
    except ElementTree.ParseError as e:
        raise ValueError(f"the JUnit XML does not parse: {e}") from e
    if root.tag not in ("testsuites", "testsuite"):
        raise ValueError(f"the JUnit XML's root is <{root.tag}>, not <testsuites>")
    counts = {"tests": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failing: list[str] = []
    for case in root.iter("testcase"):
        counts["tests"] += 1
        kinds = {child.tag for child in case}
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if "error" in kinds:
            counts["errors"] += 1
            failing.append(name)
        elif "failure" in kinds:
            counts["failed"] += 1
            failing.append(name)
        elif "skipped" in kinds:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return JUnitCounts(**counts, failing=failing)


class HiddenTestRun(BaseModel):
    """What ``run_hidden_tests`` found for one candidate (the tool answers this as JSON)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    label: str
    status: Status
    """`passed`: exit code 0 and every test passed by the JUnit result; `failed`; `not_run`:
    the tests could not be run in this box (the reason says why)."""
    reason: str
    """Why the status is what it is, in one line."""
    exit_code: int | None = None
    counts: JUnitCounts | None = None
    """From the JUnit XML the run wrote (None: it wrote none)."""
    command: str = ""
    output: str = ""
    """What the run printed (cut to head and tail). The candidate's code prints here too:
    it is never evidence that a test passed."""


def not_run(label: str, reason: str) -> HiddenTestRun:
    return HiddenTestRun(label=label, status="not_run", reason=reason)


def judge(
    result: CommandResult,
    junit: bytes | None,
    *,
    junit_required: bool,
    timeout: float,
) -> tuple[Status, str, JUnitCounts | None]:
    """The status of one run from its exit code and JUnit XML (None: it wrote none)."""
    counts: JUnitCounts | None = None
    problem: str | None = None
    if junit is not None:
        try:
            counts = parse_junit(junit)
        except ValueError as e:
            problem = str(e)
    if result.timed_out:
        return "failed", f"timed out after {timeout:g} s", counts
    if problem is not None:
        return "failed", f"unreadable result: {problem}", None
    if counts is None:
        if junit_required:
            return (
                "failed",
                "the run wrote no JUnit result (it ended before pytest reported: a crash, "
                "an exit or a kill in the code under test, or no pytest in the box)",
                None,
            )
        if result.exit_code == 0:
            return "passed", "exit code 0 (the declared command wrote no JUnit result)", None
        return "failed", f"exit code {result.exit_code}", None
    tally = (
        f"{counts.passed} passed, {counts.failed} failed, {counts.errors} errors, "
        f"{counts.skipped} skipped"
    )
    if counts.tests == 0:
        return "failed", f"no tests ran (exit code {result.exit_code})", counts
    if counts.failed or counts.errors:
        return "failed", f"{tally} (exit code {result.exit_code})", counts
    if result.exit_code != 0:
        return "failed", f"exit code {result.exit_code}, although the JUnit says {tally}", counts
    return "passed", f"{tally} (exit code 0)", counts


async def run(
    box: Box, data: GroupGradeData, label: str, *, timeout: float, output_cap: int
) -> HiddenTestRun:
    """Run ``data``'s hidden tests in ``label``'s box (its grading area already staged)."""
    plan = hidden_test_plan(data, box.grade_dir)
    if plan is None:
        return not_run(label, "the privileged materials hold no test file and no run_tests.sh")
    command = plan.command
    try:
        result = await box.run(
            command, timeout=timeout, env=dict(data.box_env), workdir=data.box_workdir
        )
        junit = await box.read_result(JUNIT, max_bytes=MAX_JUNIT_BYTES)
    except BoxError as e:
        return not_run(label, f"the hidden tests could not be run in this box: {e}")
    status, reason, counts = judge(
        result,
        junit,
        junit_required=plan.junit_required,
        timeout=timeout,
    )
    if counts is not None and len(counts.failing) > MAX_FAILING_SHOWN:
        counts = counts.model_copy(update={"failing": counts.failing[:MAX_FAILING_SHOWN]})
    return HiddenTestRun(
        label=label,
        status=status,
        reason=reason,
        exit_code=None if result.timed_out else result.exit_code,
        counts=counts,
        command=command,
        output=cut_output(result.output, output_cap, lines_known=not result.dropped),
    )
