"""Serving fails loudly: ``examples/prime-rl/serve_group_grade.py`` exits non-zero with the
reason, within a bounded time, when the env server or any of its workers stops."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "prime-rl" / "serve_group_grade.py"
EXAMPLE = ROOT / "examples" / "prime-rl" / "group-grade.toml"
NOT_AUTHENTICATED = "not authenticated with prime"
BOUND = 120


def config(tmp_path: Path, *, workers: int = 2, runtime: str | None = None) -> Path:
    """The shipped example, bound to a free loopback port, with ``workers`` workers and
    optionally another runtime type for the grader's box."""
    text = EXAMPLE.read_text()
    text = text.replace('address = "tcp://0.0.0.0:5100"', 'address = "tcp://127.0.0.1:*"')
    text = text.replace("num_workers = 2", f"num_workers = {workers}")
    if runtime is not None:
        text = re.sub(
            r'\[env\.agent\.runtime\]\ntype = "prime"\nimage = "[^"]*"\ncpu = [0-9.]+\n'
            r"memory = [0-9.]+\n",
            f'[env.agent.runtime]\ntype = "{runtime}"\n',
            text,
        )
        assert f'type = "{runtime}"' in text
    path = tmp_path / "serve.toml"
    path.write_text(text)
    return path


def environment(home: Path) -> dict[str, str]:
    """No Prime credentials anywhere: a fresh HOME, no PRIME_* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIME_")}
    env["HOME"] = str(home)
    return env


def serve(path: Path, home: Path) -> tuple[int, str, float]:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(path)],
        capture_output=True,
        text=True,
        timeout=BOUND + 60,
        cwd=ROOT,
        env=environment(home),
    )
    return done.returncode, done.stderr, time.monotonic() - start


@pytest.mark.parametrize("workers", [2, 1])
def test_a_runtime_that_cannot_start_stops_the_server_with_its_reason(
    tmp_path: Path, home: Path, workers: int
) -> None:
    code, err, seconds = serve(config(tmp_path, workers=workers), home)
    assert code == 1, err[-3000:]
    assert seconds < BOUND
    last = err.strip().splitlines()[-2:]
    who = r"env worker [01] \(pid \d+\) stopped: " if workers > 1 else "the env server stopped: "
    assert re.match(f"serve_group_grade.py: stopped serving: {who}", last[0]), last
    assert NOT_AUTHENTICATED in last[0], last
    assert "the grader's runtime is 'prime'" in last[1]
    assert "JUDGE_API_KEY ([env.agent.client] api_key_var) is not set" in err


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_a_worker_that_dies_later_stops_the_server_too(tmp_path: Path, home: Path) -> None:
    path = config(tmp_path, runtime="subprocess")
    server = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env=environment(home),
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + BOUND
        assert server.stdout is not None
        while sum("EnvServer up" in line for line in lines) < 2:
            assert time.monotonic() < deadline, "".join(lines)
            line = server.stdout.readline()
            assert line, "".join(lines)
            lines.append(line)
        workers = [p for p in _children(server.pid) if "spawn_main" in _cmdline(p)]
        assert len(workers) == 2, [_cmdline(p) for p in _children(server.pid)]
        os.kill(workers[1], signal.SIGKILL)
        rest, _ = server.communicate(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    output = "".join(lines) + rest
    assert server.returncode == 1, output[-3000:]
    assert f"stopped serving: env worker 1 (pid {workers[1]}) stopped: exit code -9" in output
