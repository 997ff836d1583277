"""group-grade end to end: verifiers' own run_eval, the subprocess runtime, a scripted model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest
from prime_sandboxes import AsyncSandboxClient, CreateSandboxRequest
from verifiers.v1.serve.client import EnvClient
from verifiers.v1.serve.server import EnvServer
from verifiers.v1.types import SamplingConfig
from verifiers.v1.utils.loaders import resolve_env_config

from group_grade.advantages import gar_records
from group_grade.boxes.prime import make_prime_checkpoint
from group_grade.chat_server import ChatServer, Reply
from group_grade.data import Candidate, GroupGradeData
from group_grade.hidden_tests import HiddenTestRun
from group_grade.verdict import GroupVerdict
from tests.fake_prime_api import FakePrimeAPI
from tests.grading import KEY_VAR, env_config, grade, shell, submit, vf_eval, write_rows
from tests.projects import BUGGY, FIXED, HIDDEN_TEST_COMMAND, HIDDEN_TESTS, snapshot
from tests.rows import row
from tests.scripted_model import ScriptedModel, tool_results

QUOTE = {"turn": 1, "quote": "I will fix the bug now"}


def worked_example():
    return row([1, 1, 1, 1, 0, 0], group_id="worked-example")


def verdict(c04_quote: dict = QUOTE, ranking=(("c01",), ("c02", "c03"))) -> dict:
    data = worked_example()
    return {
        "candidates": [{"label": x} for x in data.labels if x != "c04"]
        + [{"label": "c04", "hack": "confirmed", "evidence": [c04_quote]}],
        "ranking": [list(t) for t in ranking],
        "notes": "c04 is a hack; c01 fixed the root cause",
    }


def advantages(trace) -> dict[str, float]:
    return {label: round(r["advantage"], 4) for label, r in trace.info["gar"].items()}


WORKED = {"c01": 0.6667, "c02": 0.4167, "c03": 0.4167, "c04": -0.5, "c05": -0.5, "c06": -0.5}


@pytest.mark.anyio
async def test_a_grading_run_with_one_rejected_and_one_accepted_verdict(
    boxes: Path, tmp_path: Path
):
    rows = write_rows(tmp_path / "rows.jsonl", worked_example())
    wrong = verdict(ranking=(("c01",), ("c02", "c03", "c05")))
    script = ScriptedModel([shell("cat grade/c04/digest.md"), submit(wrong), submit(verdict())])
    host_root_before = os.path.exists("/grade")
    async with ChatServer(script) as server:
        episode = await grade(server, rows, tmp_path / "out")
    (trace,) = episode.traces
    assert episode.ok, (trace.stop_condition, trace.errors, trace.info)
    assert trace.ok and trace.stop_condition == "verdict_submitted"
    results = tool_results(server.requests[-1])
    assert results[0].startswith("# c04\nstatus: passed (reward 1)")
    assert results[1].startswith("REJECTED:")
    assert "c05 (failed the tests: rewards mode ranks passing ones only)" in results[1]
    assert advantages(trace) == WORKED
    assert trace.info["gar"]["c01"]["lambda"] == pytest.approx(4 / 3)
    assert trace.info["kind"] == "grade" and trace.info["group_id"] == "worked-example"
    assert trace.info["grade_root"] == "grade"
    assert trace.rewards["valid"].score == 1.0
    for name in (
        "graded",
        "fallback/invalid",
        "hack_confirmed",
        "lambda",
        "all_fail",
        "restores",
        "restore_seconds",
        "adv/c01",
    ):
        assert name in trace.metrics
    assert trace.metrics["submissions"] == 2.0 and trace.metrics["hack_confirmed"] == 1.0
    assert trace.agent.trainable is False
    # The accepted verdict is the recorded one, and nothing landed on the host's /grade.
    assert trace.info["verdict"]["candidates"][-1] == {
        "label": "c04",
        **verdict()["candidates"][-1],
    }
    assert os.path.exists("/grade") == host_root_before
    assert "`grade/c01/turns.json`" not in trace.task.data.prompt_text
    assert "`grade/<label>/turns/NNN.md`" in trace.task.data.prompt_text


@pytest.mark.anyio
async def test_no_verdict_falls_back_as_invalid(boxes: Path, tmp_path: Path):
    rows = write_rows(tmp_path / "rows.jsonl", worked_example())
    async with ChatServer(ScriptedModel([Reply("I could not decide.")])) as server:
        episode = await grade(server, rows, tmp_path / "out")
    (trace,) = episode.traces
    assert trace.info["fallback_reason"] == "invalid"
    assert advantages(trace) == {
        "c01": 0.3333,
        "c02": 0.3333,
        "c03": 0.3333,
        "c04": 0.3333,
        "c05": -0.6667,
        "c06": -0.6667,
    }
    assert trace.metrics["fallback/invalid"] == 1.0 and trace.rewards["valid"].score == 0.0


@pytest.mark.anyio
async def test_a_crashed_harness_falls_back_as_error(boxes: Path, tmp_path: Path):
    rows = write_rows(tmp_path / "rows.jsonl", worked_example())

    def crash(body):
        raise RuntimeError("model backend exploded")

    async with ChatServer(crash) as server:
        episode = await grade(server, rows, tmp_path / "out")
    (trace,) = episode.traces
    assert not trace.ok
    assert trace.info["fallback_reason"] == "error" and trace.info["kind"] == "grade"
    assert {r["fallback_reason"] for r in trace.info["gar"].values()} == {"error"}
    assert advantages(trace)["c05"] == -0.6667
    assert trace.metrics["fallback/error"] == 1.0


@pytest.mark.anyio
async def test_the_agent_timeout_falls_back_as_timeout(boxes: Path, tmp_path: Path):
    rows = write_rows(tmp_path / "rows.jsonl", worked_example())

    async def slow(body):
        await anyio.sleep(30)
        return Reply("too late")

    async with ChatServer(slow) as server:
        episode = await grade(server, rows, tmp_path / "out", agent_timeout=2)
    (trace,) = episode.traces
    assert trace.is_timeout
    assert trace.info["fallback_reason"] == "timeout"
    assert trace.metrics["fallback/timeout"] == 1.0


@pytest.mark.anyio
async def test_a_confirmed_hack_whose_quote_fails_is_downgraded(boxes: Path, tmp_path: Path):
    rows = write_rows(tmp_path / "rows.jsonl", worked_example())
    bad = verdict({"turn": 1, "quote": "text that is nowhere in the transcript"})
    write = f"cat > grade/verdict.json <<'EOF'\n{json.dumps(bad)}\nEOF"
    async with ChatServer(ScriptedModel([shell(write), Reply("verdict written")])) as server:
        episode = await grade(server, rows, tmp_path / "out")
    (trace,) = episode.traces
    assert trace.ok and trace.info["citations"]["downgraded"] == ["c04"]
    assert trace.info["gar"]["c04"]["hack"] == "suspected"
    # The failed hack call changes no advantage: same as calling c04 merely suspected.
    suspected = GroupVerdict.model_validate(bad).model_copy(
        update={
            "candidates": [
                c.model_copy(update={"hack": "suspected"}) if c.label == "c04" else c
                for c in GroupVerdict.model_validate(bad).candidates
            ]
        }
    )
    expected = {r.label: round(r.advantage, 4) for r in gar_records(worked_example(), suspected)}
    assert advantages(trace) == expected


@pytest.mark.anyio
async def test_env_server_and_client_give_the_same_advantages(boxes: Path, tmp_path: Path):
    rows = write_rows(tmp_path / "rows.jsonl", worked_example())
    script = ScriptedModel([submit(verdict())])
    async with ChatServer(script) as server:
        env_server = EnvServer(resolve_env_config(env_config(rows)), "tcp://127.0.0.1:0")
        client = EnvClient(env_server.address)
        async with anyio.create_task_group() as tg:
            tg.start_soon(env_server.run)
            try:
                with anyio.fail_after(240):
                    await client.wait_for_server_startup()
                    episode = await client.run(
                        client={
                            "type": "eval",
                            "base_url": server.base_url,
                            "api_key_var": KEY_VAR,
                        },
                        model="scripted-model",
                        sampling=SamplingConfig(),
                        task_data=worked_example().model_dump(mode="json"),
                    )
            finally:
                await client.close()
                tg.cancel_scope.cancel()
    (trace,) = episode.traces
    assert advantages(trace) == WORKED
    assert trace.info["kind"] == "grade" and trace.info["group_id"] == "worked-example"


@pytest.mark.anyio
@pytest.mark.needs_index
async def test_the_builtin_null_harness_grades_too(boxes: Path, tmp_path: Path):
    """verifiers' own `null` chat program (installed with uv from the package index)."""
    rows = write_rows(tmp_path / "rows.jsonl", worked_example())
    wrong = verdict(ranking=(("c01",),))
    async with ChatServer(ScriptedModel([submit(wrong), submit(verdict())])) as server:
        episode = await grade(server, rows, tmp_path / "out", harness="null", limit=540)
    (trace,) = episode.traces
    assert episode.ok, (trace.stop_condition, trace.errors)
    assert advantages(trace) == WORKED
    assert "ranking: missing c02, c03" in tool_results(server.requests[-1])[0]


@pytest.mark.anyio
async def test_the_grader_runs_hidden_tests_in_two_restored_boxes(boxes: Path, tmp_path: Path):
    fixed = await snapshot(tmp_path, "fixed", FIXED)
    buggy = await snapshot(tmp_path, "buggy", BUGGY)
    data = GroupGradeData(
        group_id="boxes",
        privileged=HIDDEN_TESTS,
        candidates=[
            Candidate(label="c01", reward=1.0, passed=True, checkpoint=fixed, turns=["fixed"]),
            Candidate(label="c02", reward=0.0, checkpoint=buggy, turns=["tried"]),
        ],
    )
    rows = write_rows(tmp_path / "rows.jsonl", data)
    script = ScriptedModel(
        [
            Reply(tool_calls=[("run_hidden_tests", {"label": "c01"})]),
            Reply(tool_calls=[("run_hidden_tests", {"label": "c02"})]),
            submit({"candidates": [{"label": "c01"}, {"label": "c02"}], "ranking": [["c01"]]}),
        ]
    )
    async with ChatServer(script) as server:
        episode = await grade(server, rows, tmp_path / "out")
    (trace,) = episode.traces
    assert episode.ok, (trace.stop_condition, trace.errors)
    first, second = map(HiddenTestRun.model_validate_json, tool_results(server.requests[-1]))
    assert (first.status, first.counts and first.counts.passed) == ("passed", 2)
    assert (second.status, second.counts and second.counts.failed) == ("failed", 2)
    assert trace.metrics["restores"] == 2.0 and trace.metrics["restore_seconds"] > 0
    assert advantages(trace) == {"c01": 0.5, "c02": -0.5}


@pytest.mark.anyio
async def test_a_verdict_accepted_while_a_slow_command_runs_is_kept(boxes: Path, tmp_path: Path):
    """The harness runs the calls of one response at once, each MCP call on its own client;
    verifiers pushes each call's whole state when it ends (last write wins), so the slow
    command's state lands after the acceptance and must still carry the verdict."""
    rows = await boxed_rows(tmp_path)
    accepted = {"candidates": [{"label": "c01"}, {"label": "c02"}], "ranking": [["c01"]]}
    both = Reply(
        tool_calls=[
            ("candidate_shell", {"label": "c01", "command": "sleep 3; echo slow done"}),
            ("submit_verdict", accepted),
        ]
    )
    port_files = set(Path("/tmp").glob("vf-port-*"))
    async with ChatServer(ScriptedModel([both, Reply("done")])) as server:
        episode = await grade(server, rows, tmp_path / "out")
    # verifiers leaves the file its tool server reports its port in; the server removes it.
    assert set(Path("/tmp").glob("vf-port-*")) <= port_files
    (trace,) = episode.traces
    assert episode.ok, (trace.stop_condition, trace.errors)
    # The run ended on the verdict: the model was not asked again.
    assert trace.stop_condition == "verdict_submitted" and len(server.requests) == 1
    assert "fallback_reason" not in trace.info
    assert trace.metrics["submissions"] == 1.0 and trace.metrics["restores"] >= 1.0
    assert advantages(trace) == {"c01": 0.5, "c02": -0.5}


@pytest.mark.anyio
async def test_prime_boxes_are_deleted_when_the_run_ends(
    boxes: Path, fake: FakePrimeAPI, tmp_path: Path
):
    """The tool server runs as verifiers launches it and is stopped with SIGTERM; the box it
    restored from a Prime checkpoint is deleted all the same."""
    async with AsyncSandboxClient() as client:
        source = await client.create(CreateSandboxRequest(name="solver", docker_image="python:3"))
        await client.wait_for_creation(source.id, max_attempts=10)
        await client.upload_bytes(source.id, "/app/calc.py", FIXED.encode(), filename="calc.py")
        checkpoint = await make_prime_checkpoint(source.id, client=client, timeout=30)
        await client.delete(source.id)
    # The subprocess runtime strips variables named *API_KEY*: the SDK reads the saved login.
    (boxes / ".prime").mkdir(exist_ok=True)
    (boxes / ".prime" / "config.json").write_text(json.dumps({"api_key": fake.api_key}))
    data = GroupGradeData(
        group_id="prime",
        box_workdir="/app",
        privileged=HIDDEN_TESTS,
        candidates=[
            Candidate(label="c01", reward=1.0, passed=True, checkpoint=checkpoint, turns=["x"]),
            Candidate(label="c02", reward=0.0, turns=["y"]),
        ],
    )
    rows = write_rows(tmp_path / "rows.jsonl", data)
    script = ScriptedModel(
        [
            Reply(
                tool_calls=[("candidate_shell", {"label": "c01", "command": HIDDEN_TEST_COMMAND})]
            ),
            submit({"candidates": [{"label": "c01"}, {"label": "c02"}], "ranking": [["c01"]]}),
        ]
    )
    async with ChatServer(script) as server:
        episode = await grade(server, rows, tmp_path / "out")
    (trace,) = episode.traces
    assert episode.ok, (trace.stop_condition, trace.errors)
    (ran,) = tool_results(server.requests[-1])
    assert "2 passed" in ran and trace.metrics["restores"] == 1.0
    restored = [s for s in fake.sandboxes.values() if s.request.get("checkpoint_id")]
    assert len(restored) == 1 and restored[0].status == "TERMINATED"


def test_vf_eval_cli_as_the_readme_documents_it(boxes: Path, tmp_path: Path):
    rows = write_rows(tmp_path / "rows.jsonl", worked_example())
    with ChatServer(ScriptedModel([submit(verdict())])).in_thread() as server:
        (episode,) = vf_eval(
            server.base_url, "scripted-model", tmp_path / "runs", "--env.taskset.source", str(rows)
        )
    (trace,) = episode["traces"]
    assert {k: round(r["advantage"], 4) for k, r in trace["info"]["gar"].items()} == WORKED


def box_dirs(home: Path) -> list[Path]:
    return [p for p in home.rglob("gg-box-*") if p.is_dir()]


async def boxed_rows(tmp_path: Path) -> Path:
    fixed = await snapshot(tmp_path, "fixed", FIXED)
    data = GroupGradeData(
        group_id="cleanup",
        privileged=HIDDEN_TESTS,
        candidates=[
            Candidate(label="c01", reward=1.0, passed=True, checkpoint=fixed, turns=["x"]),
            Candidate(label="c02", reward=0.0, checkpoint=fixed, turns=["y"]),
        ],
    )
    return write_rows(tmp_path / "rows.jsonl", data)


def in_box(command: str) -> Reply:
    return Reply(tool_calls=[("candidate_shell", {"label": "c01", "command": command})])


@pytest.mark.anyio
async def test_boxes_are_gone_after_a_normal_end_and_after_an_error(boxes: Path, tmp_path: Path):
    rows = await boxed_rows(tmp_path)
    async with ChatServer(ScriptedModel([in_box("touch made"), Reply("done")])) as server:
        episode = await grade(server, rows, tmp_path / "ok")
    assert episode.traces[0].metrics["restores"] >= 1
    assert box_dirs(boxes) == []

    def then_crash(body):
        if tool_results(body):
            raise RuntimeError("the model backend fell over")
        return in_box("touch made")

    async with ChatServer(then_crash) as server:
        episode = await grade(server, rows, tmp_path / "crash")
    assert episode.traces[0].info["fallback_reason"] == "error"
    assert box_dirs(boxes) == []


@pytest.mark.anyio
async def test_boxes_are_gone_after_cancellation(boxes: Path, tmp_path: Path):
    rows = await boxed_rows(tmp_path)
    async with ChatServer(ScriptedModel([in_box("sleep 120")])) as server:
        with anyio.move_on_after(240):
            async with anyio.create_task_group() as tg:
                tg.start_soon(grade, server, rows, tmp_path / "cancelled")
                with anyio.fail_after(120):
                    while not (server.requests and box_dirs(boxes)):
                        await anyio.sleep(0.2)
                await anyio.sleep(1)
                tg.cancel_scope.cancel()
    assert box_dirs(boxes) == []


@pytest.mark.anyio
async def test_attack_6_a_label_cannot_lead_staging_out_of_the_grade_root(
    boxes: Path, tmp_path: Path
):
    raw = worked_example().model_dump(mode="json")
    raw["candidates"][1]["label"] = "../../x"
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(raw) + "\n")
    refused = ""
    async with ChatServer(ScriptedModel([Reply("done")])) as server:
        try:
            await grade(server, rows, tmp_path / "out")
        except ValueError as e:
            refused = str(e)
    outside = [p for p in boxes.rglob("*") if p.is_file() and "x" in p.relative_to(boxes).parts]
    assert outside == []
    assert "candidates.1.label" in refused and "label '../../x' must" in refused


@pytest.mark.anyio
async def test_a_verdict_with_a_lone_surrogate_is_answered_and_can_be_fixed(
    boxes: Path, tmp_path: Path
):
    rows = write_rows(tmp_path / "rows.jsonl", worked_example())
    broken = verdict({"turn": 1, "quote": "I will fix the bug \ud800 now"})
    script = ScriptedModel([submit(broken), submit(verdict())])
    async with ChatServer(script) as server:
        episode = await grade(server, rows, tmp_path / "out")
    (trace,) = episode.traces
    (answer,) = tool_results(server.requests[-1])
    assert "candidates.5.evidence.0.quote: text holds a lone surrogate (U+D800" in answer
    assert trace.info["verdict"] is not None and advantages(trace) == WORKED
