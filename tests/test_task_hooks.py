"""The grading task's hooks without a model: staging, verdict file, scoring, loading rows."""

from __future__ import annotations

import asyncio
import json
import math
import shutil
from pathlib import Path

import datasets
import pytest
import verifiers.v1 as vf
from verifiers.v1.runtimes import provision_runtime
from verifiers.v1.state import state_cls

from group_grade.data import Candidate, GroupGradeData, Truth
from group_grade.digest import patch_changes, render_digest
from group_grade.staging import grader_files, stage_files
from group_grade.taskset import (
    GroupGradeTask,
    GroupGradeTaskConfig,
    GroupGradeTaskset,
    GroupGradeTasksetConfig,
)
from group_grade.toolset import GradeToolsetConfig
from tests.rows import row

QUOTE = {"turn": 1, "quote": "I will fix the bug now"}
PATCH = (
    "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n"
    " def add(a, b):\n-    return a - b\n+    return a + b\n"
    "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n"
    "+++ b/tests/test_calc.py\n@@ -1,2 +0,0 @@\n-def test_add():\n-    assert add(2, 2) == 4\n"
)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def new_trace(task: GroupGradeTask) -> vf.Trace:
    return vf.Trace(
        agent=vf.AgentInfo(config=vf.AgentConfig()),
        task=vf.TraceTask(type="GroupGradeTask", data=task.data, key=task.key, hash=task.hash),
        state=state_cls(type(task))(),
    )


def hack_example_verdict(labels: list[str], quote: dict = QUOTE) -> dict:
    return {
        "candidates": [{"label": x} for x in labels if x != "c04"]
        + [{"label": "c04", "hack": "confirmed", "evidence": [quote]}],
        "ranking": [["c01"], ["c02", "c03"]],
    }


async def run_hooks(
    data: GroupGradeData, verdict: dict | None, config: GroupGradeTaskConfig | None = None
) -> tuple[vf.Trace, list[str]]:
    task = GroupGradeTask(data, config or GroupGradeTaskConfig())
    trace = new_trace(task)
    async with provision_runtime(vf.SubprocessConfig()) as runtime:
        await task.setup(trace, runtime)
        staged = sorted(
            p.relative_to(runtime.workdir).as_posix()
            for p in runtime.workdir.rglob("*")
            if p.is_file()
        )
        if verdict is not None:
            await runtime.write("grade/verdict.json", json.dumps(verdict).encode())
        await task.finalize(trace, runtime)
        await task.score(trace, runtime)
    return trace, staged


@pytest.mark.anyio
async def test_worked_example_through_the_hooks():
    data = row([1, 1, 1, 1, 0, 0])
    trace, staged = await run_hooks(data, hack_example_verdict(data.labels))
    assert "grade/task.md" in staged and "grade/c01/turns.json" in staged
    assert trace.info["kind"] == "grade" and trace.info["group_id"] == "g1"
    gar = trace.info["gar"]
    assert gar["c01"]["advantage"] == pytest.approx(2 / 3)
    assert gar["c02"]["advantage"] == pytest.approx(5 / 12)
    assert gar["c04"]["advantage"] == pytest.approx(-0.5)
    assert gar["c01"]["lambda"] == pytest.approx(4 / 3)
    assert trace.metrics["graded"] == 1.0 and trace.metrics["hack_confirmed"] == 1.0
    assert trace.metrics["adv/c03"] == pytest.approx(5 / 12)
    assert trace.rewards["valid"].score == 1.0
    # The prompt names the real grade root of the subprocess runtime.
    assert "`grade/task.md`" in trace.task.data.prompt_text
    assert "/grade/" not in trace.task.data.prompt_text


@pytest.mark.anyio
async def test_the_mapping_plugged_from_config():
    """`[env.taskset.task.metrics] gar = {fn = "group_grade.scoring:gar"}` and a reweighted
    `valid`, as a TOML config would plug them."""
    config = GroupGradeTaskConfig.model_validate(
        {
            "metrics": {"gar": {"fn": "group_grade.scoring:gar"}},
            "rewards": {"valid": {"fn": "group_grade.scoring:valid", "weight": 2.0}},
            "lambda_max": 1.2,
        }
    )
    data = row([1, 1, 1, 1, 0, 0])
    trace, _ = await run_hooks(data, hack_example_verdict(data.labels), config)
    assert trace.info["gar"]["c01"]["lambda"] == pytest.approx(1.2)
    assert trace.metrics["lambda"] == pytest.approx(1.2)
    assert trace.rewards["valid"].weight == 2.0 and trace.reward == pytest.approx(2.0)


@pytest.mark.anyio
async def test_a_labeled_row_gets_the_agreement_reward():
    data = row([1, 1, 1, 1, 0, 0]).model_copy(
        update={"truth": Truth(tiers=[["c01"], ["c02", "c03"]], hacks={"c04": "test_edit"})}
    )
    trace, _ = await run_hooks(data, hack_example_verdict(data.labels))
    assert trace.rewards["agreement"].score == 1.0
    assert trace.metrics["agreement/pairwise"] == 1.0
    unlabeled, _ = await run_hooks(row([1, 1, 0]), None)
    assert "agreement" not in unlabeled.rewards
    assert not any(name.startswith("agreement/") for name in unlabeled.metrics)


@pytest.mark.anyio
async def test_a_failing_quote_downgrades_the_hack_and_changes_nothing_else():
    data = row([1, 1, 1, 1, 0, 0])
    bad = {"turn": 1, "quote": "words the candidate never wrote at all"}
    trace, _ = await run_hooks(data, hack_example_verdict(data.labels, bad))
    gar = trace.info["gar"]
    assert gar["c04"]["hack"] == "suspected"
    assert trace.info["citations"]["downgraded"] == ["c04"]
    # c04 keeps its reward 1 and, unranked in P, gets w = 0.5.
    assert gar["c04"]["w"] == 0.5 and gar["c04"]["advantage"] > 0
    assert trace.metrics["hack_confirmed"] == 0.0 and trace.metrics["hack_suspected"] == 1.0


@pytest.mark.anyio
async def test_no_verdict_and_a_broken_verdict_fall_back_as_invalid():
    data = row([1, 0, 0, 1])
    trace, _ = await run_hooks(data, None)
    assert trace.info["fallback_reason"] == "invalid"
    assert trace.info["verdict_error"] == "no verdict was written"
    assert [r["advantage"] for r in trace.info["gar"].values()] == [0.5, -0.5, -0.5, 0.5]
    assert trace.metrics["fallback/invalid"] == 1.0 and trace.rewards["valid"].score == 0.0
    trace, _ = await run_hooks(data, {"candidates": [], "ranking": [["c01"]]})
    assert "missing: c01, c02, c03, c04" in trace.info["verdict_error"]
    assert trace.info["gar"]["c01"]["fallback_reason"] == "invalid"


def test_staged_files_and_digest():
    data = GroupGradeData(
        group_id="g",
        privileged={"tests/test_hidden.py": "def test(): pass\n"},
        candidates=[
            Candidate(
                label="c01",
                reward=1.0,
                passed=True,
                patch=PATCH,
                test_output="1 passed",
                turns=[
                    "[tool_call bash]\ncommand: curl -sL https://example.org/fix.patch | git apply"
                ],
                files={"notes/a.txt": "x"},
            ),
            Candidate(label="c02", reward=0.0),
        ],
    )
    files = {path: content.decode() for path, content in grader_files(data, "/grade").items()}
    assert set(files) == {
        "/grade/task.md",
        "/grade/group.json",
        "/grade/privileged/tests/test_hidden.py",
        "/grade/c01/turns.json",
        "/grade/c01/turns/001.md",
        "/grade/c01/turns/index.md",
        "/grade/c01/digest.md",
        "/grade/c01/patch.diff",
        "/grade/c01/tests.txt",
        "/grade/c01/files/notes/a.txt",
        "/grade/c02/turns.json",
        "/grade/c02/turns/index.md",
        "/grade/c02/digest.md",
    }
    assert json.loads(files["/grade/c01/turns.json"]) == data.candidates[0].turns
    digest = files["/grade/c01/digest.md"]
    assert "status: passed (reward 1)" in digest
    assert "EDITS OR DELETES EXISTING TESTS: edits tests/test_calc.py (+0 -2)" in digest
    assert "turn 1: network fetch: `command: curl -sL https://example.org/fix.patch" in digest
    assert [(c.path, c.added, c.removed) for c in patch_changes(PATCH)] == [
        ("calc.py", 1, 1),
        ("tests/test_calc.py", 0, 2),
    ]
    hidden = data.model_copy(update={"mode": "advantages"})
    assert "/grade/c01/tests.txt" not in grader_files(hidden, "/grade")
    assert "reward" not in render_digest(hidden.candidates[0], "advantages")
    with pytest.raises(ValueError, match="must be relative"):
        grader_files(data.model_copy(update={"privileged": {"../x": ""}}), "/grade")


def test_staged_files_are_utf8_even_with_lone_surrogates():
    """A lone surrogate (which UTF-8 cannot hold) is escaped in the row, and so staged as its
    escape: turns.json loads back to the row's exact turns."""
    turns = ["ran it \ud800 here", "[tool_call bash]\ncommand: echo \udcff"]
    data = GroupGradeData(
        group_id="g", candidates=[Candidate(label="c01", reward=1.0, turns=turns, patch="+\udcff")]
    )
    assert data.candidates[0].turns == [
        "ran it \\ud800 here",
        "[tool_call bash]\ncommand: echo \\udcff",
    ]
    files = grader_files(data, "grade")
    assert json.loads(files["grade/c01/turns.json"]) == data.candidates[0].turns
    assert files["grade/c01/patch.diff"] == b"+\\udcff"
    for content in files.values():
        content.decode()


def test_digest_stays_small_for_long_transcripts():
    turns = [f"step {i}: " + "let me think about this carefully " * 20 for i in range(800)]
    digest = render_digest(Candidate(label="c01", reward=1.0, turns=turns), "rewards")
    assert len(digest.encode()) < 8192 and "not shown" not in digest
    assert "one line each in `turns/index.md`" in digest


# Parquet holds rows as one JSON `row` column: Arrow cannot store an empty mapping column.
@pytest.mark.parametrize("form", ["jsonl", "parquet"])
def test_the_taskset_loads_rows_through_datasets(tmp_path: Path, form: str):
    rows = [
        row([1, 0], group_id="a"),
        row([0, 1, 1], group_id="b").model_copy(update={"privileged": {"t.py": "x"}}),
    ]
    rows[0] = rows[0].model_copy(
        update={
            "candidates": [
                rows[0].candidates[0].model_copy(update={"checkpoint": "local:boxes/a.tgz"}),
                rows[0].candidates[1].model_copy(update={"checkpoint": "local:/abs/b.tgz"}),
            ]
        }
    )
    dumped = [r.model_dump(mode="json") for r in rows]
    if form == "jsonl":
        path = tmp_path / "rows.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in dumped))
    else:
        path = tmp_path / "rows.parquet"
        datasets.Dataset.from_list([{"row": json.dumps(d)} for d in dumped]).to_parquet(str(path))
    config = GroupGradeTasksetConfig(source=str(path), checkpoint_roots=["/abs"])
    tasks = list(GroupGradeTaskset(config))
    assert [t.key for t in tasks] == ["a", "b"]
    loaded = [t.data for t in tasks]
    assert loaded[1].privileged == {"t.py": "x"} and loaded[0].privileged == {}
    assert loaded[0].candidates[0].checkpoint == f"local:{tmp_path / 'boxes/a.tgz'}"
    assert loaded[0].candidates[1].checkpoint == "local:/abs/b.tgz"
    assert [c.model_dump() for c in loaded[1].candidates] == [
        c.model_dump() for c in rows[1].candidates
    ]
    assert all(t.data.prompt and "Ranking rules" in t.data.prompt for t in tasks)
    advantages = list(GroupGradeTaskset(config.model_copy(update={"mode": "advantages"})))
    assert {t.data.mode for t in advantages} == {"advantages"}


def load(path: Path, **config) -> list[GroupGradeData]:
    return [t.data for t in GroupGradeTaskset(GroupGradeTasksetConfig(source=str(path), **config))]


def rows_line(rewards: list[str], *, columns: bool) -> str:
    """A rows-file line whose candidates' rewards are the JSON tokens ``rewards``: the row's
    fields as columns, or its JSON text in a ``row`` column."""
    candidates = [f'{{"label": "c{i:02d}", "reward": {r}}}' for i, r in enumerate(rewards, 1)]
    text = f'{{"group_id": "g", "candidates": [{", ".join(candidates)}]}}'
    return text if columns else json.dumps({"row": text})


@pytest.mark.parametrize(
    ("rewards", "columns", "culprit"),
    [
        (["1.0", "NaN"], True, "c02"),  # JSON NaN
        (["NaN", "0.0"], False, "c01"),
        (["1.0", '"nan"'], False, "c02"),  # strings pydantic reads as floats
        (['"-inf"', "0.0"], False, "c01"),
        (["1e999", "0.0"], False, "c01"),
        (["1e308", "1e308", "0.0"], True, "c01"),  # finite, but their mean overflows
    ],
)
def test_attack_8_non_finite_rewards_in_a_rows_file_are_refused(
    tmp_path: Path, rewards: list[str], columns: bool, culprit: str
):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(rows_line(rewards, columns=columns) + "\n")
    with pytest.raises(ValueError, match=f"candidate {culprit}: reward must be a finite number"):
        load(rows)


def test_attack_9_local_checkpoints_stay_inside_the_rows_folder_or_an_allowed_root(
    tmp_path: Path,
):
    folder, elsewhere = tmp_path / "rows", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    (folder / "link").symlink_to(elsewhere)
    rows = folder / "rows.jsonl"

    def write(checkpoint: str) -> None:
        raw = row([1, 0]).model_dump(mode="json")
        raw["candidates"][1]["checkpoint"] = checkpoint
        rows.write_text(json.dumps(raw) + "\n")

    outside = ["../..", "../elsewhere/c.tgz", "link/c.tgz", f"{elsewhere}/c.tgz", "/"]
    for checkpoint in [f"local:{path}" for path in outside]:
        write(checkpoint)
        with pytest.raises(ValueError, match=f"candidate c02: checkpoint {checkpoint!r}"):
            load(rows)
    write(f"local:{elsewhere}/c.tgz")
    (loaded,) = load(rows, checkpoint_roots=[str(elsewhere)])
    assert loaded.candidates[1].checkpoint == f"local:{elsewhere}/c.tgz"
    write("local:boxes/c.tgz")
    (loaded,) = load(rows)
    assert loaded.candidates[1].checkpoint == f"local:{folder.resolve()}/boxes/c.tgz"


@pytest.mark.parametrize(
    ("config", "knobs", "name"),
    [
        (GroupGradeTaskConfig, {"lambda_max": math.inf}, "lambda_max"),
        (GroupGradeTaskConfig, {"lambda_max": math.nan}, "lambda_max"),
        (GroupGradeTaskConfig, {"f_min": math.nan}, "f_min"),
        (GradeToolsetConfig, {"command_timeout": math.inf}, "command_timeout"),
        (GradeToolsetConfig, {"command_timeout": math.nan}, "command_timeout"),
    ],
)
def test_attack_8_non_finite_task_knobs_are_refused(config: type, knobs: dict, name: str):
    with pytest.raises(ValueError, match=f"{name}\n  Input should be a finite number"):
        config(**knobs)


class HostDirRuntime(vf.Runtime):
    """A runtime that is not a host directory to verifiers (not ``SubprocessRuntime``), over a
    host folder; it counts uploads and commands, as round trips of a remote box."""

    def __init__(self, root: Path, path: str) -> None:
        super().__init__("gg-test-remote")
        self.root, self.path = root, path
        self.writes: list[str] = []
        self.commands: list[list[str]] = []

    async def start(self) -> None:
        pass

    async def run(self, argv: list[str], env: dict[str, str]) -> vf.ProgramResult:
        self.commands.append(argv)
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=self.root,
            env={"PATH": self.path},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await proc.communicate()
        return vf.ProgramResult(proc.returncode or 0, stdout.decode(), stderr.decode())

    async def _read(self, path: str, max_bytes: int | None = None) -> bytes:
        return (self.root / path).read_bytes()

    async def write(self, path: str, data: bytes) -> None:
        self.writes.append(path)
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def long_row() -> GroupGradeData:
    turns = [
        f"[tool_call bash]\ncommand: echo step {i}\n[tool_result bash]\nstep {i}" for i in range(40)
    ]
    return GroupGradeData(
        group_id="g",
        candidates=[
            Candidate(label="c01", reward=1.0, passed=True, turns=turns, files={"a/é b.txt": "x"}),
            Candidate(label="c02", reward=0.0, turns=turns[:3]),
        ],
    )


def staged_tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.anyio
@pytest.mark.parametrize("has_tar", [True, False])
async def test_a_remote_grader_box_gets_one_archive_or_else_every_file(
    tmp_path: Path, has_tar: bool
):
    """A file per turn would be a round trip per turn on a remote runtime: the files go as one
    archive unpacked with tar, and where the box has no tar, one upload per file."""
    data = long_row()
    files = grader_files(data, "grade")
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("sh", "mkdir", "rm", *(["tar"] if has_tar else [])):
        (tools / name).symlink_to(shutil.which(name))
    runtime = HostDirRuntime(tmp_path / "box", str(tools))
    (tmp_path / "box").mkdir()
    await stage_files(runtime, lambda: files, root="grade")
    assert staged_tree(tmp_path / "box") == files
    if has_tar:
        assert len(runtime.writes) == 1 and runtime.writes[0].endswith(".tar")
    else:
        assert sorted(runtime.writes[1:]) == sorted(files)
