"""Local candidate boxes: a snapshot archive (or directory) restored into a fresh private
directory on this machine, commands run there with the network blocked.

For development, the demo and tests. A local box isolates the *network* only (each command
runs in a new network namespace with nothing but its own loopback, and, where the machine
allows, a new PID namespace: whatever a command leaves running dies with it, and a command
dies with the process that started it); it has no filesystem or
user isolation, so a command can read and write anything the host user can. Grade untrusted
candidates in ``prime`` boxes.

Path mapping: the snapshot root is the candidate's working directory. A relative path (for
``run(workdir=...)``, ``read`` and ``write``) is relative to the box directory. An absolute
path is accepted only under ``root_alias`` (default ``/app``), which stands for the box
directory: ``/app`` -> ``<box>``, ``/app/src/x.py`` -> ``<box>/src/x.py``. Any other absolute
path, and any path that resolves (symlinks included) outside the box, raises BoxError.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fnmatch
import functools
import gzip
import logging
import os
import posixpath
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import tempfile
import uuid
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from verifiers.v1.runtimes.base import Runtime
from verifiers.v1.runtimes.subprocess import SubprocessRuntime

from group_grade.boxes.base import (
    Box,
    BoxBackend,
    BoxError,
    CommandResult,
    DeleteReport,
    split_checkpoint,
)

logger = logging.getLogger(__name__)

DEFAULT_EXCLUDE: tuple[str, ...] = (
    "__pycache__",
    ".pytest_cache",
    "*.pyc",
    ".venv",
    "node_modules",
)
"""Entry names (fnmatch patterns on the base name) left out of snapshots. ``.git`` is kept:
graders inspect history."""

DEFAULT_MAX_OUTPUT_BYTES = 8 * 1024 * 1024
TIMEOUT_EXIT_CODE = 124
"""``exit_code`` of a command killed by its timeout (as coreutils ``timeout``)."""

_DEFAULT_PATH = os.pathsep.join(
    # The interpreter running group-grade comes first: a local box runs the candidate's code
    # with the Python (and pytest) of the environment that grades it.
    [
        os.path.dirname(sys.executable),
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    ]
)
_DRAIN_SECONDS = 1.0
"""How long output is still read after the command's shell exits while leftover background
processes keep its output open; they are then killed."""
_PROBE_SECONDS = 10.0


# ---------------------------------------------------------------------------------------------
# Network isolation


@dataclass(frozen=True)
class _Isolation:
    prefix: tuple[str, ...] | None
    """argv prefix that runs a program in a new network namespace; None = not possible here."""
    ip: str | None
    """Absolute path of ``ip`` when it can bring the new namespace's loopback up."""
    reason: str
    """Why isolation is unavailable (empty when available)."""


def _probe(argv: list[str]) -> str | None:
    """Run ``argv`` briefly; None on success, else the reason it failed."""
    try:
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=_PROBE_SECONDS
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    return done.stderr.decode(errors="replace").strip() or f"exit code {done.returncode}"


@functools.cache
def _detect_isolation() -> _Isolation:
    unshare = shutil.which("unshare")
    if unshare is None:
        return _Isolation(None, None, "`unshare` (util-linux) is not installed")
    failures: list[str] = []
    # A private PID namespace too where possible: when the launcher dies (killed with the
    # tool server, see _die_with_parent) the kernel kills everything the command left behind.
    pid_ns = ("--pid", "--fork", "--kill-child")
    prefixes = (
        (unshare, "-n", *pid_ns),
        (unshare, "--net", "--map-root-user", *pid_ns),
        (unshare, "-n"),
        (unshare, "--net", "--map-root-user"),
    )
    for prefix in prefixes:
        error = _probe([*prefix, "true"])
        if error is None:
            ip = shutil.which("ip")
            if ip is not None and _probe([*prefix, ip, "link", "set", "dev", "lo", "up"]):
                ip = None
            return _Isolation(prefix, ip, "")
        failures.append(f"`{' '.join(['unshare', *prefix[1:]])} true` failed: {error}")
    return _Isolation(None, None, "; ".join(failures))


def _die_with_parent() -> None:
    """In the forked child: be killed when the process that started the command dies (Linux
    PR_SET_PDEATHSIG), so a tool server killed mid-command leaves no command running."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def can_isolate_network() -> bool:
    """Whether this machine can run local box commands in a new network namespace
    (probed once per process with ``unshare -n`` / ``unshare --net --map-root-user``)."""
    return _detect_isolation().prefix is not None


def _launcher(isolation: _Isolation) -> tuple[str, ...]:
    """argv to which the command string is appended. Inside the namespace the loopback is
    brought up (when ``ip`` can) so tests that serve on localhost still work."""
    if isolation.prefix is None:
        return ("/bin/sh", "-c")
    if isolation.ip is None:
        return (*isolation.prefix, "/bin/sh", "-c")
    script = f'{shlex.quote(isolation.ip)} link set dev lo up >/dev/null 2>&1; exec /bin/sh -c "$1"'
    return (*isolation.prefix, "/bin/sh", "-c", script, "/bin/sh")


# ---------------------------------------------------------------------------------------------
# The box


class _CappedOutput:
    """Keeps the head and the tail of a byte stream, at most ``cap`` bytes in total."""

    def __init__(self, cap: int) -> None:
        self._head_cap = cap // 2
        self._tail_cap = cap - self._head_cap
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self._total = 0

    def add(self, data: bytes) -> None:
        self._total += len(data)
        if len(self._head) < self._head_cap:
            take = self._head_cap - len(self._head)
            self._head += data[:take]
            data = data[take:]
        if not data:
            return
        self._tail.append(data)
        self._tail_size += len(data)
        while self._tail and self._tail_size - len(self._tail[0]) >= self._tail_cap:
            self._tail_size -= len(self._tail.popleft())

    def text(self) -> str:
        tail = b"".join(self._tail)[-self._tail_cap :] if self._tail_cap else b""
        head = bytes(self._head)
        dropped = self._total - len(head) - len(tail)
        if not dropped:
            return (head + tail).decode(errors="replace")
        return (
            head.decode(errors="replace")
            + f"\n[... {dropped} bytes of output dropped ...]\n"
            + tail.decode(errors="replace")
        )


class _Collector(asyncio.Protocol):
    def __init__(self, output: _CappedOutput, closed: asyncio.Future[None]) -> None:
        self._output = output
        self._closed = closed

    def data_received(self, data: bytes) -> None:
        self._output.add(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._closed.done():
            self._closed.set_result(None)


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


async def _wait(
    proc: asyncio.subprocess.Process, closed: asyncio.Future[None], timeout: float
) -> bool:
    """Wait for the command and the end of its output; True if it timed out (and was killed).
    Leftover processes still holding the output open after the command exits are killed."""
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        timed_out = True
        _killpg(proc.pid)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), _DRAIN_SECONDS)
    try:
        await asyncio.wait_for(asyncio.shield(closed), _DRAIN_SECONDS)
    except TimeoutError:
        _killpg(proc.pid)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(closed), _DRAIN_SECONDS)
    return timed_out


class LocalBox(Box):
    """A candidate box restored into a private host directory (see the module docstring
    for the path mapping). Made by ``LocalBackend.restore``."""

    def __init__(
        self,
        directory: Path,
        *,
        launcher: Sequence[str],
        root_alias: str | None,
        max_output_bytes: int,
        network_isolated: bool,
    ) -> None:
        self._dir = directory.resolve()
        self.workdir: str = str(self._dir)
        """The box directory on the host; commands run here by default."""
        self.network_isolated = network_isolated
        self._launcher = tuple(launcher)
        self._root_alias = posixpath.normpath(root_alias) if root_alias else None
        self._max_output_bytes = max_output_bytes
        self._groups: set[int] = set()
        self._closed = False

    def _alias_relative(self, normal: str) -> str | None:
        """The box-relative form of a normalized absolute path; None if not under the alias."""
        alias = self._root_alias
        if alias is None:
            return None
        if alias == "/":
            return normal.lstrip("/")
        if normal == alias:
            return ""
        if normal.startswith(alias + "/"):
            return normal[len(alias) + 1 :]
        return None

    def _check_open(self) -> None:
        if self._closed:
            raise BoxError("the box is closed")

    def resolve(self, path: str) -> Path:
        """The host path of ``path`` inside the box; BoxError if it lies outside."""
        self._check_open()
        relative: str | None = path
        if posixpath.isabs(path):
            relative = self._alias_relative(posixpath.normpath(path))
            if relative is None:
                hint = (
                    f"absolute paths must be under {self._root_alias}"
                    if self._root_alias
                    else "use a path relative to the box"
                )
                raise BoxError(f"path {path!r} is outside the box: {hint}")
        try:
            target = (self._dir / relative).resolve()
        except (OSError, RuntimeError) as exc:  # e.g. a symlink loop
            raise BoxError(f"cannot resolve {path!r} in the box: {exc}") from exc
        if not target.is_relative_to(self._dir):
            raise BoxError(f"path {path!r} is outside the box")
        return target

    async def run(
        self,
        command: str,
        *,
        timeout: float,
        env: dict[str, str] | None = None,
        workdir: str | None = None,
    ) -> CommandResult:
        """Run ``sh -c command`` in the box (or ``workdir``, mapped like any box path) in a
        clean environment (PATH, HOME=box, LANG, PYTHONDONTWRITEBYTECODE=1, then ``env``),
        stdout and stderr merged, network blocked. Output beyond ``max_output_bytes`` keeps
        its head and tail. A timeout kills the command's process group and returns
        ``timed_out=True`` with exit code 124 and the output so far."""
        self._check_open()
        self._groups = {pgid for pgid in self._groups if _group_alive(pgid)}
        cwd = self.resolve(workdir) if workdir is not None else self._dir
        if not cwd.is_dir():
            raise BoxError(f"workdir {workdir!r} is not a directory in the box")
        full_env = {
            "PATH": _DEFAULT_PATH,
            "HOME": str(self._dir),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            **(env or {}),
        }
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        output = _CappedOutput(self._max_output_bytes)
        closed: asyncio.Future[None] = loop.create_future()
        read_fd, write_fd = os.pipe()
        transport, _ = await loop.connect_read_pipe(
            lambda: _Collector(output, closed), os.fdopen(read_fd, "rb", buffering=0)
        )
        try:
            try:
                proc = await asyncio.create_subprocess_exec(
                    *self._launcher,
                    command,
                    cwd=cwd,
                    env=full_env,
                    stdin=subprocess.DEVNULL,
                    stdout=write_fd,
                    stderr=write_fd,
                    start_new_session=True,
                    preexec_fn=_die_with_parent,
                )
            except OSError as exc:
                raise BoxError(f"could not start the command: {exc}") from exc
            finally:
                os.close(write_fd)
            self._groups.add(proc.pid)
            try:
                timed_out = await _wait(proc, closed, max(0.0, deadline - loop.time()))
            finally:
                if proc.returncode is None:  # cancelled
                    _killpg(proc.pid)
                if not _group_alive(proc.pid):
                    self._groups.discard(proc.pid)
        finally:
            transport.close()
        if timed_out:
            return CommandResult(TIMEOUT_EXIT_CODE, output.text(), timed_out=True)
        assert proc.returncode is not None
        return CommandResult(proc.returncode, output.text())

    async def read(self, path: str) -> bytes:
        target = self.resolve(path)
        try:
            return await asyncio.to_thread(target.read_bytes)
        except OSError as exc:
            raise BoxError(f"cannot read {path!r}: {exc.strerror or exc}") from exc

    async def write(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` in the box, creating missing parent directories."""
        target = self.resolve(path)

        def write() -> None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)

        try:
            await asyncio.to_thread(write)
        except OSError as exc:
            raise BoxError(f"cannot write {path!r}: {exc.strerror or exc}") from exc

    async def close(self) -> None:
        """Kill the box's remaining processes and remove its directory. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for pgid in self._groups:
            _killpg(pgid)
        self._groups.clear()
        await asyncio.to_thread(shutil.rmtree, self._dir, True)


# ---------------------------------------------------------------------------------------------
# The backend


def _skip_unsafe(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's "data" filter, skipping (with a warning) what it refuses instead of failing
    the whole restore: absolute or ``..`` paths, links leaving the box, device files."""
    try:
        return tarfile.data_filter(member, dest)
    except tarfile.FilterError as exc:
        logger.warning("local box restore: skipping archive member %r: %s", member.name, exc)
        return None


def _ignore_special(directory: str, names: list[str]) -> set[str]:
    """copytree ignore: sockets, FIFOs and device files cannot be copied into a box."""
    ignored: set[str] = set()
    for name in names:
        mode = os.lstat(os.path.join(directory, name)).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            ignored.add(name)
    return ignored


def _unpack(checkpoint: str, source: Path, parent: str | None) -> Path:
    try:
        is_dir = source.is_dir()
        if not is_dir:
            source.stat()
    except OSError as exc:
        raise BoxError(f"checkpoint {checkpoint!r}: {source}: {exc.strerror or exc}") from exc
    if parent is not None:
        os.makedirs(parent, exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="gg-box-", dir=parent))
    try:
        if is_dir:
            shutil.copytree(
                source, directory, symlinks=True, ignore=_ignore_special, dirs_exist_ok=True
            )
        else:
            with tarfile.open(source, "r:*") as archive:
                archive.extractall(directory, filter=_skip_unsafe)
        os.chmod(directory, 0o700)
    except (OSError, shutil.Error, tarfile.TarError, EOFError, KeyError, zlib.error) as exc:
        shutil.rmtree(directory, ignore_errors=True)
        what = "copy the directory" if is_dir else "unpack the archive"
        raise BoxError(f"checkpoint {checkpoint!r}: cannot {what} {source}: {exc}") from exc
    return directory


def _delete(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
        return
    if path == Path(path.anchor) or os.path.ismount(path) or path == Path.home():
        raise BoxError(f"refusing to delete {path}: not a checkpoint directory")
    shutil.rmtree(path)


class LocalBackend(BoxBackend):
    """Restores ``local:/abs/path`` checkpoints (a ``.tar``/``.tar.gz``/``.tgz`` archive or a
    directory) into fresh private directories under ``box_parent`` (default: the system
    temp directory).

    ``root_alias`` is the absolute path that stands for the box directory in ``workdir``,
    ``read`` and ``write`` (set it to the row's ``box_workdir``); None refuses absolute
    paths. With ``require_network_isolation`` (default) a machine that cannot create network
    namespaces makes ``restore`` raise BoxError; False runs commands with the host network
    (logging a warning)."""

    scheme = "local"

    def __init__(
        self,
        *,
        box_parent: str | os.PathLike[str] | None = None,
        root_alias: str | None = "/app",
        require_network_isolation: bool = True,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    ) -> None:
        if root_alias is not None and not posixpath.isabs(root_alias):
            raise ValueError(f"root_alias must be an absolute path, got {root_alias!r}")
        if max_output_bytes < 2:
            raise ValueError("max_output_bytes must be at least 2")
        self.box_parent = os.fspath(box_parent) if box_parent is not None else None
        self.root_alias = root_alias
        self.require_network_isolation = require_network_isolation
        self.max_output_bytes = max_output_bytes
        self._warned = False

    def _local_path(self, checkpoint: str) -> Path:
        scheme, ref = split_checkpoint(checkpoint)
        if scheme != self.scheme:
            raise BoxError(
                f"checkpoint {checkpoint!r} is a {scheme!r} checkpoint; "
                "the local backend restores only 'local:<absolute path>'"
            )
        if not os.path.isabs(ref):
            raise BoxError(f"checkpoint {checkpoint!r}: the path must be absolute")
        return Path(ref)

    async def restore(self, checkpoint: str) -> LocalBox:
        source = self._local_path(checkpoint)
        isolation = await asyncio.to_thread(_detect_isolation)
        if isolation.prefix is None:
            if self.require_network_isolation:
                raise BoxError(
                    "this machine cannot block the network for local boxes "
                    f"({isolation.reason}). Allow network namespaces (run as root, or enable "
                    "unprivileged user namespaces), use prime boxes, or pass "
                    "LocalBackend(require_network_isolation=False) to run candidate "
                    "commands WITH network access."
                )
            if not self._warned:
                self._warned = True
                logger.warning("local boxes run WITHOUT network isolation (%s)", isolation.reason)
        directory = await asyncio.to_thread(_unpack, checkpoint, source, self.box_parent)
        return LocalBox(
            directory,
            launcher=_launcher(isolation),
            root_alias=self.root_alias,
            max_output_bytes=self.max_output_bytes,
            network_isolated=isolation.prefix is not None,
        )

    async def delete_checkpoints(self, checkpoints: list[str]) -> DeleteReport:
        """Delete local archives/directories (a symlink is removed, not its target). A missing
        checkpoint counts as deleted. Never raises."""
        report = DeleteReport()
        for checkpoint in checkpoints:
            try:
                await asyncio.to_thread(_delete, self._local_path(checkpoint))
            except (BoxError, OSError) as exc:
                report.failed[checkpoint] = str(exc)
            else:
                report.deleted.append(checkpoint)
        return report


# ---------------------------------------------------------------------------------------------
# Making checkpoints


def _archive_name(name: str | None) -> str:
    if name is None:
        return f"checkpoint-{uuid.uuid4().hex[:16]}.tar.gz"
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"checkpoint name must be a plain file name, got {name!r}")
    return name if name.endswith((".tar.gz", ".tgz")) else f"{name}.tar.gz"


def _entries(
    directory: Path, prefix: str, exclude: tuple[str, ...], skip: Path
) -> Iterator[tuple[Path, str]]:
    """(path, archive name) of every entry under ``directory``, depth first, sorted by name."""
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        path = Path(entry.path)
        if path == skip or any(fnmatch.fnmatchcase(entry.name, p) for p in exclude):
            continue
        arcname = f"{prefix}{entry.name}"
        yield path, arcname
        if entry.is_dir(follow_symlinks=False):
            yield from _entries(path, f"{arcname}/", exclude, skip)


def _atomic_write(dest: Path, name: str, fill: Callable[[BinaryIO], object]) -> Path:
    """Create ``dest/name`` through a temp file in ``dest`` filled by ``fill(binary file)``."""
    dest.mkdir(parents=True, exist_ok=True)
    target = dest.resolve() / name
    fd, tmp = tempfile.mkstemp(prefix=".gg-ckpt-", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as raw:
            fill(raw)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def _write_archive(source: Path, dest: Path, name: str | None, exclude: tuple[str, ...]) -> str:
    source = source.resolve()
    if not source.is_dir():
        raise BoxError(f"cannot snapshot {source}: not a directory")
    filename = _archive_name(name)
    skip = dest.resolve()

    def fill(raw: BinaryIO) -> None:
        with (
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz,
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for path, arcname in _entries(source, "", exclude, skip):
                info = tar.gettarinfo(str(path), arcname)
                if info is None or not (
                    info.isreg() or info.isdir() or info.issym() or info.islnk()
                ):
                    continue  # sockets, FIFOs, devices
                info.mtime = 0
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                if info.isreg():
                    with open(path, "rb") as data:
                        tar.addfile(info, data)
                else:
                    tar.addfile(info)

    return f"local:{_atomic_write(dest, filename, fill)}"


async def make_local_checkpoint(
    source_dir: str | os.PathLike[str],
    dest_dir: str | os.PathLike[str],
    *,
    name: str | None = None,
    exclude: Iterable[str] = DEFAULT_EXCLUDE,
) -> str:
    """Archive ``source_dir`` into ``dest_dir/<name>`` (default a unique
    ``checkpoint-<hex>.tar.gz``) and return ``"local:<absolute archive path>"``.

    The archive is deterministic (sorted entries; mtime, owners and gzip header normalized):
    the same tree gives the same bytes. Entries whose name matches an ``exclude`` pattern are
    left out (``.git`` is kept by default); sockets, FIFOs and devices are skipped."""
    return await asyncio.to_thread(
        _write_archive, Path(source_dir), Path(dest_dir), name, tuple(exclude)
    )


_REMOTE_TAR = """t=$(mktemp "${{TMPDIR:-/tmp}}/gg-ckpt-XXXXXX") || exit 1
if tar -czf "$t" {excludes} -C "$1" .; then printf '%s' "$t"
else rc=$?; rm -f "$t"; exit "$rc"
fi"""


async def make_local_checkpoint_from_runtime(
    runtime: Runtime,
    dest_dir: str | os.PathLike[str],
    *,
    path: str = ".",
    name: str | None = None,
    exclude: Iterable[str] = DEFAULT_EXCLUDE,
) -> str:
    """Archive a verifiers runtime's working directory (or ``path`` in it) as a local
    checkpoint in ``dest_dir``; returns ``"local:<absolute archive path>"``.

    The subprocess runtime's working directory is a host directory: it is archived directly
    (deterministically, see ``make_local_checkpoint``). Other runtimes run ``tar -czf`` on a
    temp file inside the runtime, whose bytes come out through ``runtime.read``."""
    exclude = tuple(exclude)
    filename = _archive_name(name)
    if isinstance(runtime, SubprocessRuntime):
        if runtime.workdir is None:
            raise BoxError("the subprocess runtime has no working directory (not started)")
        return await make_local_checkpoint(
            runtime.workdir / path, dest_dir, name=name, exclude=exclude
        )
    excludes = " ".join(shlex.quote(f"--exclude={pattern}") for pattern in exclude)
    script = _REMOTE_TAR.format(excludes=excludes)
    try:
        result = await runtime.run(["sh", "-c", script, "sh", path], {})
    except Exception as exc:
        raise BoxError(f"cannot archive {path!r} in the runtime: {exc}") from exc
    if result.exit_code != 0:
        detail = (result.stderr or result.stdout).strip()[-1000:]
        raise BoxError(
            f"cannot archive {path!r} in the runtime (exit {result.exit_code}): {detail}"
        )
    remote = result.stdout.strip()
    try:
        data = await runtime.read(remote)
    except Exception as exc:
        raise BoxError(f"cannot read the archive {remote!r} out of the runtime: {exc}") from exc
    finally:
        with contextlib.suppress(Exception):
            await runtime.run(["rm", "-f", remote], {})
    target = await asyncio.to_thread(
        _atomic_write, Path(dest_dir), filename, lambda raw: raw.write(data)
    )
    return f"local:{target}"
