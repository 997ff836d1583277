"""Local candidate boxes: a snapshot archive (or directory) restored into a fresh private
directory on this machine; every command runs in a bubblewrap sandbox (``sandbox.py``).

A box's host folder holds ``tree/`` (the candidate's working directory, mounted at the row's
``box_workdir``, default ``/app``), ``tmp/`` (its ``/tmp``), ``etc/`` and ``grade/`` (its
grading area, read-only at ``/grade`` but for ``/grade/results``). A command sees nothing of
the host but the read-only system directories and the grading environment's Python (first on
``PATH``), has no network but its own loopback, and ends with every process it started.

Where the machine cannot run the sandbox, ``restore`` refuses (``require_isolation``, the
default) with the reason and the fix; ``require_isolation=False`` runs commands directly on
the host, with no isolation at all, and says so in the log.

Paths given to ``run(workdir=...)``, ``read`` and ``write``: a relative path is relative to the
tree; an absolute path must lie under ``root_alias``, which stands for the tree (``/app/src``
-> ``tree/src``). Any other path, and any path that resolves (symlinks included) outside the
tree, raises BoxError.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import gzip
import logging
import os
import posixpath
import resource
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
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from verifiers.v1.runtimes.base import Runtime
from verifiers.v1.runtimes.subprocess import SubprocessRuntime

from group_grade.boxes import sandbox as sandboxing
from group_grade.boxes.base import (
    Box,
    BoxBackend,
    BoxError,
    BoxLimits,
    CommandResult,
    DeleteReport,
    split_checkpoint,
)
from group_grade.boxes.sandbox import Mount, Sandbox
from group_grade.layout import GRADE_MOUNT, RESULTS_SUBDIR

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

_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_DEFAULT_PATH = os.pathsep.join(
    # The interpreter running group-grade comes first: a local box runs the candidate's code
    # with the Python (and pytest) of the environment that grades it.
    [os.path.dirname(sys.executable), _SYSTEM_PATH]
)
_DRAIN_SECONDS = 1.0
"""How long output is still read after the command exits while something keeps its output
open; then the command's processes are killed."""


def isolation_problem() -> str | None:
    """Why this machine cannot sandbox local box commands (None: it can)."""
    found = sandboxing.probe()
    return None if found.sandbox is not None else found.reason


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

    @property
    def dropped(self) -> int:
        """Bytes not kept."""
        kept = len(self._head) + min(self._tail_size, self._tail_cap)
        return self._total - kept

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


def _unsandboxed_launcher(limits: BoxLimits) -> Callable[[], None]:
    """``preexec_fn`` without a sandbox: the per-process rlimits and death with the parent."""
    limited = sandboxing.rlimits(limits)

    def prepare() -> None:
        sandboxing.set_death_signal()
        for which, value in limited:
            resource.setrlimit(which, (value, value))

    return prepare


def _safe_name(path: str) -> str:
    pure = PurePosixPath(path)
    if pure.is_absolute() or not pure.parts or ".." in pure.parts or "\0" in path:
        raise BoxError(f"grading file path {path!r} must be relative and stay in the area")
    return pure.as_posix()


class LocalBox(Box):
    """A candidate box restored into a private host folder (see the module docstring). Made
    by ``LocalBackend.restore``."""

    def __init__(
        self,
        home: Path,
        *,
        sandbox: Sandbox | None,
        root_alias: str,
        limits: BoxLimits,
        max_output_bytes: int,
    ) -> None:
        self.home = home.resolve()
        """The box's host folder (``tree/``, ``tmp/``, ``etc/``, ``grade/``)."""
        self.host_dir = self.home / "tree"
        """The candidate's tree on the host."""
        self.sandbox = sandbox
        self._root_alias = posixpath.normpath(root_alias)
        self._limits = limits
        self._max_output_bytes = max_output_bytes
        self.workdir = self._root_alias if sandbox else str(self.host_dir)
        self.grade_dir = GRADE_MOUNT if sandbox else str(self.home / "grade")
        self._groups: set[int] = set()
        self._closed = False

    @property
    def isolated(self) -> bool:
        return self.sandbox is not None

    def _alias_relative(self, normal: str) -> str | None:
        """The tree-relative form of a normalized absolute path; None if not under the alias."""
        alias = self._root_alias
        if normal == alias:
            return ""
        if normal.startswith(alias.rstrip("/") + "/"):
            return normal[len(alias.rstrip("/")) + 1 :]
        return None

    def _check_open(self) -> None:
        if self._closed:
            raise BoxError("the box is closed")

    def resolve(self, path: str) -> Path:
        """The host path of ``path`` inside the tree; BoxError if it lies outside."""
        self._check_open()
        relative: str | None = path
        if posixpath.isabs(path):
            relative = self._alias_relative(posixpath.normpath(path))
            if relative is None:
                raise BoxError(
                    f"path {path!r} is outside the box: absolute paths must be under "
                    f"{self._root_alias}"
                )
        try:
            target = (self.host_dir / relative).resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL byte
            raise BoxError(f"cannot resolve {path!r} in the box: {exc}") from exc
        if not target.is_relative_to(self.host_dir):
            raise BoxError(f"path {path!r} is outside the box")
        return target

    def _in_box(self, host: Path) -> str:
        """Where the host path ``host`` (inside the tree) appears to a command."""
        if self.sandbox is None:
            return str(host)
        relative = host.relative_to(self.host_dir).as_posix()
        return self._root_alias if relative == "." else f"{self._root_alias}/{relative}"

    def mounts(self) -> list[Mount]:
        grade = self.home / "grade"
        return [
            *sandboxing.system_mounts(),
            *sandboxing.etc_mounts(self.home / "etc"),
            Mount(str(self.host_dir), self._root_alias, writable=True),
            Mount(str(self.home / "tmp"), "/tmp", writable=True),
            Mount(str(grade), GRADE_MOUNT),
            Mount(str(grade / RESULTS_SUBDIR), f"{GRADE_MOUNT}/{RESULTS_SUBDIR}", writable=True),
        ]

    async def run(
        self,
        command: str,
        *,
        timeout: float,
        env: dict[str, str] | None = None,
        workdir: str | None = None,
    ) -> CommandResult:
        """Run ``sh -c command`` in the box (or ``workdir``, mapped like any box path) in a
        clean environment (PATH, HOME=the workdir, LANG, PYTHONDONTWRITEBYTECODE=1, the
        grading area's variables, then ``env``), stdout and stderr merged. Output beyond
        ``max_output_bytes`` keeps its head and tail. A timeout kills the command and returns
        ``timed_out=True`` with exit code 124 and the output so far. Raises BoxError for a
        bad ``workdir``, ``env`` or ``command``."""
        self._check_open()
        self._groups = {pgid for pgid in self._groups if _group_alive(pgid)}
        cwd = self.resolve(workdir) if workdir is not None else self.host_dir
        if not cwd.is_dir():
            raise BoxError(f"workdir {workdir!r} is not a directory in the box")
        full_env = {
            "PATH": _DEFAULT_PATH,
            "HOME": self.workdir,
            "USER": "box",
            "LOGNAME": "box",
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            **self.grade_env(),
            **(env or {}),
        }
        if self.sandbox is not None:
            mounts = self.mounts()
            argv = sandboxing.bwrap_argv(
                self.sandbox, mounts, cwd=self._in_box(cwd), command=command, limits=self._limits
            )
            prepare = sandboxing.launcher(self.sandbox, mounts, self._limits)
        else:
            argv, prepare = ["/bin/sh", "-c", command], _unsandboxed_launcher(self._limits)
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
                    *argv,
                    cwd=cwd if self.sandbox is None else self.home,
                    env=full_env,
                    stdin=subprocess.DEVNULL,
                    stdout=write_fd,
                    stderr=write_fd,
                    start_new_session=True,
                    preexec_fn=prepare,
                )
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
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
            return CommandResult(
                TIMEOUT_EXIT_CODE, output.text(), timed_out=True, dropped=output.dropped
            )
        assert proc.returncode is not None
        return CommandResult(proc.returncode, output.text(), dropped=output.dropped)

    async def stage_grading(self, files: dict[str, bytes]) -> None:
        """Write the grading area on the host; commands see it read-only."""
        self._check_open()
        grade = self.home / "grade"

        def write() -> None:
            for path, data in files.items():
                target = grade / _safe_name(path)
                target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
                target.write_bytes(data)
                target.chmod(0o644)
            for folder in (grade, *(p for p in grade.rglob("*") if p.is_dir())):
                if folder.name != RESULTS_SUBDIR or folder.parent != grade:
                    folder.chmod(0o755)

        try:
            await asyncio.to_thread(write)
        except OSError as exc:
            raise BoxError(f"cannot place the grading files: {exc.strerror or exc}") from exc

    async def read_result(self, name: str, *, max_bytes: int) -> bytes | None:
        self._check_open()
        path = self.home / "grade" / RESULTS_SUBDIR / _safe_name(name)

        def read() -> bytes | None:
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except FileNotFoundError:
                return None
            with os.fdopen(fd, "rb") as file:
                info = os.fstat(file.fileno())
                if not stat.S_ISREG(info.st_mode):
                    raise BoxError(f"result {name!r} is not a regular file")
                if info.st_size > max_bytes:
                    raise BoxError(f"result {name!r} is larger than {max_bytes} bytes")
                return file.read(max_bytes + 1)

        try:
            return await asyncio.to_thread(read)
        except OSError as exc:
            raise BoxError(f"cannot read result {name!r}: {exc.strerror or exc}") from exc

    async def read(self, path: str) -> bytes:
        target = self.resolve(path)
        try:
            return await asyncio.to_thread(target.read_bytes)
        except OSError as exc:
            raise BoxError(f"cannot read {path!r}: {exc.strerror or exc}") from exc

    async def write(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` in the box, creating missing parent directories."""
        target = self.resolve(path)
        owner = self.sandbox.host_uid if self.sandbox is not None else None

        def write() -> None:
            made = [p for p in (target, *target.parents) if not p.exists()]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            if owner is not None:
                for path in made:
                    os.lchown(path, owner, owner)

        try:
            await asyncio.to_thread(write)
        except OSError as exc:
            raise BoxError(f"cannot write {path!r}: {exc.strerror or exc}") from exc

    async def close(self) -> None:
        """Kill the box's remaining processes and remove its folder. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for pgid in self._groups:
            _killpg(pgid)
        self._groups.clear()
        await asyncio.to_thread(_remove_tree, self.home)


# ---------------------------------------------------------------------------------------------
# The backend


def _remove_tree(path: Path) -> None:
    """``rmtree`` that also removes what a box made unreadable or unwritable to its owner."""

    def retry(function: Callable[..., object], target: str, _: BaseException) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(target), 0o700)
            if os.path.isdir(target) and not os.path.islink(target):
                os.chmod(target, 0o700)
            function(target)

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=retry)
    else:
        shutil.rmtree(path, onerror=lambda f, p, e: retry(f, p, e[1]))


def _chown_tree(root: Path, uid: int) -> None:
    os.lchown(root, uid, uid)
    for folder, names, files in os.walk(root):
        for name in (*names, *files):
            os.lchown(os.path.join(folder, name), uid, uid)


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


def _unpack(checkpoint: str, source: Path, tree: Path) -> None:
    try:
        is_dir = source.is_dir()
        if not is_dir:
            source.stat()
    except OSError as exc:
        raise BoxError(f"checkpoint {checkpoint!r}: {source}: {exc.strerror or exc}") from exc
    try:
        if is_dir:
            shutil.copytree(source, tree, symlinks=True, ignore=_ignore_special)
        else:
            tree.mkdir()
            with tarfile.open(source, "r:*") as archive:
                archive.extractall(tree, filter=_skip_unsafe)
    except (OSError, shutil.Error, tarfile.TarError, EOFError, KeyError, zlib.error) as exc:
        what = "copy the directory" if is_dir else "unpack the archive"
        raise BoxError(f"checkpoint {checkpoint!r}: cannot {what} {source}: {exc}") from exc


def _make_home(
    checkpoint: str, source: Path, parent: str | None, alias: str, owner: int | None
) -> Path:
    """A box's host folder with the checkpoint unpacked into ``tree/``."""
    if parent is not None:
        os.makedirs(parent, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="gg-box-", dir=parent))
    try:
        _unpack(checkpoint, source, home / "tree")
        for name in ("tmp", f"grade/{RESULTS_SUBDIR}"):
            (home / name).mkdir(parents=True)
        sandboxing.write_etc(home / "etc", alias)
        (home / "grade").chmod(0o755)
        (home / "tree").chmod(0o700)
        if owner is not None:
            for name in ("tree", "tmp", f"grade/{RESULTS_SUBDIR}"):
                _chown_tree(home / name, owner)
    except BaseException:
        _remove_tree(home)
        raise
    return home


def _delete(path: Path, root: Path) -> None:
    """Delete the checkpoint at ``path``, which must lie inside ``root``."""
    real_root = root.resolve()
    normal = Path(os.path.abspath(path))
    parent = normal.parent.resolve()
    if not (parent == real_root or parent.is_relative_to(real_root)) or normal == real_root:
        raise BoxError(f"refusing to delete {path}: not inside the checkpoint root {root}")
    target = parent / normal.name
    if target.is_symlink() or not target.is_dir():
        target.unlink(missing_ok=True)
        return
    shutil.rmtree(target)


class LocalBackend(BoxBackend):
    """Restores ``local:/abs/path`` checkpoints (a ``.tar``/``.tar.gz``/``.tgz`` archive or a
    directory) into fresh private folders under ``box_parent`` (default: the system temp
    directory).

    ``root_alias`` is the absolute path where the tree appears to commands and that stands
    for it in ``workdir``, ``read`` and ``write`` (set it to the row's ``box_workdir``).
    ``require_isolation`` (default) makes ``restore`` raise BoxError on a machine that cannot
    run the sandbox; False runs commands unsandboxed (logging a warning). ``limits`` bound
    every command. ``checkpoint_root``: the folder ``delete_checkpoints`` may delete in (None:
    it deletes nothing)."""

    scheme = "local"

    def __init__(
        self,
        *,
        box_parent: str | os.PathLike[str] | None = None,
        root_alias: str = "/app",
        require_isolation: bool = True,
        limits: BoxLimits | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        checkpoint_root: str | os.PathLike[str] | None = None,
    ) -> None:
        normal = posixpath.normpath(root_alias) if posixpath.isabs(root_alias) else None
        if normal is None or normal == "/":
            raise ValueError(f"root_alias must be an absolute path below /, got {root_alias!r}")
        if max_output_bytes < 2:
            raise ValueError("max_output_bytes must be at least 2")
        self.box_parent = os.fspath(box_parent) if box_parent is not None else None
        self.root_alias = normal
        self.require_isolation = require_isolation
        self.limits = limits or BoxLimits()
        self.max_output_bytes = max_output_bytes
        self.checkpoint_root = Path(checkpoint_root) if checkpoint_root is not None else None
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

    def _sandbox(self) -> Sandbox | None:
        found = sandboxing.probe()
        if found.sandbox is not None:
            reserved = [
                p
                for p in sandboxing.reserved_paths()
                if self.root_alias == p or self.root_alias.startswith(p.rstrip("/") + "/")
            ]
            if reserved:
                raise BoxError(
                    f"the box workdir {self.root_alias} lies in {reserved[0]}, which local "
                    "boxes mount for themselves; give the row another box_workdir"
                )
            return found.sandbox
        if self.require_isolation:
            raise BoxError(
                f"this machine cannot isolate local boxes ({found.reason}). {sandboxing.FIX_HINT}"
            )
        if not self._warned:
            self._warned = True
            logger.warning(
                "local boxes run candidate code WITHOUT ANY isolation (%s)", found.reason
            )
        return None

    async def restore(self, checkpoint: str) -> LocalBox:
        source = self._local_path(checkpoint)
        sandbox = await asyncio.to_thread(self._sandbox)
        owner = sandbox.host_uid if sandbox is not None else None
        making = asyncio.ensure_future(
            asyncio.to_thread(
                _make_home, checkpoint, source, self.box_parent, self.root_alias, owner
            )
        )
        try:
            home = await asyncio.shield(making)
        except asyncio.CancelledError:  # the folder being made is removed once it is made

            def discard(done: asyncio.Future[Path]) -> None:
                if not done.cancelled() and done.exception() is None:
                    _remove_tree(done.result())

            making.add_done_callback(discard)
            raise
        return LocalBox(
            home,
            sandbox=sandbox,
            root_alias=self.root_alias,
            limits=self.limits,
            max_output_bytes=self.max_output_bytes,
        )

    async def delete_checkpoints(self, checkpoints: list[str]) -> DeleteReport:
        """Delete local archives/directories inside ``checkpoint_root`` (a symlink is removed,
        not its target). A missing checkpoint counts as deleted. Never raises."""
        report = DeleteReport()
        for checkpoint in checkpoints:
            try:
                if self.checkpoint_root is None:
                    raise BoxError("no checkpoint root is configured, so nothing is deleted")
                await asyncio.to_thread(_delete, self._local_path(checkpoint), self.checkpoint_root)
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
