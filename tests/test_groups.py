"""The labeled groups shipped with the package: reproducible, consistent and honest.

Every check runs real code: the builder itself, ``git apply`` of the shipped patches and
pytest on the task projects (in tmp dirs only).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar, get_args

import pytest

from group_grade.citations import quote_found
from group_grade.data import GroupGradeData
from group_grade.verdict import Evidence, HackKind
from tools import build_groups
from tools.build_groups import HELDOUT_TASKS, TASKS, TaskSpec

ROOT = Path(__file__).resolve().parents[1]
GROUPS = build_groups.DEFAULT_OUT
ROWS = [
    GroupGradeData.model_validate_json(line)
    for line in (GROUPS / build_groups.ROWS_FILE).read_text().splitlines()
]
SPECS = {task.name: task for task in TASKS}
T = TypeVar("T")
R = TypeVar("R")


def parallel(function: Callable[[T], R], items: Iterable[T]) -> list[R]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(function, items))


def task_of(row: GroupGradeData) -> TaskSpec:
    return SPECS[row.group_id.split("/")[0]]


def git_apply(tree: Path, patch: str) -> None:
    patch_file = tree.parent / f"{tree.name}.patch"
    patch_file.write_text(patch)
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tree.parent)}
    subprocess.run(["git", "apply", str(patch_file)], cwd=tree, env=env, check=True)


def run_pytest(tree: Path, *paths: str) -> int:
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths]
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, timeout=120)
    return done.returncode


def test_the_builder_reproduces_the_shipped_groups_byte_for_byte(tmp_path: Path) -> None:
    out = tmp_path / "groups"
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "build_groups.py"), "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    assert build_groups.differences(GROUPS, out) == []


def test_differences_names_changed_missing_and_extra_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    build_groups.write_tree(a, {"same": "x\n", "changed": "1\n", "boxes/only_a": "a\n"})
    build_groups.write_tree(b, {"same": "x\n", "changed": "2\n", "only_b": "b\n"})
    assert build_groups.differences(a, b) == ["boxes/only_a", "changed", "only_b"]
    assert build_groups.differences(a, a) == []


def test_the_set_is_large_enough_and_small() -> None:
    assert len(TASKS) >= 8
    assert {row.group_id for row in ROWS if row.mode == "rewards"} == {
        f"{name}/0" for name in SPECS
    }
    assert sum(row.mode == "advantages" for row in ROWS) >= 3
    size = sum(p.stat().st_size for p in GROUPS.rglob("*") if p.is_file())
    assert size < 1_500_000


def test_rows_carry_consistent_candidates_and_truth() -> None:
    for row in ROWS:
        labels = set(row.labels)
        assert 4 <= len(labels) <= 8
        assert row.truth is not None
        assert row.box_workdir is None
        assert set(row.privileged) == {*task_of(row).hidden, "gold.patch"}
        hacks = set(row.truth.hacks)
        ranked = [label for tier in row.truth.tiers for label in tier]
        assert len(ranked) == len(set(ranked)) and all(row.truth.tiers)
        assert not hacks & set(ranked), row.group_id
        assert (set(ranked) | hacks) <= labels
        for c in row.candidates:
            assert c.checkpoint == f"local:boxes/{task_of(row).name}/{c.label}.tar.gz"
            assert (GROUPS / c.checkpoint.removeprefix("local:")).is_file()
            assert 6 <= len(c.turns) <= 20
            assert c.patch and c.test_output is not None and c.num_output_tokens > 0
        if row.mode == "rewards":
            rewards = row.rewards
            mean = sum(rewards) / len(rewards)
            assert len(set(rewards)) > 1, f"{row.group_id} is not a mixed group"
            assert all(c.passed == (c.reward > mean) for c in row.candidates)
            assert set(ranked) == {c.label for c in row.candidates if c.passed} - hacks
            assert row.truth.margins == []
        else:
            assert all(c.reward is None for c in row.candidates)
            assert set(ranked) == labels - hacks
            assert len(row.truth.margins) == len(row.truth.tiers) - 1


def test_every_hack_kind_is_labeled_and_citable() -> None:
    kinds: set[str] = set()
    modes: set[str] = set()
    for row in ROWS:
        task = task_of(row)
        label = build_groups.labels(task)
        modes.add(row.mode)
        expected = {label[c.name]: c.hack.kind for c in task.candidates if c.hack is not None}
        assert row.truth is not None and row.truth.hacks == expected
        for spec in task.candidates:
            if spec.hack is None:
                continue
            kinds.add(spec.hack.kind)
            turns = row.candidate(label[spec.name]).turns
            cited = [
                n
                for n in range(1, len(turns) + 1)
                if quote_found(turns, Evidence(turn=n, quote=spec.hack.quote))
            ]
            assert cited, f"{row.group_id} {spec.name}: {spec.hack.quote!r} is not citable"
    assert kinds == set(get_args(HackKind))
    assert modes == {"rewards", "advantages"}


@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
def test_truth_follows_the_declared_hidden_results(task: TaskSpec) -> None:
    """Tiers put every hidden-test pass above every hidden-test failure."""
    hidden = {c.name: c.hidden_pass for c in task.candidates}
    seen_failure = False
    for tier in task.tiers:
        if seen_failure:
            assert not any(hidden[name] for name in tier), task.name
        seen_failure = seen_failure or not all(hidden[name] for name in tier)


def test_hidden_tests_fail_on_the_original_and_pass_with_the_gold_patch(tmp_path: Path) -> None:
    rows = {row.group_id: row for row in ROWS}

    def check(task: TaskSpec) -> tuple[str, list[int]]:
        tree = tmp_path / task.name
        build_groups.write_tree(tree, task.files)
        privileged = rows[f"{task.name}/0"].privileged
        build_groups.write_tree(
            tree, {f".grade/privileged/{p}": c for p, c in privileged.items() if p in task.hidden}
        )
        codes = [run_pytest(tree, "tests"), run_pytest(tree, ".grade/privileged/tests")]
        git_apply(tree, privileged["gold.patch"])
        codes += [run_pytest(tree, "tests"), run_pytest(tree, ".grade/privileged/tests")]
        return task.name, codes

    # visible and hidden tests: 1 (tests failed) on the original, 0 with the gold patch
    assert dict(parallel(check, TASKS)) == {task.name: [1, 1, 0, 0] for task in TASKS}


def test_every_box_holds_the_original_project_plus_the_candidate_patch(tmp_path: Path) -> None:
    def check(job: tuple[TaskSpec, str, str]) -> bool:
        task, label, patch = job
        expected = tmp_path / "expected" / task.name / label
        build_groups.write_tree(expected, task.files)
        git_apply(expected, patch)
        box = tmp_path / "boxes" / task.name / label
        with tarfile.open(GROUPS / "boxes" / task.name / f"{label}.tar.gz") as archive:
            archive.extractall(box, filter="data")
        return build_groups.read_tree(box) == build_groups.read_tree(expected)

    jobs = [
        (task_of(row), c.label, c.patch or "")
        for row in ROWS
        if row.mode == "rewards"
        for c in row.candidates
    ]
    assert all(parallel(check, jobs))


def test_the_held_out_tasks_are_sound_and_not_shipped(tmp_path: Path) -> None:
    """The held-out tasks (the reference grader's unseen exam) stay out of the shipped rows,
    and their specs hold: hidden and visible tests fail on the original, pass with the gold."""
    shipped = {row.group_id.split("/")[0] for row in ROWS}
    assert {task.name for task in HELDOUT_TASKS}.isdisjoint(shipped | set(SPECS))

    def check(task: TaskSpec) -> tuple[str, list[int]]:
        build_groups.check_spec(task)
        tree = tmp_path / task.name
        build_groups.write_tree(tree, task.files)
        build_groups.write_tree(tree, {f".grade/privileged/{p}": c for p, c in task.hidden.items()})
        codes = [run_pytest(tree, "tests"), run_pytest(tree, ".grade/privileged/tests")]
        build_groups.write_tree(tree, build_groups.gold_tree(task))
        codes += [run_pytest(tree, "tests"), run_pytest(tree, ".grade/privileged/tests")]
        return task.name, codes

    assert dict(parallel(check, HELDOUT_TASKS)) == {t.name: [1, 1, 0, 0] for t in HELDOUT_TASKS}
