"""The layers: the pure core imports nothing from the layers above it."""

from __future__ import annotations

import json
import subprocess
import sys

CORE = (
    "group_grade.layout",
    "group_grade.validators",
    "group_grade.transcript",
    "group_grade.digest",
    "group_grade.verdict",
    "group_grade.data",
    "group_grade.sources",
    "group_grade.rows",
    "group_grade.citations",
    "group_grade.acceptance",
    "group_grade.advantages",
    "group_grade.agreement",
    "group_grade.grade_record",
    "group_grade.grade_traces",
)
"""Rows and their loading, the transcript format, the verdict rules, the citation check,
the advantages, the agreement with a truth, and the grade record."""


def test_the_core_imports_nothing_from_the_layers_above_it() -> None:
    code = (
        "import importlib, json, sys\n"
        f"for name in {list(CORE)!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'group_grade')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert json.loads(done.stdout) == sorted({"group_grade", *CORE})


def test_the_package_still_exports_the_env_and_the_harness() -> None:
    import group_grade
    from group_grade.harness import GraderHarness
    from group_grade.taskset import GroupGradeEnv, GroupGradeTaskset

    exported = {name: getattr(group_grade, name) for name in group_grade.__all__}
    assert exported == {
        "GraderHarness": GraderHarness,
        "GroupGradeEnv": GroupGradeEnv,
        "GroupGradeTaskset": GroupGradeTaskset,
    }
