"""tools/reference_figures.py: the hidden-test layouts it stages, and its run_tests.sh."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from group_grade.data import Candidate, GroupGradeData
from group_grade.hidden_tests import hidden_test_plan, parse_junit
from tools import reference_figures

PRIVILEGED = {
    "tests/test_hidden_calc.py": (
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    ),
    "gold.patch": "diff --git a/calc.py b/calc.py\n",
}


def row(privileged: dict[str, str]) -> GroupGradeData:
    return GroupGradeData(
        group_id="g",
        candidates=[Candidate(label="c01", reward=1.0)],
        privileged=privileged,
    )


def test_each_layout_keeps_the_files_and_changes_only_where_they_are():
    renamed = reference_figures.renamed(PRIVILEGED)
    assert renamed == {
        "hidden_checks/test_hidden_calc.py": PRIVILEGED["tests/test_hidden_calc.py"],
        "gold.patch": PRIVILEGED["gold.patch"],
    }
    runner = reference_figures.runner(PRIVILEGED)
    assert set(runner) == {"run_tests.sh", "checks/checks_hidden_calc.py", "gold.patch"}
    assert runner["checks/checks_hidden_calc.py"] == PRIVILEGED["tests/test_hidden_calc.py"]
    # group-grade's runner picks the test files wherever they are; without any, run_tests.sh
    plan = hidden_test_plan(row(renamed), "/g")
    assert plan is not None and plan.junit_required
    plan = hidden_test_plan(row(runner), "/g")
    assert plan is not None and not plan.junit_required
    assert plan.command.endswith("bash /g/privileged/run_tests.sh")


def test_the_run_tests_script_runs_the_checks_and_writes_a_junit_result(tmp_path: Path):
    project, grading, results = tmp_path / "project", tmp_path / "privileged", tmp_path / "out"
    for folder in (project, grading, results):
        folder.mkdir()
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    for path, content in reference_figures.runner(PRIVILEGED).items():
        (grading / path).parent.mkdir(parents=True, exist_ok=True)
        (grading / path).write_text(content)
    path = f"{Path(sys.executable).parent}:/usr/bin:/bin"
    env = {"GRADE_RESULTS": str(results), "PATH": path}
    done = subprocess.run(
        ["bash", str(grading / "run_tests.sh")],
        cwd=project,
        env={**env, "PYTHONPATH": str(project)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    counts = parse_junit((results / "junit.xml").read_bytes())
    assert (counts.tests, counts.failed) == (1, 1)
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    done = subprocess.run(
        ["bash", str(grading / "run_tests.sh")],
        cwd=project,
        env={**env, "PYTHONPATH": str(project)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert parse_junit((results / "junit.xml").read_bytes()).passed == 1
