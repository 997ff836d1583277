"""The trainer-side client: a real EnvServer serving group-grade, a scripted grader model."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import math
import re
import tomllib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest
import verifiers.v1 as vf
from prime_sandboxes import AsyncSandboxClient, CreateSandboxRequest
from pydantic import TypeAdapter
from verifiers.v1.serve.client import EnvClient
from verifiers.v1.serve.server import EnvServer
from verifiers.v1.utils.loaders import resolve_env_config

from group_grade import grading_client
from group_grade.advantages import F_MIN, LAMBDA_MAX, GarKnobs, gar_records
from group_grade.boxes.base import DeleteReport
from group_grade.boxes.prime import PrimeBackend, make_prime_checkpoint
from group_grade.chat_server import ChatServer, Reply
from group_grade.data import GroupGradeData
from group_grade.grade_record import GradeRecord
from group_grade.grading_client import GroupGrader, GroupResult
from group_grade.verdict import CandidateVerdict, GroupVerdict
from tests.fake_prime_api import FakePrimeAPI
from tests.grading import KEY_VAR, env_config, shell, submit
from tests.rows import row
from tests.scripted_model import ScriptedModel, text_of
from tests.traces import Call, Turn, make_trace

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "prime-rl"
LISTING = re.compile(r"^- (c\d+): (passed|failed) \(reward [^)]*\), (\d+) turns", re.MULTILINE)


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VAR, "unused")


def candidate(name: str, reward: float, turns: int = 1, checkpoint: str | None = None) -> vf.Trace:
    """A finished rollout with ``turns`` turns; its id is ``trace-<name>``."""
    return make_trace(
        [Turn(content=f"{name} turn {i}: I will look at the code.") for i in range(turns)],
        reward=reward,
        info={"checkpoint": checkpoint} if checkpoint else {},
        trace_id=f"trace-{name}",
    )


def rank_by_turns(body: dict[str, Any]) -> Reply:
    """Submit a verdict read off the prompt's candidate listing: no hacks, the passing
    candidates one per tier, most turns first."""
    prompt = next(text_of(m.get("content")) for m in body["messages"] if m["role"] == "user")
    listed = LISTING.findall(prompt)
    passing = sorted((c for c in listed if c[1] == "passed"), key=lambda c: -int(c[2]))
    return submit(
        {
            "candidates": [{"label": label} for label, _, _ in listed],
            "ranking": [[label] for label, _, _ in passing],
            "notes": "more turns, more care",
        }
    )


class RecordingDeleter:
    """Stands in for ``delete_checkpoints``: records every call, refuses ``busy`` ids."""

    def __init__(self, busy: Sequence[str] = ()) -> None:
        self.calls: list[list[str]] = []
        self.busy = set(busy)

    async def __call__(self, checkpoints: list[str]) -> DeleteReport:
        self.calls.append(list(checkpoints))
        return DeleteReport(
            deleted=[c for c in checkpoints if c not in self.busy],
            retry_later=[c for c in checkpoints if c in self.busy],
        )


@asynccontextmanager
async def served(tmp_path: Path, task: dict[str, Any] | None = None) -> AsyncIterator[EnvServer]:
    """group-grade on a real in-process EnvServer (it never loads rows: they come over
    the wire); ``task`` is the grading task's config."""
    data = env_config(tmp_path / "unused.jsonl")
    data["taskset"]["task"] = task or {}
    config = resolve_env_config(data)
    server = EnvServer(config, "tcp://127.0.0.1:0")
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.run)
        probe = EnvClient(server.address)
        try:
            with anyio.fail_after(60):
                await probe.wait_for_server_startup(interval=0.2)
        finally:
            await probe.close()
        try:
            yield server
        finally:
            tg.cancel_scope.cancel()


def grader_for(server: EnvServer, chat: ChatServer, **options: Any) -> GroupGrader:
    client = {"type": "eval", "base_url": chat.base_url, "api_key_var": KEY_VAR}
    return GroupGrader(server.address, client=client, model="scripted-model", **options)


def grpo(traces: Sequence[vf.Trace]) -> list[float]:
    mean = sum(t.reward for t in traces) / len(traces)
    return [t.reward - mean for t in traces]


def assert_fallback(result: GroupResult, reason: str, traces: Sequence[vf.Trace]) -> None:
    assert not result.graded and result.fallback_reason == reason
    assert {r.fallback_reason for r in result.records} == {reason}
    assert result.advantages == pytest.approx(grpo(traces))
    assert [result.labels[r.label] for r in result.records] == [t.id for t in traces]


@pytest.mark.anyio
async def test_a_mixed_group_is_graded_and_mapped_back_a_uniform_one_is_not_sent(
    boxes: Path, tmp_path: Path
) -> None:
    # A, B, C pass with 3, 2, 1 turns: the verdict ranks them A > B > C; D fails.
    traces = [
        candidate(name, reward, turns, checkpoint=f"local:/ckpt/{name}.tar.gz")
        for name, reward, turns in [("D", 0, 1), ("C", 1, 1), ("A", 1, 3), ("B", 1, 2)]
    ]
    uniform = [candidate(name, 1.0, checkpoint=f"local:/ckpt/{name}.tar.gz") for name in "EFG"]
    deleter = RecordingDeleter()
    async with ChatServer(ScriptedModel([rank_by_turns])) as chat, served(tmp_path) as server:
        grader = grader_for(server, chat, deleter=deleter)
        with anyio.fail_after(120):
            result = await grader.grade(traces, group_id="mixed")
            sent = len(chat.requests)
            flat = await grader.grade(uniform, group_id="uniform")
        await grader.close()

    assert result.graded and result.fallback_reason is None and result.error is None
    assert result.episode_id is not None
    assert result.trace_ids == ["trace-D", "trace-C", "trace-A", "trace-B"]
    assert [result.labels[r.label] for r in result.records] == result.trace_ids
    # rewards 0,1,1,1: A = +0.25 each for the passers; w = 1, 0.5, 0; f = 1, 0.75, 0.5;
    # lambda = 0.75 / 0.5625 = 4/3.
    assert result.advantages == pytest.approx([-0.75, 1 / 6, 1 / 3, 0.25])
    assert [r.tier for r in result.records] == [None, 3, 1, 2]
    assert result.records[0].lambda_ == pytest.approx(4 / 3)
    assert sum(result.advantages) == pytest.approx(0.0, abs=1e-9)

    assert sent == 1 and len(chat.requests) == sent  # the uniform group sent nothing
    assert not flat.graded and flat.fallback_reason is None and flat.episode_id is None
    assert flat.advantages == [0.0, 0.0, 0.0]
    assert [flat.labels[r.label] for r in flat.records] == ["trace-E", "trace-F", "trace-G"]

    assert sorted(map(sorted, deleter.calls)) == [
        [f"local:/ckpt/{n}.tar.gz" for n in "ABCD"],
        [f"local:/ckpt/{n}.tar.gz" for n in "EFG"],
    ]


@pytest.mark.anyio
async def test_a_grader_that_never_answers_falls_back_as_timeout(
    boxes: Path, tmp_path: Path
) -> None:
    released = anyio.Event()

    async def never(body: dict[str, Any]) -> Reply:
        with anyio.move_on_after(60):
            await released.wait()
        return Reply("too late")

    traces = [candidate("A", 1.0), candidate("B", 0.0), candidate("C", 0.0)]
    async with ChatServer(never) as chat, served(tmp_path) as server:
        grader = grader_for(server, chat, timeout=5)
        try:
            with anyio.fail_after(60):
                result = await grader.grade(traces, group_id="silent")
                # The client cancelled the run on the server (EnvServer keeps its live runs
                # in `_running` until they end).
                while server._running:
                    await anyio.sleep(0.1)
        finally:
            released.set()
            await grader.close()
    assert_fallback(result, "timeout", traces)
    assert result.episode_id is None and "5s" in result.error


@pytest.mark.anyio
async def test_stale_groups_fall_back_before_sending_and_on_arrival(
    boxes: Path, tmp_path: Path
) -> None:
    step = [10]

    def verdict_after_two_steps(body: dict[str, Any]) -> Reply:
        step[0] += 3  # the trainer moved on while the group was graded
        return rank_by_turns(body)

    traces = [candidate("A", 1.0), candidate("B", 0.0)]
    async with (
        ChatServer(ScriptedModel([verdict_after_two_steps])) as chat,
        served(tmp_path) as server,
    ):
        grader = grader_for(server, chat, current_step=lambda: step[0], max_staleness=2)
        with anyio.fail_after(120):
            old = await grader.grade(traces, group_id="old", step=7)
            assert chat.requests == []
            late = await grader.grade(traces, group_id="late")
        await grader.close()
    assert_fallback(old, "stale", traces)
    assert old.episode_id is None
    assert_fallback(late, "stale", traces)
    assert late.episode_id is not None and len(chat.requests) == 1


@pytest.mark.anyio
async def test_an_invalid_verdict_falls_back_as_invalid(boxes: Path, tmp_path: Path) -> None:
    script = ScriptedModel(
        [shell("""echo '{"ranking": "c01 first"}' > grade/verdict.json"""), Reply("done")]
    )
    traces = [candidate("A", 1.0), candidate("B", 0.5), candidate("C", 0.0)]
    async with ChatServer(script) as chat, served(tmp_path) as server:
        grader = grader_for(server, chat)
        with anyio.fail_after(120):
            result = await grader.grade(traces, group_id="bad-verdict")
        await grader.close()
    assert_fallback(result, "invalid", traces)
    assert result.episode_id is not None
    assert "the verdict does not parse" in result.error


async def prime_checkpoint(client: AsyncSandboxClient) -> str:
    """A DURABLE ``prime:<id>`` checkpoint on the fake Prime API (source sandbox deleted)."""
    sandbox = await client.create(CreateSandboxRequest(name="solver", docker_image="python:3.11"))
    await client.wait_for_creation(sandbox.id, max_attempts=10)
    checkpoint = await make_prime_checkpoint(sandbox.id, client=client, timeout=30)
    await client.delete(sandbox.id)
    return checkpoint


@pytest.mark.anyio
async def test_checkpoints_refused_while_in_use_are_retried_at_close(
    fake: FakePrimeAPI,
    boxes: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with AsyncSandboxClient() as sdk:
        free, busy, kept = [await prime_checkpoint(sdk) for _ in range(3)]
    backend = PrimeBackend(start_timeout=30)
    busy_box = await backend.restore(busy)  # live restored boxes: their checkpoint gives 409
    kept_box = await backend.restore(kept)
    traces = [
        candidate("A", 1.0, checkpoint=free),
        candidate("B", 0.0, checkpoint=busy),
        candidate("C", 0.0, checkpoint=kept),
    ]
    try:
        # No prefetch: the grader restores no candidate box of its own here.
        no_prefetch = {"tools": {"prefetch": False}}
        async with (
            ChatServer(ScriptedModel([rank_by_turns])) as chat,
            served(tmp_path, no_prefetch) as server,
        ):
            grader = grader_for(server, chat)
            with anyio.fail_after(120):
                result = await grader.grade(traces, group_id="boxes")
            assert result.graded
            assert set(fake.checkpoints) == {
                busy.removeprefix("prime:"),
                kept.removeprefix("prime:"),
            }
            await busy_box.close()
            with caplog.at_level(logging.WARNING, logger="group_grade.grading_client"):
                report = await grader.close()
        assert (report.deleted, report.retry_later, report.failed) == ([busy], [kept], {})
        assert set(fake.checkpoints) == {kept.removeprefix("prime:")}
        assert f"checkpoint {kept} is still in use" in caplog.text
    finally:
        await busy_box.close()
        await kept_box.close()
        await backend.aclose()


class FakeEnvClient:
    """Stands in for verifiers' EnvClient (the tests above use the real one): grades every
    row with all passing candidates in one tier, or hangs, or fails; counts runs in flight."""

    def __init__(
        self,
        *,
        delay: float = 0.02,
        hang: bool = False,
        error: str | None = None,
        linger: float = 0.0,
    ):
        """``linger``: a cancelled run still holds its slot that long (a slow server)."""
        self.delay, self.hang, self.error, self.linger = delay, hang, error, linger
        self.calls = self.active = self.peak = 0

    def __call__(self, address: str) -> FakeEnvClient:
        return self

    async def run(self, **request: Any) -> vf.WireEpisode:
        self.calls += 1
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            try:
                await asyncio.sleep(3600 if self.hang else self.delay)
            except asyncio.CancelledError:
                await asyncio.shield(asyncio.sleep(self.linger))
                raise
            if self.error is not None:
                raise RuntimeError(self.error)
            return graded_episode(GroupGradeData.model_validate(request["task_data"]))
        finally:
            self.active -= 1

    async def close(self) -> None:
        pass


def graded_episode(data: GroupGradeData) -> vf.WireEpisode:
    """The wire episode a grading run returns, its advantages mapped by the real hook."""
    verdict = GroupVerdict(
        candidates=[CandidateVerdict(label=label) for label in data.labels],
        ranking=[[c.label for c in data.candidates if c.passed]],
    )
    trace = make_trace([])
    record = GradeRecord(group_id=data.group_id, trace_ids=data.trace_ids, verdict=verdict)
    record.mapped(data, GarKnobs(f_min=F_MIN, lambda_max=LAMBDA_MAX)).write(trace)
    return vf.WireEpisode.model_validate(
        {
            "task": {"type": "GroupGradeTask", "data": data.model_dump(mode="json")},
            "ok": True,
            "traces": [trace.model_dump(mode="json")],
        }
    )


def mixed_group(n: int) -> list[vf.Trace]:
    return [
        candidate(f"{n}-{i}", float(i % 2), checkpoint=f"local:/ckpt/{n}/{i}.tar.gz")
        for i in range(4)
    ]


@pytest.mark.anyio
async def test_never_more_than_max_concurrent_groups_in_flight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeEnvClient()
    monkeypatch.setattr(grading_client, "EnvClient", fake)
    deleter = RecordingDeleter()
    grader = GroupGrader(
        "tcp://127.0.0.1:1", client={}, model="m", max_concurrent=3, deleter=deleter
    )
    groups = [mixed_group(n) for n in range(40)]
    uniform = [[candidate(f"u{n}-{i}", 1.0) for i in range(4)] for n in range(5)]
    results: list[GroupResult] = []

    async def grade(traces: list[vf.Trace], n: int) -> None:
        results.append(await grader.grade(traces, group_id=f"g{n}"))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for n, traces in enumerate(groups + uniform):
                tg.start_soon(grade, traces, n)
        await grader.close()
    assert fake.calls == 40 and fake.peak == 3
    assert sum(r.graded for r in results) == 40
    assert all(r.fallback_reason is None for r in results)
    assert sorted(map(sorted, deleter.calls)) == sorted(
        sorted(t.info["checkpoint"] for t in traces) for traces in groups
    )


@pytest.mark.anyio
async def test_the_wait_for_a_slot_counts_against_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The first run holds the only slot 3 s past its own deadline, so the second group's
    # deadline passes while it waits, however late its minting ends on a loaded machine.
    fake = FakeEnvClient(hang=True, linger=3)
    monkeypatch.setattr(grading_client, "EnvClient", fake)
    grader = GroupGrader("tcp://127.0.0.1:1", client={}, model="m", max_concurrent=1, timeout=1)
    first, second = mixed_group(1), mixed_group(2)
    with anyio.fail_after(30):
        results = await asyncio.gather(
            grader.grade(first, group_id="first"), grader.grade(second, group_id="second")
        )
    await grader.close()
    assert fake.calls == 1  # the second group never got a slot
    assert_fallback(results[0], "timeout", first)
    assert_fallback(results[1], "timeout", second)


@pytest.mark.anyio
async def test_env_failures_fall_back_as_error(monkeypatch: pytest.MonkeyPatch) -> None:
    traces = mixed_group(0)
    monkeypatch.setattr(grading_client, "EnvClient", FakeEnvClient(error="env server exploded"))
    async with GroupGrader("tcp://127.0.0.1:1", client={}, model="m") as grader:
        failed = await grader.grade(traces, group_id="g")
    assert_fallback(failed, "error", traces)
    assert failed.error == "RuntimeError: env server exploded"

    async def no_gar(**request: Any) -> vf.WireEpisode:
        episode = graded_episode(GroupGradeData.model_validate(request["task_data"]))
        for trace in episode.traces:
            del trace.info["gar"], trace.info["verdict"]
        return episode

    fake = FakeEnvClient()
    monkeypatch.setattr(fake, "run", no_gar)
    monkeypatch.setattr(grading_client, "EnvClient", fake)
    async with GroupGrader("tcp://127.0.0.1:1", client={}, model="m") as grader:
        empty = await grader.grade(traces, group_id="g")
    assert_fallback(empty, "error", traces)
    assert "no advantages" in empty.error


@pytest.mark.anyio
async def test_cancelling_grade_propagates_and_still_deletes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(grading_client, "EnvClient", FakeEnvClient(hang=True))
    deleter = RecordingDeleter()
    grader = GroupGrader("tcp://127.0.0.1:1", client={}, model="m", deleter=deleter)
    traces = mixed_group(0)
    task = asyncio.ensure_future(grader.grade(traces, group_id="g"))
    await anyio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await grader.close()
    assert [sorted(call) for call in deleter.calls] == [
        sorted(t.info["checkpoint"] for t in traces)
    ]


@pytest.mark.anyio
async def test_grade_refuses_unusable_input() -> None:
    grader = GroupGrader("tcp://127.0.0.1:1", client={}, model="m")
    grade_trace = candidate("G", 1.0)
    GradeRecord(group_id="g").write(grade_trace)
    with pytest.raises(ValueError, match="grade traces cannot be candidates"):
        await grader.grade([candidate("A", 1.0), grade_trace], group_id="g")
    with pytest.raises(ValueError, match="not unique"):
        await grader.grade([candidate("A", 1.0), candidate("A", 0.0)], group_id="g")
    await grader.close()
    with pytest.raises(RuntimeError, match="closed"):
        await grader.grade([candidate("A", 1.0)], group_id="g")


def test_the_callers_mapping_knobs_win_over_the_envs() -> None:
    data = row([1, 1, 1, 1, 0, 0], group_id="knobs")
    verdict = GroupVerdict(
        candidates=[CandidateVerdict(label=label) for label in data.labels],
        ranking=[["c01"], ["c02", "c03"], ["c04"]],
    )
    trace = make_trace([])
    env_knobs = GarKnobs(f_min=F_MIN, lambda_max=LAMBDA_MAX)
    GradeRecord(group_id=data.group_id, verdict=verdict).mapped(data, env_knobs).write(trace)
    record = GradeRecord.of(trace)
    assert record is not None
    same = record.advantages(data, env_knobs)
    assert [r.advantage for r in same] == [
        trace.info["gar"][label]["advantage"] for label in data.labels
    ]
    other = record.advantages(data, GarKnobs(f_min=0.0, lambda_max=2.0))
    expected = gar_records(data, verdict, knobs=GarKnobs(f_min=0.0, lambda_max=2.0))
    assert [r.advantage for r in other] == [r.advantage for r in expected]
    assert [r.advantage for r in other] != [r.advantage for r in same]


def load_example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), EXAMPLES / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_prime_rl_example_config_validates() -> None:
    config = tomllib.loads((EXAMPLES / "group-grade.toml").read_text())
    env = resolve_env_config(config["env"])
    assert env.taskset.id == "group-grade" and env.grader_trainable is False
    assert env.agent.model and env.agent.client is not None  # the frozen judge is pinned
    serve = vf.ServeConfig.model_validate(config["serve"])
    kwargs = load_example("serve_group_grade.py").serve_kwargs(config)
    assert kwargs["address"] == serve.address and kwargs["config"] == env
    assert kwargs["max_concurrent"] == serve.max_concurrent
    grader = dict(config["grader"])
    TypeAdapter(vf.ClientConfig).validate_python(grader["client"])
    GroupGrader(**grader, current_step=lambda: 0)


HACK_WORDS = "I will edit the tests so that they pass whatever calc.py returns."


def confirm_the_two_turn_passer(body: dict[str, Any]) -> Reply:
    """A verdict read off the prompt's listing: the passing candidate with two turns is a
    confirmed hack (quoting its first turn), the other passers one tier."""
    prompt = next(text_of(m.get("content")) for m in body["messages"] if m["role"] == "user")
    listed = LISTING.findall(prompt)
    (hacker,) = [label for label, status, turns in listed if status == "passed" and turns == "2"]
    honest = [label for label, status, _ in listed if status == "passed" and label != hacker]
    hack = {"label": hacker, "hack": "confirmed", "evidence": [{"turn": 1, "quote": HACK_WORDS}]}
    return submit(
        {
            "candidates": [hack] + [{"label": label} for label, _, _ in listed if label != hacker],
            "ranking": [honest],
            "notes": "the two-turn passer edited the tests",
        }
    )


@pytest.mark.anyio
async def test_attack_3_a_lone_surrogate_in_a_tool_call_does_not_switch_grading_off(
    boxes: Path, tmp_path: Path
) -> None:
    # The hacker's tool-call arguments hold the JSON escape \ud800: decoded, a lone surrogate
    # that UTF-8 (and so the env server's msgpack wire) cannot hold.
    hacker = make_trace(
        [
            Turn(HACK_WORDS, [Call("bash", {"command": "echo \ud800 > tests/test_calc.py"}, "")]),
            Turn("Done: the tests pass."),
        ],
        reward=1.0,
        trace_id="trace-H",
    )
    assert "\\ud800" in hacker.assistant_messages[0].tool_calls[0].arguments
    traces = [candidate("A", 1.0), hacker, candidate("B", 0.0), candidate("C", 0.0)]
    async with (
        ChatServer(ScriptedModel([confirm_the_two_turn_passer])) as chat,
        served(tmp_path) as server,
    ):
        grader = grader_for(server, chat)
        with anyio.fail_after(120):
            result = await grader.grade(traces, group_id="surrogate")
        await grader.close()
    assert result.graded and result.fallback_reason is None, result.error
    # The hack drops to the lowest reward: rewards 1, 0, 0, 0 -> A +0.75, the rest -0.25
    # (plain GRPO would have given the hacker +0.5).
    assert result.advantages == pytest.approx([0.75, -0.25, -0.25, -0.25])
    hacked = result.records[1]
    assert hacked.hack == "confirmed" and hacked.tier == 2


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("rewards", "culprit"),
    [
        ([1.0, math.nan, 0.0], "trace-N1"),
        ([math.inf, 1.0, 0.0], "trace-N0"),
        ([1e308, 1e308, 0.0], "trace-N0"),
    ],
)
async def test_attack_8_non_finite_rewards_are_refused_by_the_trainer_client(
    monkeypatch: pytest.MonkeyPatch, rewards: list[float], culprit: str
) -> None:
    fake = FakeEnvClient()
    monkeypatch.setattr(grading_client, "EnvClient", fake)
    traces = [candidate(f"N{i}", r) for i, r in enumerate(rewards)]
    async with GroupGrader("tcp://127.0.0.1:1", client={}, model="m") as grader:
        with pytest.raises(ValueError, match=f"{culprit}: reward must be a finite number"):
            await grader.grade(traces, group_id="nan")
    assert fake.calls == 0


@pytest.mark.parametrize(
    "knobs",
    [
        {"lambda_max": math.nan},
        {"lambda_max": math.inf},
        {"f_min": math.nan},
        {"timeout": math.nan},
        {"timeout": math.inf},
        {"max_concurrent": math.nan},
        {"current_step": lambda: 0, "max_staleness": math.nan},
    ],
)
def test_attack_8_non_finite_knobs_are_refused_by_the_trainer_client(knobs: dict) -> None:
    name = next(k for k in knobs if k != "current_step")
    with pytest.raises(ValueError, match=name):
        GroupGrader("tcp://127.0.0.1:1", client={}, model="m", **knobs)


@pytest.mark.anyio
async def test_a_candidate_calling_a_tool_named_like_the_graders_is_still_graded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its group is not refused as holding a grade trace: only what the env recorded counts."""
    fake = FakeEnvClient()
    monkeypatch.setattr(grading_client, "EnvClient", fake)
    mimic = make_trace(
        [Turn("", [Call("submit_verdict", {"ranking": [["c01"]]}, "unknown tool")])],
        reward=1.0,
        trace_id="trace-M",
    )
    async with GroupGrader("tcp://127.0.0.1:1", client={}, model="m") as grader:
        result = await grader.grade([mimic, candidate("B", 0.0)], group_id="mimic")
    assert result.graded and fake.calls == 1


@pytest.mark.anyio
async def test_the_default_deleter_deletes_local_checkpoints_only_inside_its_root(
    tmp_path: Path,
) -> None:
    """A checkpoint string is a trace's word: the trainer deletes only what lies in the
    folder it was told its solvers checkpoint into."""
    root = tmp_path / "checkpoints"
    root.mkdir()
    inside = root / "a.tar.gz"
    inside.write_bytes(b"archive")
    victim = tmp_path / "precious"
    victim.mkdir()
    (victim / "data.txt").write_text("keep me")
    traces = [
        candidate("A", 1.0, checkpoint=f"local:{inside}"),
        candidate("B", 1.0, checkpoint=f"local:{root}/../precious"),
        candidate("C", 1.0, checkpoint=f"local:{victim}"),
    ]
    client = {"base_url": "http://127.0.0.1:9/v1", "api_key_var": KEY_VAR}
    async with GroupGrader(
        "tcp://127.0.0.1:9", client=client, model="m", local_checkpoint_root=root
    ) as grader:
        result = await grader.grade(traces, group_id="uniform")  # not due: nothing is sent
    assert not result.graded and result.advantages == [0.0, 0.0, 0.0]
    assert not inside.exists()
    assert (victim / "data.txt").read_text() == "keep me"
