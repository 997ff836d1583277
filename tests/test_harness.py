from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import verifiers.v1 as vf
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.configs.cli.eval import EvalConfig
from verifiers.v1.errors import MODEL_TRANSPORT_ERROR_EXIT_CODE
from verifiers.v1.runtimes import provision_runtime
from verifiers.v1.types import ToolMessage
from verifiers.v1.utils.loaders import default_harness_id, harness_config_type

from group_grade.chat_server import ChatServer, Reply
from group_grade.harness import GraderHarness, GraderHarnessConfig
from tests.scripted_model import ScriptedModel, last_tool_result, offered_tools, tool_results

PROBE_MODULE = "gg_harness_probe"
PROBE_SOURCE = '''
import verifiers.v1 as vf

from group_grade.harness import GraderHarness


class EchoToolset(vf.Toolset[vf.ToolsetConfig]):
    TOOL_PREFIX = None

    @vf.tool
    def echo(self, text: str) -> str:
        """Return the text, prefixed."""
        return f"echoed: {text}"


class ProbeTaskConfig(vf.TaskConfig):
    tools: vf.ToolsetConfig = vf.ToolsetConfig()


class ProbeTask(vf.Task[vf.TaskData, vf.State, ProbeTaskConfig]):
    @classmethod
    def toolsets(cls, config: ProbeTaskConfig) -> list[vf.Toolset]:
        return [EchoToolset(config.tools)]

    @vf.reward
    async def answered(self, trace: vf.Trace) -> float:
        return float(trace.last_reply == "all done")


class ProbeConfig(vf.TasksetConfig):
    task: ProbeTaskConfig = ProbeTaskConfig()


class ProbeTaskset(vf.Taskset[ProbeTask, ProbeConfig]):
    def load(self) -> list[ProbeTask]:
        data = vf.TaskData(prompt="Make f.txt, then echo.", system_prompt="You are a probe.")
        return [ProbeTask(data, self.config.task)]


__all__ = ["GraderHarness", "ProbeTaskset"]

if __name__ == "__main__":
    EchoToolset.run()
'''


@pytest.fixture
async def box(boxes: Path) -> AsyncIterator[vf.Runtime]:
    async with provision_runtime(vf.SubprocessConfig()) as runtime:
        yield runtime


@pytest.fixture
def probe_taskset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A tiny taskset module exporting one Taskset and GraderHarness, importable here and by
    the `python -m` tool-server subprocess. Returns its taskset id."""
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / f"{PROBE_MODULE}.py").write_text(textwrap.dedent(PROBE_SOURCE))
    monkeypatch.syspath_prepend(str(modules))
    pythonpath = [str(modules), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(pythonpath))
    monkeypatch.delitem(sys.modules, PROBE_MODULE, raising=False)
    return PROBE_MODULE.replace("_", "-")


def make_trace() -> vf.Trace:
    return vf.Trace(
        agent=vf.AgentInfo(config=vf.AgentConfig()),
        task=vf.TraceTask(type="Task", data=vf.TaskData()),
    )


async def launch(
    harness: GraderHarness,
    runtime: vf.Runtime,
    endpoint: str,
    data: vf.TaskData,
    trace: vf.Trace | None = None,
) -> vf.ProgramResult:
    """Drive the loop straight against a server (no interception, no tool servers)."""
    context = vf.ModelContext(model="scripted-model", client=vf.EvalClientConfig())
    with anyio.fail_after(60):
        return await harness.launch(
            context, trace or make_trace(), runtime, endpoint, "secret", {}, data
        )


def shell(command: str) -> Reply:
    return Reply(tool_calls=[("shell", {"command": command})])


def test_config_and_flags() -> None:
    config = GraderHarnessConfig()
    assert config.id == "group-grade"
    assert config.max_turns is None
    assert GraderHarness.SUPPORTS_MCP and GraderHarness.APPENDS_SYSTEM_PROMPT
    assert GraderHarness.EXECUTES_CODE and not GraderHarness.NEEDS_CONTAINER
    with pytest.raises(ValueError):
        GraderHarnessConfig(shell_timeout=0)


CUT = re.compile(
    r"\[\.\.\. (\d+) characters cut: lines (\d+)-(\d+) of (\d+); .*`sed -n '(\d+),(\d+)p'`"
)


@pytest.mark.anyio
async def test_a_cut_output_says_which_lines_and_its_sed_command_shows_them(box: vf.Runtime):
    harness = GraderHarness(GraderHarnessConfig(shell_output_cap=1000))
    command = "seq 1 5000"
    shown = await harness.shell(box, command)
    cut = CUT.search(shown)
    assert cut is not None, shown
    chars, first, last, total = (int(cut.group(i)) for i in range(1, 5))
    assert (first, last) == (int(cut.group(5)), int(cut.group(6))) and total == 5000
    full = "".join(f"{i}\n" for i in range(1, 5001))
    assert chars == len(full) - 1000
    wide = GraderHarness(GraderHarnessConfig(shell_output_cap=100_000))
    rest = await wide.shell(box, f"{command} | sed -n '{first},{last}p'")
    head, tail = shown.split("\n[... ", 1)[0], shown.rsplit("...]\n", 1)[1]
    # The lines it names hold all that was cut, and no line before or after it.
    assert full[len(head) : len(full) - len(tail)] in rest
    assert rest == "".join(f"{i}\n" for i in range(first, last + 1))
    assert full.startswith(head) and full.endswith(tail)


@pytest.mark.anyio
async def test_shell_results_and_tool_errors_reach_the_model(box: vf.Runtime) -> None:
    script = ScriptedModel(
        [
            shell("printf 'out\\n'; printf 'err\\n' >&2; exit 3"),
            shell("head -c 5000 /dev/zero | tr '\\0' x; echo END"),
            shell("sleep 5"),
            Reply(tool_calls=[("nope", {}), ("shell", "{not json"), ("shell", "[1]")]),
            Reply(tool_calls=[("shell", {"command": ""})]),
            Reply("finished"),
        ]
    )
    harness = GraderHarness(GraderHarnessConfig(shell_timeout=1, shell_output_cap=200))
    data = vf.TaskData(prompt="go", system_prompt="be brief")
    async with ChatServer(script) as server:
        result = await launch(harness, box, server.base_url, data)
    assert result == vf.ProgramResult(0, "", "")
    first, *_, last = server.requests
    assert first["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "go"},
    ]
    assert offered_tools(first) == ["shell"]
    assert first["stream"] is True
    results = tool_results(last)
    assert results[0] == "out\nerr\n\n[exit code 3]"
    assert results[1].startswith("x" * 100) and results[1].endswith("x" * 96 + "END\n")
    assert "characters cut" in results[1] and len(results[1]) < 500
    assert "timed out after 1 seconds" in results[2]
    assert results[3].startswith("error: unknown tool 'nope'")
    assert "invalid JSON" in results[4]
    assert "must be a JSON object, got list" in results[5]
    assert "non-empty string" in results[6]


@pytest.mark.anyio
@pytest.mark.parametrize("parallel", [True, False])
async def test_calls_of_one_response_run_at_once_unless_configured(
    box: vf.Runtime, parallel: bool
) -> None:
    """Results keep the calls' order either way; the log shows which call finished first."""
    both = Reply(
        tool_calls=[
            ("shell", {"command": "sleep 1; echo slow >> log; echo first"}),
            ("shell", {"command": "echo fast >> log; echo second"}),
        ]
    )
    script = ScriptedModel([both, shell("cat log"), Reply("done")])
    harness = GraderHarness(GraderHarnessConfig(parallel_tool_calls=parallel))
    async with ChatServer(script) as server:
        await launch(harness, box, server.base_url, vf.TaskData(prompt="go"))
    first, second, log = tool_results(server.requests[-1])
    assert (first, second) == ("first\n", "second\n")
    assert log == ("fast\nslow\n" if parallel else "slow\nfast\n")


@pytest.mark.anyio
async def test_own_max_turns_stops_the_trace(box: vf.Runtime) -> None:
    harness = GraderHarness(GraderHarnessConfig(max_turns=2))
    trace = make_trace()
    async with ChatServer(lambda body: shell("echo again")) as server:
        result = await launch(harness, box, server.base_url, vf.TaskData(prompt="loop"), trace)
    assert result.exit_code == 0
    assert trace.stop_condition == "max_turns"
    assert len(server.requests) == 2
    assert last_tool_result(server.requests[-1]) == "again\n"


@pytest.mark.anyio
async def test_messages_prompt_and_disabled_tools(box: vf.Runtime) -> None:
    harness = GraderHarness(GraderHarnessConfig(disabled_tools=["shell"]))
    data = vf.TaskData(
        prompt=[vf.UserMessage(content="one"), vf.AssistantMessage(content="two")],
    )
    script = ScriptedModel([shell("echo hi"), shell("echo hi"), Reply("ok")])
    async with ChatServer(script) as server:
        result = await launch(harness, box, server.base_url, data)
    # The prompt already holds one assistant turn, so the script starts at its second step.
    assert result.exit_code == 0
    assert offered_tools(server.requests[0]) == []
    assert [m["content"] for m in server.requests[0]["messages"]] == ["one", "two"]
    assert last_tool_result(server.requests[-1]).startswith("error: unknown tool 'shell'")


@pytest.mark.anyio
async def test_model_errors_become_exit_codes(box: vf.Runtime) -> None:
    harness = GraderHarness(GraderHarnessConfig())
    data = vf.TaskData(prompt="x")
    async with ChatServer(ScriptedModel([])) as server:
        failed = await launch(harness, box, server.base_url, data)
        port = server.port
    assert failed.exit_code == 1
    assert "script has 0 steps" in failed.stderr
    unreachable = await launch(harness, box, f"http://127.0.0.1:{port}/v1", data)
    assert unreachable.exit_code == MODEL_TRANSPORT_ERROR_EXIT_CODE
    assert "connection failed" in unreachable.stderr


async def run_probe(
    server: ChatServer, taskset_id: str, output_dir: Path, max_turns: int
) -> vf.Trace:
    """One `run_eval` rollout of the probe taskset (default harness) against `server`."""
    config = EvalConfig(
        env={
            "taskset": {"id": taskset_id},
            "agent": {
                "runtime": {"type": "subprocess"},
                "max_turns": max_turns,
                "timeout": {"rollout": 120, "scoring": 60},
            },
        },
        model="scripted-model",
        client={"type": "eval", "base_url": server.base_url, "api_key_var": "GG_SCRIPTED_KEY"},
        num_rollouts=1,
        push=False,
        rich=None,
        output_dir=output_dir,
        run={"dir": "e2e"},
    )
    with anyio.fail_after(240):
        (episode,) = await run_eval(config)
    assert episode.ok, episode.errors
    (trace,) = episode.traces
    assert trace.ok and not trace.errors, trace.errors
    return trace


@pytest.mark.anyio
async def test_run_eval_end_to_end(
    boxes: Path, probe_taskset: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert default_harness_id(probe_taskset) == probe_taskset  # exported => default harness
    assert harness_config_type(probe_taskset) is GraderHarnessConfig
    monkeypatch.setenv("GG_SCRIPTED_KEY", "unused")

    def echo_back(body: dict[str, Any]) -> Reply:
        return Reply(tool_calls=[("echo", {"text": last_tool_result(body) or ""})])

    script = ScriptedModel([shell("echo hi > f.txt && cat f.txt"), echo_back, Reply("all done")])
    async with ChatServer(script) as server:
        trace = await run_probe(server, probe_taskset, tmp_path / "out", max_turns=6)

    assert trace.stop_condition == "agent_completed"
    assert trace.agent.config.harness is not None
    assert trace.agent.config.harness.id == probe_taskset
    assert trace.last_reply == "all done"
    assert trace.rewards["answered"].score == 1.0
    assert trace.num_turns == 3
    tool_messages = [m for m in trace.messages if isinstance(m, ToolMessage)]
    assert [m.content for m in tool_messages] == ["hi\n", "echoed: hi\n"]
    assert [m.name for m in tool_messages] == ["shell", "echo"]

    assert len(server.requests) == 3
    for request in server.requests:
        assert sorted(offered_tools(request)) == ["echo", "shell"]
    assert server.requests[0]["messages"][0] == {"role": "system", "content": "You are a probe."}
    echo_call = server.requests[2]["messages"][-2]["tool_calls"][0]["function"]
    assert json.loads(echo_call["arguments"]) == {"text": "hi\n"}


@pytest.mark.anyio
async def test_run_eval_agent_max_turns_is_a_clean_stop(
    boxes: Path, probe_taskset: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's `max_turns` reaches the loop as a refused model call, not a failure."""
    monkeypatch.setenv("GG_SCRIPTED_KEY", "unused")
    async with ChatServer(lambda body: shell("echo again")) as server:
        trace = await run_probe(server, probe_taskset, tmp_path / "out", max_turns=2)
    assert trace.stop_condition == "max_turns"
    assert trace.is_truncated
    assert trace.num_turns == 2
    assert len(server.requests) == 2
