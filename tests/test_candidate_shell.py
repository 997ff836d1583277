"""candidate_shell on real local boxes: restored snapshots, hidden tests, limits, cleanup."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prime_sandboxes import AsyncSandboxClient, CreateSandboxRequest

from group_grade.boxes import delete_checkpoints
from group_grade.boxes.local import make_local_checkpoint
from group_grade.boxes.prime import make_prime_checkpoint
from group_grade.data import Candidate, GroupGradeData
from group_grade.hidden_tests import HiddenTestRun, JUnitCounts
from group_grade.toolset import GradeToolset, GradeToolsetConfig
from tests.fake_prime_api import FakePrimeAPI
from tests.projects import BUGGY, FIXED, HIDDEN_TEST_COMMAND, HIDDEN_TESTS, snapshot


async def toolset(tmp_path: Path, **config) -> GradeToolset:
    fixed = await snapshot(tmp_path, "fixed", FIXED)
    buggy = await snapshot(tmp_path, "buggy", BUGGY)
    data = GroupGradeData(
        group_id="g",
        candidates=[
            Candidate(label="c01", reward=1.0, passed=True, checkpoint=fixed),
            Candidate(label="c02", reward=0.0, checkpoint=buggy),
            Candidate(label="c03", reward=0.0, checkpoint=buggy),
            Candidate(label="c04", reward=0.0),
            Candidate(label="c05", reward=0.0, checkpoint=f"local:{tmp_path}/missing.tar.gz"),
        ],
        privileged=HIDDEN_TESTS,
    )
    boxes = tmp_path / "boxes"
    tools = GradeToolset(
        GradeToolsetConfig(
            box_parent=str(boxes),
            **{"prefetch": False, **config},
        )
    )
    await tools.setup_task(data)
    return tools


def open_boxes(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "boxes").iterdir()) if (tmp_path / "boxes").exists() else []


@pytest.mark.anyio
async def test_hidden_tests_pass_in_the_fixed_box_and_fail_in_the_buggy_one(tmp_path: Path):
    tools = await toolset(tmp_path)
    passed = await tools.run_in_box("c01", HIDDEN_TEST_COMMAND)
    failed = await tools.run_in_box("c02", HIDDEN_TEST_COMMAND)
    assert passed.startswith("[c01] exit code 0\n") and "2 passed" in passed
    assert failed.startswith("[c02] exit code 1\n") and "2 failed" in failed
    assert tools.pool.restores == 2 and tools.state.restores == 2
    assert tools.state.restore_seconds > 0
    await tools._exit_stack.aclose()
    assert open_boxes(tmp_path) == []


@pytest.mark.anyio
async def test_run_hidden_tests_answers_the_junit_result_as_json(tmp_path: Path):
    tools = await toolset(tmp_path)
    fixed = HiddenTestRun.model_validate_json(await tools.run_hidden_tests("c01"))
    buggy = HiddenTestRun.model_validate_json(await tools.run_hidden_tests("c02"))
    no_box = HiddenTestRun.model_validate_json(await tools.run_hidden_tests("c04"))
    broken = HiddenTestRun.model_validate_json(await tools.run_hidden_tests("c05"))
    unknown = HiddenTestRun.model_validate_json(await tools.run_hidden_tests("c09"))
    assert (fixed.status, fixed.exit_code, fixed.counts) == (
        "passed",
        0,
        JUnitCounts(tests=2, passed=2),
    )
    assert fixed.reason == "2 passed, 0 failed, 0 errors, 0 skipped (exit code 0)"
    assert (buggy.status, buggy.exit_code) == ("failed", 1)
    assert buggy.counts == JUnitCounts(
        tests=2,
        failed=2,
        failing=["tests.test_hidden::test_add", "tests.test_hidden::test_add_negative"],
    )
    assert "assert -1 == 5" in buggy.output
    assert no_box.status == "not_run" and "no box" in no_box.reason
    assert broken.status == "not_run" and "missing.tar.gz" in broken.reason
    assert unknown.status == "not_run" and unknown.reason == "unknown label"
    await tools._exit_stack.aclose()


@pytest.mark.anyio
async def test_changes_persist_and_boxes_are_independent(tmp_path: Path):
    tools = await toolset(tmp_path)
    await tools.run_in_box("c02", "sed -i 's/a - b/a + b/' calc.py && echo edited > note.txt")
    assert "2 passed" in await tools.run_in_box("c02", HIDDEN_TEST_COMMAND)
    assert "edited" in await tools.run_in_box("c02", "cat note.txt")
    assert "2 failed" in await tools.run_in_box("c03", HIDDEN_TEST_COMMAND)
    assert tools.pool.restores == 2
    await tools.pool.close_all()


@pytest.mark.anyio
async def test_the_lru_bound_closes_the_least_recently_used_box(tmp_path: Path):
    tools = await toolset(tmp_path, max_open_boxes=2)
    await tools.run_in_box("c01", "true")
    await tools.run_in_box("c02", "true")
    await tools.run_in_box("c01", "true")
    assert len(open_boxes(tmp_path)) == 2
    await tools.run_in_box("c03", "true")
    assert tools.pool.open_labels == ["c01", "c03"]
    assert len(open_boxes(tmp_path)) == 2
    # c02 comes back restored from its checkpoint, without the earlier changes.
    await tools.run_in_box("c02", "touch mark")
    assert tools.pool.restores == 4
    await tools.pool.close_all()
    assert open_boxes(tmp_path) == []


@pytest.mark.anyio
async def test_a_command_cannot_reach_the_network(tmp_path: Path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        tools = await toolset(tmp_path)
        probe = (
            "python3 -c \"import socket; socket.create_connection(('127.0.0.1', "
            f"{port}), timeout=2); print('CONNECTED')\""
        )
        out = await tools.run_in_box("c01", probe)
        assert "CONNECTED" not in out and "Connection refused" in out
        await tools.pool.close_all()
    finally:
        server.close()


@pytest.mark.anyio
async def test_timeouts_and_huge_output_are_bounded(tmp_path: Path):
    tools = await toolset(tmp_path, command_timeout=1.0, output_cap=1000)
    out = await tools.run_in_box("c01", "echo started; sleep 30")
    assert out == "[c01] timed out after 1 s (the command was killed)\nstarted\n"
    big = await tools.run_in_box("c01", "python3 -c \"print('x' * 200000)\"")
    assert "characters cut: lines 1-1 of 1;" in big and len(big) < 1400
    await tools.pool.close_all()


@pytest.mark.anyio
async def test_a_cut_answer_names_the_lines_and_the_command_that_shows_them(tmp_path: Path):
    tools = await toolset(tmp_path, output_cap=1000)
    answer = await tools.run_in_box("c01", "seq 1 3000")
    cut = re.search(r"characters cut: lines (\d+)-(\d+) of 3000; .*`(sed -n '\d+,\d+p')`", answer)
    assert cut is not None, answer
    first, last = int(cut.group(1)), int(cut.group(2))
    wide = await toolset(tmp_path / "wide", output_cap=100_000)
    rest = await wide.run_in_box("c01", f"seq 1 3000 | {cut.group(3)}")
    assert rest == "[c01] exit code 0\n" + "".join(f"{i}\n" for i in range(first, last + 1))
    await tools.pool.close_all()
    await wide.pool.close_all()


@pytest.mark.anyio
async def test_the_box_facts_the_prompt_states_hold(tmp_path: Path):
    """What the prompt and candidate_shell's description say about local boxes: commands run
    under ``sh -c`` (dash: no bash syntax; ``bash -c`` works where the system has bash), in
    the workdir, where the package under test imports (``python -c``, ``python -m pytest``)
    and nowhere else; each box has its own ``/tmp``, kept between its commands; git history
    is there only when the snapshot holds a ``.git``."""
    tools = await toolset(tmp_path)
    sh = await tools.run_in_box("c01", 'echo "${PIPESTATUS[0]}"')
    assert sh.startswith("[c01] exit code 2\n") and "Bad substitution" in sh
    if shutil.which("bash"):
        assert (
            await tools.run_in_box("c01", "bash -c 'true | false; echo ${PIPESTATUS[1]}'")
        ).endswith("\n1\n")
    here = await tools.run_in_box("c01", "pwd; python -c 'import calc; print(calc.__file__)'")
    assert here == "[c01] exit code 0\n/app\n/app/calc.py\n"
    elsewhere = await tools.run_in_box("c01", "cd /tmp && python -c 'import calc'")
    assert elsewhere.startswith("[c01] exit code 1\n") and "No module named 'calc'" in elsewhere
    anywhere = await tools.run_in_box("c01", "cd /tmp && PYTHONPATH=/app python -c 'import calc'")
    assert anywhere.startswith("[c01] exit code 0")
    await tools.run_in_box("c01", "echo mine > /tmp/note")
    assert (await tools.run_in_box("c01", "cat /tmp/note")).endswith("\nmine\n")
    assert "No such file" in await tools.run_in_box("c02", "cat /tmp/note")
    assert "not a git repository" in await tools.run_in_box("c01", "git log --oneline -1")
    await tools.pool.close_all()

    tree = tmp_path / "trees" / "with-history"
    tree.mkdir(parents=True)
    (tree / "calc.py").write_text(FIXED)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tree)]
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "the first commit"], check=True)
    checkpoint = await make_local_checkpoint(tree, tmp_path / "checkpoints", name="git.tar.gz")
    data = GroupGradeData(
        group_id="g", candidates=[Candidate(label="c01", reward=1.0, checkpoint=checkpoint)]
    )
    history = GradeToolset(GradeToolsetConfig(box_parent=str(tmp_path / "b2"), prefetch=False))
    await history.setup_task(data)
    logged = await history.run_in_box("c01", "git log --oneline")
    assert logged.startswith("[c01] exit code 0\n") and "the first commit" in logged
    await history.pool.close_all()


@pytest.mark.anyio
async def test_bad_labels_missing_boxes_and_failed_restores_answer_clearly(tmp_path: Path):
    tools = await toolset(tmp_path)
    assert (
        await tools.run_in_box("c09", "ls")
        == "[c09] unknown label; the candidates are c01, c02, c03, c04, c05"
    )
    assert await tools.run_in_box("c01\n" + "x" * 100, "ls") == (
        "[c01\\n" + "x" * 32 + "...] unknown label; the candidates are c01, c02, c03, c04, c05"
    )
    assert (await tools.run_in_box("c04", "ls")).startswith(
        "[c04] error: this candidate has no box"
    )
    failed = await tools.run_in_box("c05", "ls")
    assert failed.startswith("[c05] error: could not use its box:") and "missing.tar.gz" in failed
    await tools.pool.close_all()


@pytest.mark.anyio
async def test_a_failing_call_is_answered_alone_as_text_naming_its_label(tmp_path: Path):
    """Calls of one response run at once; each answer starts with its own label, and a call
    that fails (whatever raised) is answered as text without touching the others."""
    tools = await toolset(tmp_path, max_open_boxes=1)
    answers = await asyncio.gather(
        tools.run_in_box("c01", "cat calc.py"),
        tools.run_in_box("c02", "echo a\0b"),
        tools.run_in_box("c07", "ls"),
        tools.run_in_box("c04", "ls"),
        tools.run_in_box("c05", "ls"),
        tools.run_in_box("c03", "cat calc.py"),
    )
    assert answers[0] == f"[c01] exit code 0\n{FIXED}"
    assert answers[1] == (
        "[c02] error: could not use its box: could not start the command: embedded null byte"
    )
    assert answers[2].startswith("[c07] unknown label")
    assert answers[3].startswith("[c04] error: this candidate has no box")
    assert answers[4].startswith("[c05] error: could not use its box:")
    assert answers[5] == f"[c03] exit code 0\n{BUGGY}"
    await tools.pool.close_all()
    assert open_boxes(tmp_path) == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("box_workdir", "app", "root_alias must be an absolute path"),
        ("box_env", {"FLAG": "a\0b"}, "could not start the command: embedded null byte"),
        ("box_env", {"A=B": "1"}, "illegal environment variable name"),
    ],
)
async def test_row_values_a_box_cannot_use_are_answered_not_raised(
    tmp_path: Path, field: str, value: object, problem: str
):
    tools = await toolset(tmp_path)
    # model_copy does not validate: what the tool gets if a bad value passed the row checks.
    tools.data = tools.data.model_copy(update={field: value})
    answer = await tools.run_in_box("c01", "true")
    assert answer.startswith("[c01] error: ") and problem in answer
    await tools._exit_stack.aclose()
    assert open_boxes(tmp_path) == []


@pytest.mark.anyio
async def test_prefetched_boxes_answer_without_a_restore(tmp_path: Path):
    tools = await toolset(tmp_path, prefetch=True, max_open_boxes=2)
    for _ in range(200):
        if tools.pool.restores == 2:
            break
        await asyncio.sleep(0.05)
    assert sorted(tools.pool.open_labels) == ["c01", "c02"]
    seconds = tools.pool.restore_seconds
    assert "2 passed" in await tools.run_in_box("c01", HIDDEN_TEST_COMMAND)
    assert tools.pool.restores == 2 and tools.pool.restore_seconds == seconds
    await tools._exit_stack.aclose()
    assert open_boxes(tmp_path) == []


@pytest.mark.anyio
async def test_closing_while_prefetching_leaves_no_box(tmp_path: Path):
    tools = await toolset(tmp_path, prefetch=True, max_open_boxes=3)
    await tools._exit_stack.aclose()
    assert open_boxes(tmp_path) == []


@pytest.mark.anyio
async def test_cancellation_mid_command_still_closes_every_box(tmp_path: Path):
    tools = await toolset(tmp_path)
    await tools.run_in_box("c01", "true")
    running = asyncio.ensure_future(tools.run_in_box("c02", "sleep 60"))
    for _ in range(100):
        if len(open_boxes(tmp_path)) == 2:
            break
        await asyncio.sleep(0.05)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    await tools._exit_stack.aclose()
    assert open_boxes(tmp_path) == []


LAUNCHER = """
import pathlib, subprocess, sys, time
out = pathlib.Path(sys.argv[1])
server = subprocess.Popen([sys.executable, "-c", sys.argv[2], sys.argv[1]])
for _ in range(200):  # up to 20 s for the server to start
    if (out / "ready").exists():
        break
    time.sleep(0.1)
print(server.pid)  # and exit at once, leaving the server behind
"""
SERVER = """
import asyncio, contextlib, pathlib, sys
from verifiers.v1.mcp.server import _die_with_parent
from group_grade.toolset import stop_on_signals
out = pathlib.Path(sys.argv[1])
_die_with_parent()  # as verifiers starts every tool server: SIGKILL when the launcher dies

async def main():
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(asyncio.to_thread, (out / "closed").write_text, "boxes")
        stop_on_signals()
        (out / "ready").write_text("")
        await asyncio.sleep(120)

asyncio.run(main())
"""


def test_a_tool_server_whose_launcher_dies_still_closes_its_boxes(tmp_path: Path):
    """verifiers has a tool server die with its launcher by SIGKILL, which no cleanup
    survives; the toolset asks for SIGTERM instead and unwinds its exit stack on it."""
    launched = subprocess.run(
        [sys.executable, "-c", LAUNCHER, str(tmp_path), SERVER],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    pid = int(launched.stdout)
    try:
        for _ in range(200):  # up to 20 s
            if (tmp_path / "closed").exists():
                break
            time.sleep(0.1)
        assert (tmp_path / "closed").read_text() == "boxes"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


async def prime_checkpoint(fake: FakePrimeAPI, calc: str, *, block_tmp: bool = False) -> str:
    """A DURABLE checkpoint of a sandbox holding ``/app/calc.py``; ``block_tmp``: its ``/tmp``
    made a file first (what ``rm -rf /tmp; echo > /tmp`` leaves)."""
    async with AsyncSandboxClient() as client:
        source = await client.create(
            CreateSandboxRequest(name="solver", docker_image="python:3.11")
        )
        await client.wait_for_creation(source.id, max_attempts=10)
        await client.upload_bytes(source.id, "/app/calc.py", calc.encode(), filename="calc.py")
        if block_tmp:
            tmp = fake.sandbox_root(source.id) / "tmp"
            shutil.rmtree(tmp)
            tmp.write_text("blocked\n")
        checkpoint = await make_prime_checkpoint(source.id, client=client, timeout=30)
        await client.delete(source.id)
    return checkpoint


@pytest.mark.anyio
async def test_candidate_shell_over_prime_boxes(tmp_path: Path, fake: FakePrimeAPI):
    """Checkpoint a sandbox holding the fixed project, then let the toolset restore it with
    the unpatched SDK against the fake Prime API and run the hidden tests in it."""
    checkpoint = await prime_checkpoint(fake, FIXED)
    data = GroupGradeData(
        group_id="g",
        box_workdir="/app",
        privileged=HIDDEN_TESTS,
        candidates=[Candidate(label="c01", reward=1.0, passed=True, checkpoint=checkpoint)],
    )
    tools = GradeToolset(GradeToolsetConfig())
    await tools.setup_task(data)
    out = await tools.run_in_box("c01", HIDDEN_TEST_COMMAND)
    assert out.startswith("[c01] exit code 0\n") and "2 passed" in out
    run = HiddenTestRun.model_validate_json(await tools.run_hidden_tests("c01"))
    assert run.status == "passed" and run.counts == JUnitCounts(tests=2, passed=2), run
    where = await tools.run_in_box("c01", 'echo "$GRADE_PRIVILEGED"; touch /app/.grade')
    assert where.split("\n")[1].startswith("/tmp/grade-") and where.endswith("/privileged\n")
    assert tools.pool.restores == 1
    await tools._exit_stack.aclose()
    assert fake.create_requests[-1]["network_allowlist"] == []
    report = await delete_checkpoints([checkpoint])
    assert report.deleted == [checkpoint]


@pytest.mark.anyio
async def test_a_prime_box_that_blocks_the_grading_area_is_reported_not_run(
    tmp_path: Path, fake: FakePrimeAPI
):
    """A candidate owns its prime box: it can make /tmp a file so that no grading area can be
    made. The hidden tests are then `not_run` with that reason, never judged from its own."""
    checkpoint = await prime_checkpoint(fake, BUGGY, block_tmp=True)
    data = GroupGradeData(
        group_id="g",
        box_workdir="/app",
        privileged=HIDDEN_TESTS,
        candidates=[Candidate(label="c01", reward=1.0, passed=True, checkpoint=checkpoint)],
    )
    tools = GradeToolset(GradeToolsetConfig(prefetch=False))
    await tools.setup_task(data)
    run = HiddenTestRun.model_validate_json(await tools.run_hidden_tests("c01"))
    shell = await tools.run_in_box("c01", "ls")
    await tools._exit_stack.aclose()
    assert run.status == "not_run"
    assert "the hidden tests cannot be placed in its box" in run.reason
    assert "cannot make the grading area /tmp/grade-" in run.reason
    assert shell.startswith("[c01] error: could not use its box: the hidden tests cannot be")
    restored = [s for s in fake.sandboxes.values() if s.request.get("checkpoint_id")]
    assert restored and all(s.status == "TERMINATED" for s in restored)


class _Registry:
    def __init__(self) -> None:
        self.tools: dict[str, str] = {}

    def add_tool(self, fn, *, name: str, description: str | None = None) -> None:
        self.tools[name] = description or ""


def test_tool_descriptions_state_the_box_facts_and_this_servers_limits():
    registry = _Registry()
    GradeToolset(GradeToolsetConfig(command_timeout=45, output_cap=3000)).register(registry)
    shell = registry.tools["candidate_shell"]
    for fact in (
        "`sh -c`, which is dash, not bash",
        "`bash -c '...'`",
        "git history only if the snapshot kept `.git`",
        "own `/tmp`; no other box sees either",
        "`python -m pytest`",
        "`PYTHONPATH`",
        "may run 45 s",
        "past 3000 characters",
        "`sed -n`",
    ):
        assert fact in " ".join(shell.split()), fact
    assert "{" + "timeout}" not in "".join(registry.tools.values())
    assert "leave it out in rewards mode" in " ".join(registry.tools["submit_verdict"].split())
