"""A tiny real Python project with a bug, candidate snapshots of it, and its hidden tests."""

from __future__ import annotations

import sys
from pathlib import Path

from group_grade.boxes.local import make_local_checkpoint

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
HIDDEN_TESTS = {
    "tests/test_hidden.py": (
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_add_negative():\n    assert add(-2, -3) == -5\n"
    )
}
HIDDEN_TEST_COMMAND = f'{sys.executable} -m pytest -q -p no:cacheprovider "$GRADE_PRIVILEGED/tests"'
"""The hidden tests run by hand through ``candidate_shell`` (printed output, for tests of the
shell; ``run_hidden_tests`` is what a grader trusts)."""


async def snapshot(root: Path, name: str, calc: str) -> str:
    """A ``local:`` checkpoint of a project whose ``calc.py`` is ``calc``."""
    tree = root / "trees" / name
    tree.mkdir(parents=True)
    (tree / "calc.py").write_text(calc)
    (tree / "README.md").write_text("calc: a calculator\n")
    return await make_local_checkpoint(tree, root / "checkpoints", name=f"{name}.tar.gz")
