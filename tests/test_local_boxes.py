"""Local candidate boxes: real archives, real directories, real subprocesses (tmp_path only)."""

from __future__ import annotations

import asyncio
import errno
import io
import logging
import os
import shutil
import signal
import socket
import sys
import tarfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from verifiers.v1.runtimes.base import ProgramResult, Runtime
from verifiers.v1.runtimes.subprocess import SubprocessConfig, SubprocessRuntime

from group_grade.boxes import local, sandbox
from group_grade.boxes.base import BoxError
from group_grade.boxes.local import (
    LocalBackend,
    LocalBox,
    make_local_checkpoint,
    make_local_checkpoint_from_runtime,
)
from group_grade.transcript import cut_output

BUGGY = "def add(a: int, b: int) -> int:\n    return a - b\n"
FIXED = "def add(a: int, b: int) -> int:\n    return a + b\n"
HIDDEN_TEST = "from calc.ops import add\n\n\ndef test_add() -> None:\n    assert add(2, 3) == 5\n"
PYTHON_ENV = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"}


def make_project(root: Path, ops: str) -> Path:
    """A tiny Python project with a git dir and byte-code junk that snapshots leave out."""
    (root / "calc" / "__pycache__").mkdir(parents=True)
    (root / "calc" / "__init__.py").write_text("")
    (root / "calc" / "ops.py").write_text(ops)
    (root / "calc" / "__pycache__" / "ops.cpython-311.pyc").write_bytes(b"\x00junk")
    (root / "stray.pyc").write_bytes(b"\x00junk")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    (root / "run.sh").chmod(0o755)
    return root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "project", BUGGY)


@pytest.fixture
def backend(tmp_path: Path) -> LocalBackend:
    return LocalBackend(box_parent=tmp_path / "boxes", max_output_bytes=1024 * 1024)


@pytest.fixture
async def box(backend: LocalBackend, project: Path, tmp_path: Path) -> AsyncIterator[LocalBox]:
    checkpoint = await make_local_checkpoint(project, tmp_path / "ckpt")
    restored = await backend.restore(checkpoint)
    try:
        yield restored
    finally:
        await restored.close()


def archive_path(checkpoint: str) -> Path:
    assert checkpoint.startswith("local:/")
    return Path(checkpoint.removeprefix("local:"))


def sleeper() -> str:
    """A ``sleep`` argument no other process on this machine has: it names the process."""
    return f"{uuid.uuid4().int % 10**7 + 1000}.5"


def host_pids(token: str) -> list[int]:
    """Live host processes running ``sleep token`` (zombies excluded)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes() != f"sleep\0{token}\0".encode():
                continue
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X"):
            found.append(int(pid))
    return found


def gone(token: str, within: float = 5.0) -> bool:
    """Whether every ``sleep token`` process has exited within ``within`` seconds."""
    deadline = time.monotonic() + within
    while host_pids(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


async def wait_started(token: str) -> None:
    deadline = time.monotonic() + 10
    while not host_pids(token):
        assert time.monotonic() < deadline, f"sleep {token} never started"
        await asyncio.sleep(0.05)


# --- snapshots -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_checkpoint_is_deterministic_and_excludes_junk(project: Path, tmp_path: Path) -> None:
    with anyio.fail_after(60):
        first = await make_local_checkpoint(project, tmp_path / "ckpt", name="a")
        second = await make_local_checkpoint(project, tmp_path / "ckpt", name="b.tar.gz")
        for path in project.rglob("*"):
            os.utime(path, (1_000_000, 1_000_000), follow_symlinks=False)
        third = await make_local_checkpoint(project, tmp_path / "ckpt", name="c.tgz")
    paths = [archive_path(c) for c in (first, second, third)]
    assert [p.name for p in paths] == ["a.tar.gz", "b.tar.gz", "c.tgz"]
    assert all(p.is_absolute() and p.parent == (tmp_path / "ckpt").resolve() for p in paths)
    assert paths[0].read_bytes() == paths[1].read_bytes() == paths[2].read_bytes()
    with tarfile.open(paths[0]) as archive:
        members = {m.name: m for m in archive.getmembers()}
    assert sorted(members) == [
        ".git",
        ".git/HEAD",
        "calc",
        "calc/__init__.py",
        "calc/ops.py",
        "run.sh",
    ]
    assert all(m.mtime == 0 and m.uid == 0 and m.uname == "" for m in members.values())
    assert members["run.sh"].mode & 0o111
    # the default name is unique, so two snapshots never share an archive
    default = archive_path(await make_local_checkpoint(project, tmp_path / "ckpt"))
    assert default.name.startswith("checkpoint-") and default.name.endswith(".tar.gz")


@pytest.mark.anyio
async def test_checkpoint_into_its_own_tree_skips_itself(project: Path) -> None:
    with anyio.fail_after(60):
        checkpoint = await make_local_checkpoint(project, project / ".snapshots", name="self")
    with tarfile.open(archive_path(checkpoint)) as archive:
        assert not any(name.startswith(".snapshots") for name in archive.getnames())


@pytest.mark.anyio
async def test_checkpoint_rejects_bad_input(project: Path, tmp_path: Path) -> None:
    with pytest.raises(BoxError, match="not a directory"):
        await make_local_checkpoint(tmp_path / "missing", tmp_path / "ckpt")
    with pytest.raises(ValueError, match="plain file name"):
        await make_local_checkpoint(project, tmp_path / "ckpt", name="../escape")


# --- restore and run -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_hidden_tests_pass_in_fixed_box_and_fail_in_buggy_box(
    backend: LocalBackend, project: Path, tmp_path: Path
) -> None:
    fixed_project = make_project(tmp_path / "fixed", FIXED)
    with anyio.fail_after(240):
        buggy = await backend.restore(await make_local_checkpoint(project, tmp_path / "ckpt"))
        fixed = await backend.restore(await make_local_checkpoint(fixed_project, tmp_path / "ck"))
        try:
            results = {}
            for label, box in (("buggy", buggy), ("fixed", fixed)):
                await box.write("/app/hidden/test_calc.py", HIDDEN_TEST.encode())
                results[label] = await box.run(
                    "python -m pytest -q -p no:cacheprovider hidden",
                    timeout=120,
                    env=PYTHON_ENV,
                )
        finally:
            await buggy.close()
            await fixed.close()
    assert not results["fixed"].timed_out
    assert results["fixed"].exit_code == 0, results["fixed"].output
    assert "1 passed" in results["fixed"].output
    assert results["buggy"].exit_code == 1, results["buggy"].output
    assert "1 failed" in results["buggy"].output
    assert "assert -1 == 5" in results["buggy"].output


@pytest.mark.anyio
async def test_restored_box_is_private_copy_with_modes(box: LocalBox, project: Path) -> None:
    workdir = box.host_dir
    assert box.home.name.startswith("gg-box-") and box.workdir == "/app"
    assert (workdir.stat().st_mode & 0o777) == 0o700
    assert (workdir / "calc" / "ops.py").read_text() == BUGGY
    assert (workdir / ".git" / "HEAD").is_file()
    assert not (workdir / "calc" / "__pycache__").exists()
    with anyio.fail_after(30):
        result = await box.run("./run.sh; exit 3", timeout=20)
    assert result.exit_code == 3
    assert result.output == "run\n"


@pytest.mark.anyio
async def test_changes_persist_between_runs(box: LocalBox) -> None:
    with anyio.fail_after(30):
        await box.run("echo one > state.txt", timeout=10)
        result = await box.run("cat state.txt && echo two >> state.txt", timeout=10)
        assert result.output == "one\n"
        assert await box.read("state.txt") == b"one\ntwo\n"
        assert await box.read("/app/state.txt") == b"one\ntwo\n"


@pytest.mark.anyio
async def test_boxes_from_one_checkpoint_are_independent(
    backend: LocalBackend, project: Path, tmp_path: Path
) -> None:
    with anyio.fail_after(60):
        checkpoint = await make_local_checkpoint(project, tmp_path / "ckpt")
        first = await backend.restore(checkpoint)
        second = await backend.restore(checkpoint)
        try:
            assert first.host_dir != second.host_dir
            await first.write("calc/ops.py", b"changed\n")
            await first.run("rm run.sh", timeout=10)
            assert await second.read("calc/ops.py") == BUGGY.encode()
            assert (await second.run("test -f run.sh", timeout=10)).exit_code == 0
            assert (project / "calc" / "ops.py").read_text() == BUGGY
        finally:
            await first.close()
            await second.close()


@pytest.mark.anyio
async def test_directory_checkpoint_restores_a_copy(backend: LocalBackend, project: Path) -> None:
    with anyio.fail_after(60):
        box = await backend.restore(f"local:{project}")
        try:
            assert await box.read("calc/ops.py") == BUGGY.encode()
            await box.write("calc/ops.py", FIXED.encode())
            assert (project / "calc" / "ops.py").read_text() == BUGGY
            assert (box.host_dir.stat().st_mode & 0o777) == 0o700
        finally:
            await box.close()


@pytest.mark.anyio
async def test_output_is_merged_and_environment_is_clean(
    box: LocalBox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GG_TEST_SECRET_TOKEN", "s3cret")
    with anyio.fail_after(30):
        merged = await box.run("echo out; echo err >&2; echo out2", timeout=10)
        env = await box.run("env", timeout=10, env={"GIVEN": "yes"})
        invalid = await box.run("printf '\\377ok'", timeout=10)
    assert merged.output == "out\nerr\nout2\n"
    lines = set(env.output.splitlines())
    assert "HOME=/app" in lines and f"GRADE_PRIVILEGED={box.privileged_dir}" in lines
    assert "GIVEN=yes" in lines
    assert "PYTHONDONTWRITEBYTECODE=1" in lines
    assert "s3cret" not in env.output
    assert invalid.output == "\ufffdok"


@pytest.mark.anyio
async def test_workdir_mapping(box: LocalBox) -> None:
    (box.host_dir / "calc" / "sub").mkdir()
    with anyio.fail_after(30):
        for workdir in ("/app/calc/sub", "calc/sub", "/app/calc/../calc/sub"):
            result = await box.run("pwd", timeout=10, workdir=workdir)
            assert result.output == "/app/calc/sub\n"
        assert (await box.run("pwd", timeout=10, workdir="/app")).output == "/app\n"
        for bad in ("/etc", "/application", "..", "/app/../etc"):
            with pytest.raises(BoxError, match="outside the box"):
                await box.run("pwd", timeout=10, workdir=bad)
        with pytest.raises(BoxError, match="not a directory"):
            await box.run("pwd", timeout=10, workdir="missing")


@pytest.mark.anyio
async def test_root_alias_is_configurable(project: Path, tmp_path: Path) -> None:
    backend = LocalBackend(box_parent=tmp_path / "boxes", root_alias="/testbed")
    with anyio.fail_after(60):
        box = await backend.restore(f"local:{project}")
        try:
            assert await box.read("/testbed/calc/ops.py") == BUGGY.encode()
            assert (await box.run("pwd; cat calc/ops.py", timeout=10)).output.startswith(
                "/testbed\ndef add"
            )
            with pytest.raises(BoxError, match="must be under /testbed"):
                await box.read("/app/calc/ops.py")
        finally:
            await box.close()


@pytest.mark.anyio
async def test_path_escapes_raise(box: LocalBox, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("host file")
    (box.host_dir / "link").symlink_to(tmp_path)
    with anyio.fail_after(30):
        for path in ("../outside.txt", "/etc/passwd", "/app/../outside.txt", "link/outside.txt"):
            with pytest.raises(BoxError, match="outside the box"):
                await box.read(path)
            with pytest.raises(BoxError, match="outside the box"):
                await box.write(path, b"x")
        with pytest.raises(BoxError, match="cannot read"):
            await box.read("missing.txt")
        (box.host_dir / "loop").symlink_to("loop")
        with pytest.raises(BoxError, match="loop"):
            await box.read("loop")
    assert outside.read_text() == "host file"


# --- isolation and limits --------------------------------------------------------------------

CONNECT = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5).close()
except OSError as exc:
    print("BLOCKED", exc.errno)
else:
    print("CONNECTED")
"""


@pytest.mark.anyio
async def test_commands_cannot_reach_the_network(box: LocalBox) -> None:
    assert box.isolated
    await box.write("connect.py", CONNECT.encode())
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        socket.create_connection(("127.0.0.1", port), timeout=5).close()  # reachable from here
        with anyio.fail_after(60):
            local_result = await box.run(
                f"{sys.executable} connect.py 127.0.0.1 {port}", timeout=30
            )
            remote = await box.run(f"{sys.executable} connect.py 1.1.1.1 53", timeout=30)
    refused_or_unreachable = {f"BLOCKED {errno.ECONNREFUSED}", f"BLOCKED {errno.ENETUNREACH}"}
    assert local_result.output.strip() in refused_or_unreachable, local_result.output
    assert remote.output.strip() in refused_or_unreachable, remote.output


@pytest.mark.anyio
async def test_timeout_kills_every_process_and_keeps_partial_output(box: LocalBox) -> None:
    token = sleeper()
    began = time.monotonic()
    with anyio.fail_after(30):
        result = await box.run(f"sleep {token} & sleep 0.2; echo started; sleep 30", timeout=1)
    assert time.monotonic() - began < 10
    assert result.timed_out
    assert result.exit_code == local.TIMEOUT_EXIT_CODE
    assert result.output == "started\n"
    assert gone(token)


@pytest.mark.anyio
async def test_runs_do_not_block_each_other(box: LocalBox) -> None:
    started = time.monotonic()
    with anyio.fail_after(30):
        results = await asyncio.gather(*(box.run("sleep 1; echo ok", timeout=20) for _ in range(3)))
    assert time.monotonic() - started < 2.8
    assert [r.output for r in results] == ["ok\n"] * 3


@pytest.mark.anyio
async def test_leftover_background_process_does_not_hang_run(box: LocalBox) -> None:
    started = time.monotonic()
    with anyio.fail_after(30):
        result = await box.run("sleep 300 & echo done", timeout=20)
    assert time.monotonic() - started < 10
    assert not result.timed_out
    assert result.exit_code == 0
    assert result.output == "done\n"


@pytest.mark.anyio
async def test_huge_output_is_capped_without_hanging(box: LocalBox) -> None:
    started = time.monotonic()
    with anyio.fail_after(60):
        result = await box.run(
            "echo BEGIN; head -c 50000000 /dev/zero | tr '\\0' x; echo; echo END", timeout=50
        )
    assert time.monotonic() - started < 50
    assert not result.timed_out
    assert result.exit_code == 0
    assert len(result.output) < 1024 * 1024 + 200
    assert result.output.startswith("BEGIN\nxxx")
    assert result.output.endswith("xxx\nEND\n")
    assert "bytes of output dropped" in result.output
    assert result.dropped == 50_000_000 + len("BEGIN\n\nEND\n") - (1024 * 1024)
    # The grader is then told no line numbers past the head: they are unknown.
    shown = cut_output(result.output, 1000, lines_known=not result.dropped)
    assert "characters cut: the box kept only the head and tail" in shown
    assert "lines " not in shown
    small = await box.run("echo hi", timeout=10)
    assert small.dropped == 0


@pytest.mark.anyio
async def test_close_kills_processes_removes_directory_and_is_idempotent(box: LocalBox) -> None:
    token = sleeper()
    with anyio.fail_after(30):
        running = asyncio.ensure_future(box.run(f"sleep {token}", timeout=60))
        await wait_started(token)
        home = box.home
        await box.close()
        assert not home.exists()
        assert gone(token)
        await asyncio.gather(running, return_exceptions=True)
        await box.close()
        with pytest.raises(BoxError, match="closed"):
            await box.run("true", timeout=5)
        with pytest.raises(BoxError, match="closed"):
            await box.read("calc/ops.py")


@pytest.mark.anyio
async def test_a_killed_launcher_takes_the_whole_command_with_it(box: LocalBox) -> None:
    """What happens when the tool server dies mid-command: its launcher (bwrap) is killed,
    and with it the box's PID namespace and every process in it."""
    token = sleeper()
    with anyio.fail_after(30):
        command = f"(setsid sleep {token} &); sleep {token}"
        running = asyncio.ensure_future(box.run(command, timeout=60))
        await wait_started(token)
        while len(host_pids(token)) < 2:
            await asyncio.sleep(0.05)
        (launcher,) = box._groups
        os.kill(launcher, signal.SIGKILL)
        assert gone(token)
        await asyncio.gather(running, return_exceptions=True)


@pytest.mark.anyio
async def test_cancelled_run_kills_the_command(box: LocalBox) -> None:
    token = sleeper()
    with anyio.fail_after(30):
        task = asyncio.ensure_future(box.run(f"sleep {token}", timeout=60))
        await wait_started(token)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert gone(token)


# --- restore errors --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_restore_errors(backend: LocalBackend, tmp_path: Path) -> None:
    missing = tmp_path / "nope.tar.gz"
    with pytest.raises(BoxError, match=str(missing)):
        await backend.restore(f"local:{missing}")
    with pytest.raises(BoxError, match="'prime' checkpoint"):
        await backend.restore("prime:abc123")
    with pytest.raises(BoxError, match="names no backend"):
        await backend.restore("/just/a/path.tar.gz")
    with pytest.raises(BoxError, match="must be absolute"):
        await backend.restore("local:relative/x.tar.gz")
    corrupt = tmp_path / "corrupt.tar.gz"
    corrupt.write_bytes(b"not an archive at all")
    with pytest.raises(BoxError, match="cannot unpack"):
        await backend.restore(f"local:{corrupt}")
    boxes = tmp_path / "boxes"
    assert not boxes.exists() or not any(boxes.iterdir())  # failed restores leave nothing


@pytest.mark.anyio
async def test_unsafe_archive_members_are_skipped(backend: LocalBackend, tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar"
    with tarfile.open(archive, "w") as tar:
        for name in ("ok.txt", "../evil.txt", "/abs-evil.txt"):
            info = tarfile.TarInfo(name)
            info.size = 2
            tar.addfile(info, io.BytesIO(b"hi"))
        link = tarfile.TarInfo("link")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
    with anyio.fail_after(30):
        box = await backend.restore(f"local:{archive}")
    try:
        # an absolute name loses its leading "/" and stays inside; the rest is skipped
        assert sorted(os.listdir(box.host_dir)) == ["abs-evil.txt", "ok.txt"]
        assert not (tmp_path / "boxes" / "evil.txt").exists()
        assert not (tmp_path / "evil.txt").exists()
        assert not Path("/abs-evil.txt").exists()
    finally:
        await box.close()


@pytest.mark.anyio
async def test_without_isolation_it_refuses_unless_told_to_run_unisolated(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    refused = sandbox.Probe(None, "bwrap: setting up uid map: Permission denied")
    monkeypatch.setattr(sandbox, "probe", lambda: refused)
    strict = LocalBackend(box_parent=tmp_path / "boxes")
    with pytest.raises(BoxError, match="cannot isolate local boxes") as raised:
        await strict.restore(f"local:{project}")
    assert "setting up uid map" in str(raised.value)
    assert "user.max_user_namespaces" in str(raised.value)
    assert "require-isolation" in str(raised.value)
    lenient = LocalBackend(box_parent=tmp_path / "boxes", require_isolation=False)
    with caplog.at_level(logging.WARNING, logger=local.__name__), anyio.fail_after(30):
        box = await lenient.restore(f"local:{project}")
        try:
            assert not box.isolated
            assert (await box.run("echo plain; pwd", timeout=10)).output == (
                f"plain\n{box.host_dir}\n"
            )
        finally:
            await box.close()
    assert "WITHOUT ANY isolation" in caplog.text


@pytest.mark.anyio
async def test_a_workdir_in_a_system_folder_is_refused(project: Path, tmp_path: Path) -> None:
    for alias in ("/usr/src/app", "/grade", "/grade/x", "/tmp/app", "/proc/x"):
        with pytest.raises(BoxError, match="mount for themselves"):
            await LocalBackend(box_parent=tmp_path / "boxes", root_alias=alias).restore(
                f"local:{project}"
            )


# --- deleting checkpoints --------------------------------------------------------------------


@pytest.mark.anyio
async def test_delete_checkpoints_only_inside_the_checkpoint_root(
    project: Path, tmp_path: Path
) -> None:
    root = tmp_path / "ckpt"
    backend = LocalBackend(checkpoint_root=root)
    victim = tmp_path / "victim"
    victim.mkdir()
    (root / "link-to-victim").parent.mkdir(parents=True)
    (root / "link-to-victim").symlink_to(victim)
    with anyio.fail_after(60):
        first = await make_local_checkpoint(project, root)
        second = await make_local_checkpoint(project, root)
        copied = root / "dir-checkpoint"
        shutil.copytree(project, copied)
        missing = f"local:{root / 'gone.tar.gz'}"
        escapes = [f"local:{root}/../victim", f"local:{victim}", f"local:{root}"]
        report = await backend.delete_checkpoints(
            [
                first,
                second,
                missing,
                f"local:{copied}",
                f"local:{root}/link-to-victim",
                *escapes,
                "prime:abc",
                "local:relative",
            ]
        )
        unrooted = await LocalBackend().delete_checkpoints([f"local:{copied}"])
    assert report.deleted == [
        first,
        second,
        missing,
        f"local:{copied}",
        f"local:{root}/link-to-victim",
    ]
    assert sorted(report.failed) == sorted([*escapes, "local:relative", "prime:abc"])
    assert all("not inside the checkpoint root" in report.failed[e] for e in escapes)
    assert report.retry_later == []
    assert not archive_path(first).exists() and not archive_path(second).exists()
    assert not copied.exists() and victim.is_dir() and project.is_dir()
    assert unrooted.deleted == [] and "no checkpoint root" in unrooted.failed[f"local:{copied}"]


# --- checkpoints of verifiers runtimes -------------------------------------------------------


class ShellRuntime(Runtime):
    """A minimal non-subprocess runtime over a host directory, with its own temp dir."""

    def __init__(self, root: Path, tmp: Path) -> None:
        super().__init__("gg-test-shell")
        self.root = root
        self.tmp = tmp

    async def start(self) -> None:
        pass

    async def run(self, argv: list[str], env: dict[str, str]) -> ProgramResult:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=self.root,
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "TMPDIR": str(self.tmp), **env},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(proc.communicate(), 60)
        return ProgramResult(proc.returncode or 0, stdout.decode(), stderr.decode())

    async def _read(self, path: str, max_bytes: int | None = None) -> bytes:
        return (self.root / path).read_bytes()

    async def write(self, path: str, data: bytes) -> None:
        (self.root / path).write_bytes(data)


@pytest.mark.anyio
async def test_checkpoint_from_subprocess_runtime(
    backend: LocalBackend, project: Path, tmp_path: Path
) -> None:
    runtime = SubprocessRuntime(SubprocessConfig())
    runtime.workdir = project
    with anyio.fail_after(60):
        checkpoint = await make_local_checkpoint_from_runtime(
            runtime, tmp_path / "ckpt", name="rollout"
        )
        direct = await make_local_checkpoint(project, tmp_path / "ckpt", name="direct")
        assert archive_path(checkpoint).name == "rollout.tar.gz"
        assert archive_path(checkpoint).read_bytes() == archive_path(direct).read_bytes()
        sub = await make_local_checkpoint_from_runtime(runtime, tmp_path / "ckpt", path="calc")
        box = await backend.restore(sub)
        try:
            assert await box.read("ops.py") == BUGGY.encode()
        finally:
            await box.close()
    runtime.workdir = None
    with pytest.raises(BoxError, match="not started"):
        await make_local_checkpoint_from_runtime(runtime, tmp_path / "ckpt")


@pytest.mark.anyio
async def test_checkpoint_from_other_runtime_goes_through_tar_and_read(
    backend: LocalBackend, project: Path, tmp_path: Path
) -> None:
    runtime_tmp = tmp_path / "runtime-tmp"
    runtime_tmp.mkdir()
    runtime = ShellRuntime(project, runtime_tmp)
    with anyio.fail_after(60):
        checkpoint = await make_local_checkpoint_from_runtime(runtime, tmp_path / "ckpt")
        assert list(runtime_tmp.iterdir()) == []  # the temp archive is removed
        box = await backend.restore(checkpoint)
        try:
            assert await box.read("/app/calc/ops.py") == BUGGY.encode()
            assert await box.read(".git/HEAD") == b"ref: refs/heads/main\n"
            with pytest.raises(BoxError, match="cannot read"):
                await box.read("stray.pyc")
            with pytest.raises(BoxError, match="cannot read"):
                await box.read("calc/__pycache__/ops.cpython-311.pyc")
        finally:
            await box.close()
        with pytest.raises(BoxError, match="cannot archive 'missing'"):
            await make_local_checkpoint_from_runtime(runtime, tmp_path / "ckpt", path="missing")


def test_mounts_inside_other_mounts_come_after_them() -> None:
    """A grading environment's Python inside /tmp (a venv in a clone under /tmp) must be
    mounted after the box's own /tmp, or the box's /tmp hides it."""
    mounts = [
        sandbox.Mount("/host/venv", "/tmp/clone/.venv"),
        sandbox.Mount("/host/usr", "/usr"),
        sandbox.Mount("/host/results", "/grade/results", writable=True),
        sandbox.Mount("/host/tmp", "/tmp", writable=True),
        sandbox.Mount("/host/grade", "/grade"),
    ]
    dests = [m.dest for m in sandbox.in_order(mounts)]
    assert dests.index("/tmp") < dests.index("/tmp/clone/.venv")
    assert dests.index("/grade") < dests.index("/grade/results")
    assert dests[:3] == ["/usr", "/tmp", "/grade"]  # siblings keep their order


@pytest.mark.anyio
async def test_a_cancelled_restore_leaves_no_folder(
    backend: LocalBackend, project: Path, tmp_path: Path
) -> None:
    (project / "big.bin").write_bytes(os.urandom(64 << 20))  # unpacking takes a while
    checkpoint = await make_local_checkpoint(project, tmp_path / "ckpt")
    parent = tmp_path / "boxes"
    with anyio.fail_after(60):
        restoring = asyncio.ensure_future(backend.restore(checkpoint))
        while not (parent.exists() and any(parent.iterdir())):  # cancelled mid-unpack
            await asyncio.sleep(0.01)
        restoring.cancel()
        with pytest.raises(asyncio.CancelledError):
            await restoring
        await asyncio.sleep(5)  # the unpacking thread runs to its end
    assert list(parent.iterdir()) == []
