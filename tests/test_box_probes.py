"""A candidate's code probing its local box: each way out must fail (issue 11's box probes).

Every probe runs as candidate code would: a shell command in a restored box, with the
default backend (isolation required, default limits). The boxes live next to a stand-in
grader box, as they do under a tool server, and the test plants host files and listeners
the probes go for.
"""

from __future__ import annotations

import os
import socket
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest

from group_grade.boxes.base import BoxLimits
from group_grade.boxes.local import LocalBackend, LocalBox, make_local_checkpoint

SECRET = f"host-secret-{uuid.uuid4().hex}"


@pytest.fixture
def runtime(tmp_path: Path) -> Path:
    """A stand-in for a grader's runtime folder: its grader box and its tool server's boxes."""
    grade = tmp_path / "runtime" / "grade"
    grade.mkdir(parents=True)
    (grade / "task.md").write_text(SECRET)
    return tmp_path / "runtime"


@pytest.fixture
async def pair(runtime: Path, tmp_path: Path) -> AsyncIterator[tuple[LocalBox, LocalBox]]:
    tree = tmp_path / "project"
    tree.mkdir()
    (tree / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    checkpoint = await make_local_checkpoint(tree, tmp_path / "checkpoints")
    backend = LocalBackend(box_parent=runtime / ".boxes")
    first = await backend.restore(checkpoint)
    second = await backend.restore(checkpoint)
    for box in (first, second):
        await box.stage_grading({"privileged/tests/test_hidden.py": b"def test_x(): pass\n"})
    try:
        yield first, second
    finally:
        await first.close()
        await second.close()


async def run(box: LocalBox, command: str, timeout: float = 60) -> str:
    with anyio.fail_after(timeout + 30):
        result = await box.run(command, timeout=timeout)
    return f"{result.output}\n[exit {result.exit_code}]"


def host_processes_with(token: str) -> list[int]:
    """Host pids whose command line holds ``token``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if token.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return found


@pytest.mark.anyio
async def test_the_host_files_and_home_are_out_of_sight(
    pair: tuple[LocalBox, LocalBox], home: Path
) -> None:
    box, _ = pair
    (home / "notes.txt").write_text(SECRET)
    host_users = {line.split(":")[0] for line in Path("/etc/passwd").read_text().splitlines()}
    output = await run(box, f"cat /etc/passwd; cat {home}/notes.txt; ls -a {home} /root /work")
    assert SECRET not in output
    seen_users = {line.split(":")[0] for line in output.splitlines() if line.count(":") >= 6}
    assert seen_users == {"root", "box", "nobody"} and host_users - seen_users


@pytest.mark.anyio
async def test_the_grader_box_and_a_sibling_box_are_out_of_reach(
    pair: tuple[LocalBox, LocalBox], runtime: Path
) -> None:
    box, sibling = pair
    (sibling.host_dir / "mine.txt").write_text(SECRET)
    grade = runtime / "grade"
    probes = "; ".join(
        [
            f"cat {grade}/task.md {sibling.host_dir}/mine.txt",
            "cat ../grade/task.md ../../grade/task.md ../../../grade/task.md",
            "find / -name task.md -o -name mine.txt 2>/dev/null | head",
            f"echo forged > {grade}/verdict.json",
            "echo forged > ../../grade/verdict.json",
            f"echo forged > {sibling.host_dir}/calc.py",
        ]
    )
    output = await run(box, probes)
    assert SECRET not in output
    assert "task.md" not in output.replace(f"{grade}/task.md", "").replace("../grade/task.md", "")
    assert not (grade / "verdict.json").exists()
    assert (sibling.host_dir / "calc.py").read_text().startswith("def add")


@pytest.mark.anyio
async def test_writes_outside_the_box_tree_fail(
    pair: tuple[LocalBox, LocalBox], tmp_path: Path
) -> None:
    box, _ = pair
    outside = tmp_path / "outside.txt"
    name = f"gg-probe-{uuid.uuid4().hex}"
    output = await run(
        box,
        f"echo x > {outside}; echo x > /usr/{name}; echo x > /etc/{name}; echo x > /{name}; "
        f"echo x > $GRADE_PRIVILEGED/{name}; echo inside > kept.txt; echo tmp > /tmp/t; "
        "cat /tmp/t",
    )
    assert not outside.exists()
    assert not any(Path(folder, name).exists() for folder in ("/usr", "/etc", "/"))
    assert output.count("Read-only file system") >= 4, output
    assert (box.host_dir / "kept.txt").read_text() == "inside\n"
    assert "tmp\n" in output


CONNECT = """
import socket, sys
family = socket.AF_UNIX if sys.argv[1].startswith(("/", "@")) else socket.AF_INET
target = sys.argv[1] if family == socket.AF_INET else sys.argv[1].replace("@", "\\0", 1)
address = (target, int(sys.argv[2])) if family == socket.AF_INET else target
try:
    socket.socket(family, socket.SOCK_STREAM).connect(address)
    print("CONNECTED", sys.argv[1])
except OSError as exc:
    print("BLOCKED", sys.argv[1], exc.errno)
"""


@pytest.fixture
def listeners(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A TCP listener on host 127.0.0.1, a UNIX socket file and an abstract UNIX socket."""
    tcp = socket.create_server(("127.0.0.1", 0))
    path = tmp_path / "host.sock"
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(path))
    unix.listen()
    name = f"gg-probe-{uuid.uuid4().hex}"
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(f"\0{name}")
    abstract.listen()
    try:
        yield {"port": str(tcp.getsockname()[1]), "unix": str(path), "abstract": f"@{name}"}
    finally:
        for sock in (tcp, unix, abstract):
            sock.close()


@pytest.mark.anyio
async def test_no_network_no_host_socket_no_way_into_the_host_network(
    pair: tuple[LocalBox, LocalBox], listeners: dict[str, str]
) -> None:
    box, _ = pair
    await box.write("connect.py", CONNECT.encode())
    python = sys.executable
    output = await run(
        box,
        f"{python} connect.py 127.0.0.1 {listeners['port']}; "
        f"{python} connect.py 1.1.1.1 53; "
        f"{python} connect.py {listeners['unix']} 0; "
        f"{python} connect.py {listeners['abstract']} 0; "
        "for ns in /proc/[0-9]*/ns/net; do "
        f"nsenter --net=$ns {python} connect.py 127.0.0.1 {listeners['port']}; done; "
        f"nsenter --net=/proc/1/ns/net {python} connect.py 127.0.0.1 {listeners['port']}",
    )
    assert "CONNECTED" not in output, output
    assert output.count("BLOCKED") >= 4, output


@pytest.mark.anyio
async def test_no_capabilities_and_no_new_namespaces(pair: tuple[LocalBox, LocalBox]) -> None:
    box, _ = pair
    output = await run(
        box,
        "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; id -u; "
        "unshare -U true && echo UNSHARED; unshare -rn true && echo UNSHARED; "
        "mount -t tmpfs none /mnt 2>&1 && echo MOUNTED; ls /proc | grep -c '^[0-9]'",
    )
    assert "UNSHARED" not in output and "MOUNTED" not in output, output
    for line in output.splitlines():
        if line.startswith("Cap"):
            assert line.split()[1] == "0000000000000000", line
    assert "\n1000\n" in output


@pytest.mark.anyio
async def test_no_process_outlives_its_command_or_its_box(pair: tuple[LocalBox, LocalBox]) -> None:
    box, _ = pair
    token = f"{uuid.uuid4().int % 10**6 + 1000}.5"
    await run(box, f"(setsid nohup sleep {token} >/dev/null 2>&1 &); nohup sleep {token} &")
    assert host_processes_with(f"sleep\0{token}") == []
    running = box.run(f"sleep {token}", timeout=60)
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: running)
            while not host_processes_with(f"sleep\0{token}"):
                await anyio.sleep(0.05)
            await box.close()
    assert host_processes_with(f"sleep\0{token}") == []


@pytest.mark.anyio
async def test_two_hundred_processes_are_refused(pair: tuple[LocalBox, LocalBox]) -> None:
    box, _ = pair
    token = f"{uuid.uuid4().int % 10**6 + 1000}.25"
    output = await run(
        box,
        f"for i in $(seq 200); do sleep {token} & done; ls /proc | grep -c '^[0-9]'; wait",
        timeout=60,
    )
    live = [line for line in output.splitlines() if line.isdigit()]
    assert "fork" in output.lower(), output
    assert not live or int(live[-1]) <= BoxLimits().processes, output
    assert host_processes_with(f"sleep\0{token}") == []


@pytest.mark.anyio
async def test_a_file_larger_than_the_limit_is_refused(pair: tuple[LocalBox, LocalBox]) -> None:
    box, _ = pair
    output = await run(box, "head -c 200M /dev/zero > big.bin; echo rc=$?; ls -l big.bin")
    size = (box.host_dir / "big.bin").stat().st_size
    assert size <= BoxLimits().file_mb << 20 and size < 200 << 20
    assert "rc=0" not in output, output
