"""Running the real group-grade env (run_eval, EnvServer) against a scripted model."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import verifiers.v1 as vf
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.configs.cli.eval import EvalConfig

from group_grade import scoring
from group_grade.acceptance import accept_verdict
from group_grade.advantages import GarKnobs
from group_grade.chat_server import ChatServer, Reply
from group_grade.data import GroupGradeData
from group_grade.grade_record import GradeRecord
from group_grade.reference import ReferenceGrader
from tests.traces import Turn, make_trace

KEY_VAR = "GG_SCRIPTED_KEY"


def shell(command: str) -> Reply:
    return Reply(tool_calls=[("shell", {"command": command})])


def submit(verdict: dict[str, Any]) -> Reply:
    return Reply(tool_calls=[("submit_verdict", verdict)])


def env_config(
    rows: Path,
    *,
    harness: str | None = None,
    agent_timeout: float = 120,
    task: dict[str, Any] | None = None,
    **agent: Any,
) -> dict[str, Any]:
    """``task``: the task config (``--env.taskset.task.*``), e.g. ``{"tools": {...}}``."""
    return {
        "taskset": {"id": "group-grade", "source": str(rows), **({"task": task} if task else {})},
        "agent": {
            "runtime": {"type": "subprocess"},
            "max_turns": 12,
            "timeout": {"rollout": agent_timeout, "scoring": 60},
            **({"harness": {"id": harness}} if harness else {}),
            **agent,
        },
    }


def write_rows(path: Path, *rows: GroupGradeData) -> Path:
    path.write_text("".join(row.model_dump_json() + "\n" for row in rows))
    return path


async def grade(
    server: ChatServer, rows: Path, out: Path, *, limit: float = 240, **config: Any
) -> vf.Episode:
    eval_config = EvalConfig(
        env=env_config(rows, **config),
        model="scripted-model",
        client={"type": "eval", "base_url": server.base_url, "api_key_var": KEY_VAR},
        num_rollouts=1,
        push=False,
        rich=None,
        output_dir=out,
        run={"dir": "e2e"},
    )
    with anyio.fail_after(limit):
        (episode,) = await run_eval(eval_config)
    return episode


async def grade_with_reference(
    rows: Path, out: Path, *, max_concurrent: int = 2, limit: float = 600
) -> tuple[dict[str, vf.Trace], ChatServer]:
    """Grade every row of ``rows`` with the reference grader through ``run_eval`` (the demo's
    path): each group's grade trace by group id, and the server (its requests)."""
    async with ChatServer(ReferenceGrader(), model="reference") as server:
        config = EvalConfig(
            env=env_config(rows),
            model="reference",
            client={"type": "eval", "base_url": server.base_url, "api_key_var": KEY_VAR},
            num_rollouts=1,
            max_concurrent=max_concurrent,
            push=False,
            rich=None,
            output_dir=out,
        )
        with anyio.fail_after(limit):
            episodes = await run_eval(config)
    return {e.traces[0].info["group_id"]: e.traces[0] for e in episodes}, server


def vf_eval(base_url: str, model: str, out: Path, *flags: str, timeout: float = 600) -> list[dict]:
    """Run the `vf-eval` command line as the README documents it (subprocess grader box, no
    push) and return the episodes it wrote."""
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "vf-eval"),
            "group-grade",
            *("-m", model, "--client.base-url", base_url, "--client.api-key-var", KEY_VAR),
            *("--env.agent.runtime.type", "subprocess", "--no-push", "--no-rich"),
            *("-o", str(out), *flags),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=out.parent,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (traces_file,) = out.rglob("traces.jsonl")
    return [json.loads(line) for line in traces_file.read_text().splitlines()]


def graded(
    data: GroupGradeData,
    raw: dict | None,
    *,
    grader_turns: Sequence[Turn] = (),
    **scores: float,
) -> vf.Trace:
    """A grade trace as the task leaves it: the accepted verdict (or a ``timeout``
    fallback), the GAR records, any ``agreement*`` scores (``agreement`` itself as the
    reward) and, with ``grader_turns``, the grader's own messages."""
    task = vf.TraceTask(type="GroupGradeTask", data=data, key=data.group_id, hash="h")
    if grader_turns:
        trace = make_trace(grader_turns)
        trace.task = task
    else:
        trace = vf.Trace(agent=vf.AgentInfo(config=vf.AgentConfig()), task=task, ok=True)
    outcome = accept_verdict(data, raw)
    record = GradeRecord(group_id=data.group_id, trace_ids=data.trace_ids)
    if outcome.verdict is None:
        record.fallback_reason = "timeout"
    else:
        record.verdict, record.citations = outcome.verdict, outcome.citations
    record = record.mapped(data, GarKnobs())
    record.write(trace)
    trace.record_metrics(scoring.gar_metrics(data, record))
    for name, score in scores.items():
        if name == "agreement":
            trace.record_reward(name, score)
        else:
            trace.metrics[name] = score
    return trace
