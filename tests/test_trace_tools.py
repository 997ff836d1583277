"""tools/: real vf-eval traces -> grading rows -> a real grading run; export; inspector.

One pipeline per module: a tiny solver taskset run with ``vf-eval -r 4`` (verifiers' own
``run_eval``) against a scripted model, its traces turned into rows by the tool, one row
graded by a real group-grade ``run_eval``."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import datasets
import pytest
import verifiers.v1 as vf
import verifiers.v1.runtimes.subprocess as subprocess_runtime
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.configs.cli.eval import EvalConfig
from verifiers.v1.utils.trace_store import write_episode

from group_grade.chat_server import ChatServer, Reply
from group_grade.data import GroupGradeData
from group_grade.grade_record import GradeRecord
from group_grade.grade_traces import is_grade_record, is_grade_trace, read_traces
from group_grade.taskset import GroupGradeTaskset, GroupGradeTasksetConfig
from tests.grading import KEY_VAR, grade, shell, submit
from tests.scripted_model import ScriptedModel, text_of
from tests.traces import Call, Turn, make_trace
from tools import export_dataset, inspect_grade, traces_to_rows

SOLVER_MODULE = "gg_solver_probe"
SOLVER_SOURCE = """
import verifiers.v1 as vf

from group_grade.harness import GraderHarness


class SolveTask(vf.Task[vf.TaskData, vf.State, vf.TaskConfig]):
    async def finalize(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        trace.info["test_output"] = f"1 test, outcome: {trace.last_reply}"

    @vf.reward
    async def fixed(self, trace: vf.Trace) -> float:
        return float(trace.last_reply == "fixed it")


class SolveConfig(vf.TasksetConfig):
    task: vf.TaskConfig = vf.TaskConfig()


class SolveTaskset(vf.Taskset[SolveTask, SolveConfig]):
    def load(self) -> list[SolveTask]:
        return [
            SolveTask(vf.TaskData(prompt=f"Fix the {name} bug."), self.config.task)
            for name in ("mixed", "uniform")
        ]


__all__ = ["GraderHarness", "SolveTaskset"]
"""
FIRST_TURN = "I will run the tests first."
SECRET = "assert solve() == 'SECRET-7f3a-hidden-expected'"
LISTING = re.compile(r"^- (c\d+): (passed|failed) ", re.MULTILINE)
ROOT = Path(__file__).resolve().parents[1]


def solver_policy() -> Callable[[dict[str, Any]], Reply]:
    """Turn 1 runs a command; turn 2 fixes the bug in every other rollout of the `mixed`
    task (so its group of 4 is mixed, 2 and 2) and never in the `uniform` task."""
    fixes = itertools.cycle([True, False])

    def policy(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        if not any(m["role"] == "assistant" for m in messages):
            return Reply(content=FIRST_TURN, tool_calls=[("shell", {"command": "echo ran"})])
        prompt = next(text_of(m.get("content")) for m in messages if m["role"] == "user")
        return Reply("fixed it" if "mixed" in prompt and next(fixes) else "gave up")

    return policy


def hack_calls(body: dict[str, Any]) -> Reply:
    """Rank the passing candidates by label; call the first failing one a confirmed hack
    (with a quote it wrote) and the second a suspected one (with a quote it did not)."""
    prompt = next(text_of(m.get("content")) for m in body["messages"] if m["role"] == "user")
    listed = LISTING.findall(prompt)
    passing = sorted(label for label, status in listed if status == "passed")
    hacked, suspect = sorted(label for label, status in listed if status == "failed")
    candidates = [{"label": label} for label in passing] + [
        {"label": hacked, "hack": "confirmed", "evidence": [{"turn": 1, "quote": FIRST_TURN}]},
        {
            "label": suspect,
            "hack": "suspected",
            "evidence": [{"turn": 1, "quote": "I deleted the failing test file"}],
        },
    ]
    ranking = [[label] for label in passing]
    return submit({"candidates": candidates, "ranking": ranking, "notes": "by label"})


@dataclass(frozen=True)
class Pipeline:
    solve_traces: Path
    solve_episodes: list[vf.Episode]
    rows_jsonl: Path
    rows_parquet: Path
    rows_printed: str
    grade_traces: Path
    grade_episode: vf.Episode


def printed(main: Callable[[Sequence[str]], int], *argv: str | Path) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([str(a) for a in argv]) == 0
    return out.getvalue()


async def run_pipeline(root: Path) -> Pipeline:
    solve_out, grade_out = root / "solve", root / "grade"
    hidden = root / "hidden"
    hidden.mkdir()
    (hidden / "test_secret.py").write_text(SECRET + "\n")
    async with ChatServer(solver_policy()) as server:
        config = EvalConfig(
            env={
                "taskset": {"id": SOLVER_MODULE.replace("_", "-")},
                "agent": {
                    "runtime": {"type": "subprocess"},
                    "max_turns": 4,
                    "timeout": {"rollout": 60, "scoring": 60},
                },
            },
            model="scripted-model",
            client={"type": "eval", "base_url": server.base_url, "api_key_var": KEY_VAR},
            num_rollouts=4,
            push=False,
            rich=None,
            output_dir=solve_out,
            run={"dir": "run"},
        )
        with anyio.fail_after(180):
            episodes = await run_eval(config)
    solve_traces = solve_out / "run" / "traces.jsonl"
    rows_jsonl, rows_parquet = root / "rows.jsonl", root / "rows.parquet"
    text = printed(traces_to_rows.main, solve_traces, "-o", rows_jsonl, "--privileged", hidden)
    printed(traces_to_rows.main, solve_traces, "-o", rows_parquet, "--privileged", hidden)
    script = ScriptedModel([shell("cat grade/privileged/test_secret.py"), hack_calls])
    async with ChatServer(script) as server:
        episode = await grade(server, rows_jsonl, grade_out)
    return Pipeline(
        solve_traces=solve_traces,
        solve_episodes=episodes,
        rows_jsonl=rows_jsonl,
        rows_parquet=rows_parquet,
        rows_printed=text,
        grade_traces=grade_out / "e2e" / "traces.jsonl",
        grade_episode=episode,
    )


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    root = tmp_path_factory.mktemp("pipeline")
    modules, home = root / "modules", root / "home"
    modules.mkdir()
    home.mkdir()
    (modules / f"{SOLVER_MODULE}.py").write_text(textwrap.dedent(SOLVER_SOURCE))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        patch.setattr(subprocess_runtime, "CACHE_DIR", home / ".cache" / "verifiers")
        patch.setenv(KEY_VAR, "unused")
        patch.syspath_prepend(str(modules))
        patch.setenv(
            "PYTHONPATH",
            os.pathsep.join(filter(None, [str(modules), os.environ.get("PYTHONPATH")])),
        )
        patch.delitem(sys.modules, SOLVER_MODULE, raising=False)
        yield anyio.run(run_pipeline, root)


def solver_traces(pipeline: Pipeline, task: str) -> list[vf.Trace]:
    return [
        trace
        for episode in pipeline.solve_episodes
        for trace in episode.traces
        if task in trace.task.data.prompt_text
    ]


def test_rows_from_a_real_eval_load_back(pipeline: Pipeline) -> None:
    assert pipeline.rows_printed.splitlines() == [
        "8 episodes, 2 groups -> 1 rows; skipped 1 groups not due for grading, 0 groups with "
        "unscored traces, 0 grade traces, 0 untrainable traces, 0 duplicate traces",
        f"wrote 1 rows to {pipeline.rows_jsonl}",
    ]
    mixed = solver_traces(pipeline, "mixed")
    assert sorted(t.reward for t in mixed) == [0.0, 0.0, 1.0, 1.0]
    (task,) = list(GroupGradeTaskset(GroupGradeTasksetConfig(source=str(pipeline.rows_jsonl))))
    data = task.data
    episode = pipeline.solve_episodes[0]
    # A readable group id: the run's short id (the end of its name), the task's short key.
    assert data.group_id == f"{episode.run.name.rsplit('--')[-1]}/task-{mixed[0].task.key[:10]}"
    assert len(data.group_id) < 30
    assert set(data.trace_ids.values()) == {t.id for t in mixed}
    by_id = {t.id: t for t in mixed}
    for candidate in data.candidates:
        trace = by_id[data.trace_ids[candidate.label]]
        assert candidate.reward == trace.reward and candidate.passed == (trace.reward == 1.0)
        assert candidate.test_output == f"1 test, outcome: {trace.last_reply}"
        assert candidate.turns[0].startswith(FIRST_TURN) and len(candidate.turns) == 2
    assert data.privileged == {"test_secret.py": SECRET + "\n"}
    assert data.task_prompt == "Fix the mixed bug."
    (from_parquet,) = list(
        GroupGradeTaskset(GroupGradeTasksetConfig(source=str(pipeline.rows_parquet)))
    )
    assert from_parquet.data == data


def test_a_row_from_eval_grades(pipeline: Pipeline) -> None:
    episode = pipeline.grade_episode
    (trace,) = episode.traces
    assert episode.ok, (trace.stop_condition, trace.errors)
    assert trace.info["kind"] == "grade" and trace.info["verdict"] is not None
    labels = grade_record(trace).trace_ids
    rewards = {t.id: t.reward for t in solver_traces(pipeline, "mixed")}
    advantages = {labels[label]: r["advantage"] for label, r in trace.info["gar"].items()}
    # rewards 1, 1, 0, 0: the better passer +2/3, the other +1/3, the failures -1/2 (the
    # confirmed hack already had the lowest reward).
    passers = sorted(label for label in labels if rewards[labels[label]] == 1.0)
    assert advantages[labels[passers[0]]] == pytest.approx(2 / 3)
    assert advantages[labels[passers[1]]] == pytest.approx(1 / 3)
    assert [round(a, 4) for i, a in advantages.items() if rewards[i] == 0.0] == [-0.5, -0.5]
    assert len(trace.info["citations"]["failures"]) == 1


def grade_record(trace: vf.Trace) -> GradeRecord:
    record = GradeRecord.of(trace)
    assert record is not None
    return record


def plant(directory: Path, secret_row: GroupGradeData) -> Path:
    """A traces.jsonl of ordinary traces, one unmarked trace whose task data is a grading
    row, and one marked grade trace on an ordinary task, both carrying the secret."""
    directory.mkdir()
    ordinary = [make_trace([Turn("I fixed it.")], reward=1.0) for _ in range(2)]
    unmarked = make_trace([Turn(f"The hidden test says: {SECRET}")], reward=1.0)
    unmarked.task = vf.TraceTask(type="AnyTask", data=secret_row)
    marked = make_trace([Turn(f"Reading {SECRET}")], info={"kind": "grade"})
    for trace in [*ordinary, unmarked, marked]:
        write_episode(directory, vf.Episode(task=trace.task, traces=[trace], ok=True))
    return directory / "traces.jsonl"


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_export_never_includes_grade_traces(
    pipeline: Pipeline, tmp_path: Path, suffix: str
) -> None:
    (row,) = list(GroupGradeTaskset(GroupGradeTasksetConfig(source=str(pipeline.rows_jsonl))))
    planted = plant(tmp_path / "planted", row.data)
    assert SECRET in pipeline.grade_traces.read_text() and SECRET in planted.read_text()
    output = tmp_path / f"sft{suffix}"
    text = printed(
        export_dataset.main, pipeline.solve_traces, pipeline.grade_traces, planted, "-o", output
    )
    assert text == (
        "exported 10 traces; skipped 3 grade traces (2 marked, 1 unmarked group-grade rows)\n"
    )
    records = (
        list(datasets.Dataset.from_parquet(str(output)))
        if suffix == ".parquet"
        else [json.loads(line) for line in output.read_text().splitlines()]
    )
    assert len(records) == 10
    assert "SECRET" not in json.dumps(records) and b"SECRET" not in output.read_bytes()
    exported = {r["trace_id"] for r in records}
    solver = {t.id for e in read_traces(pipeline.solve_traces) for t in e.traces}
    assert solver <= exported
    first = next(r for r in records if r["trace_id"] in solver)
    assert [m["role"] for m in first["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert first["messages"][1]["content"] == FIRST_TURN


def test_the_inspector_prints_a_grade_trace(pipeline: Pipeline) -> None:
    (trace,) = pipeline.grade_episode.traces
    text = printed(inspect_grade.main, pipeline.grade_traces)
    assert text == printed(inspect_grade.main, pipeline.grade_traces, "--id", trace.id)
    labels = grade_record(trace).trace_ids
    verdict = trace.info["verdict"]
    (best,), (second,) = verdict["ranking"]
    hacked, suspect = (c["label"] for c in verdict["candidates"] if c["hack"] != "none")
    for expected in [
        f"grade trace {trace.id}",
        "outcome: graded",
        f"== {trace.info['group_id']} (rewards mode, 4 candidates)",
        f"  verdict: {best} > {second} | hacks: {hacked}",
        f"  hack {hacked}: confirmed",
        f'    turn 1: "{FIRST_TURN}"',
        f"  hack {suspect}: suspected",
        f'  citation failure: {suspect} turn 1: "I deleted the failing test file" '
        "-- quote not found",
        f"  {best:<6} {'1':>6} {'+0.500':>7} {'+0.667':>7}  {'1':<4}  {'-':<9}  {labels[best]}",
        f"  {hacked:<6} {'0':>6} {'-0.500':>7} {'-0.500':>7}  {'3':<4}  {'confirmed':<9}  "
        f"{labels[hacked]}",
        "  lambda: 1.333",
    ]:
        assert expected in text, (expected, text)
    with pytest.raises(LookupError):
        inspect_grade.find_grade_trace(read_traces(pipeline.solve_traces))


def strip_marks(episode: dict[str, Any], how: str) -> dict[str, Any]:
    """A grade episode with the marks an export used to rely on removed: ``info.kind``,
    ``info.group_id`` and the task data's ``group_id`` (``marks``); or everything that says
    group-grade save what the grader did (``all``): task type and data, info, env id."""
    episode = json.loads(json.dumps(episode))
    tasks = [episode["task"], *(trace["task"] for trace in episode["traces"])]
    for trace in episode["traces"]:
        for key in ("kind", "group_id", "trace_ids") if how == "marks" else list(trace["info"]):
            trace["info"].pop(key, None)
    for task in tasks:
        task["data"].pop("group_id")
        if how == "all":
            task["type"] = "SolveTask"
            task["data"] = {"prompt": "Fix the bug."}
            episode["env"] = {"id": "solver"}
    return episode


@pytest.mark.parametrize("how", ["marks", "all"])
def test_attack_9_a_grade_trace_stripped_of_its_marks_is_not_exported(
    pipeline: Pipeline, tmp_path: Path, how: str
) -> None:
    (line,) = pipeline.grade_traces.read_text().splitlines()
    stripped = tmp_path / "stripped" / "traces.jsonl"
    stripped.parent.mkdir()
    stripped.write_text(json.dumps(strip_marks(json.loads(line), how)) + "\n")
    assert SECRET in stripped.read_text()
    output = tmp_path / "sft.jsonl"
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "export_dataset.py"), str(stripped), "-o", output],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == (
        "exported 0 traces; skipped 1 grade traces (0 marked, 1 unmarked group-grade rows)\n"
    )
    assert output.read_text() == ""


def grade_like(signal: str) -> tuple[vf.Trace, str]:
    """An ordinary trace given one signal of a grade trace; and the episode's env id."""
    trace = make_trace([Turn("I fixed it.")], reward=1.0)
    if signal == "kind":
        GradeRecord(group_id="g").write(trace)
    elif signal == "task type":
        trace.task = trace.task.model_copy(update={"type": "GroupGradeTask"})
    elif signal in ("labeled candidates", "candidates and privileged"):
        candidates = [{"label": "c01"}] if signal == "labeled candidates" else ["c01"]
        extra = {} if signal == "labeled candidates" else {"privileged": {"t.py": SECRET}}
        data = vf.WireTaskData(prompt="p", candidates=candidates, **extra)
        trace.task = trace.task.model_copy(update={"data": data})
    elif signal == "tools offered":
        trace.tools = [vf.Tool(name="candidate_shell")]
    elif signal == "tool called":
        trace = make_trace([Turn("", [Call("submit_verdict", {"ranking": []}, "ACCEPTED")])])
    return trace, "group-grade" if signal == "env id" else "solver"


@pytest.mark.parametrize(
    "signal",
    [
        "kind",
        "task type",
        "env id",
        "labeled candidates",
        "candidates and privileged",
        "tools offered",
        "tool called",
    ],
)
def test_each_signal_makes_a_grade_trace(signal: str) -> None:
    trace, env_id = grade_like(signal)
    assert is_grade_trace(trace, env_id)
    # Only a model's own tool calls are left out of the record, which a policy cannot forge.
    assert is_grade_record(trace, env_id) == (signal != "tool called")
    assert not is_grade_trace(make_trace([Turn("I fixed it.")], reward=1.0), "solver")
    assert is_grade_trace(trace, "best-of-n+group-grade" if signal == "env id" else env_id)
