"""Running the real group-grade env (run_eval, EnvServer) against a scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import verifiers.v1 as vf
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.configs.cli.eval import EvalConfig

from group_grade.chat_server import ChatServer, Reply
from group_grade.data import GroupGradeData

KEY_VAR = "GG_SCRIPTED_KEY"


def shell(command: str) -> Reply:
    return Reply(tool_calls=[("shell", {"command": command})])


def submit(verdict: dict[str, Any]) -> Reply:
    return Reply(tool_calls=[("submit_verdict", verdict)])


def env_config(
    rows: Path, *, harness: str | None = None, agent_timeout: float = 120, **agent: Any
) -> dict[str, Any]:
    return {
        "taskset": {"id": "group-grade", "source": str(rows)},
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
