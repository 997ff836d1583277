"""Staging the grader box: its layout under the grade root, rendered as path -> content
(``grader_files``), and written into the box (``stage_files``).

Under the grade root: ``task.md``, ``privileged/...`` and per candidate label ``turns.json``,
``turns/NNN.md`` with ``turns/index.md``, ``digest.md``, ``patch.diff``, ``tests.txt`` (rewards
mode, when the test output says more than the outcome) and ``files/...``; finalize adds
``verdict.json``.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import tarfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import pydantic_core
import verifiers.v1 as vf
from verifiers.v1.errors import SandboxError
from verifiers.v1.runtimes import SubprocessRuntime

from group_grade.data import Candidate, GroupGradeData
from group_grade.digest import (
    TURN_INDEX,
    TURNS_DIR,
    render_digest,
    render_turn_index,
    says_only_the_outcome,
)
from group_grade.layout import MANIFEST_FILE, PRIVILEGED_DIR, TASK_FILE
from group_grade.manifest import render_manifest

logger = logging.getLogger(__name__)


def turn_file_name(number: int, count: int) -> str:
    """``007.md``: turn ``number`` of ``count``, zero-padded to the width of ``count`` (at
    least 3 digits), so that the files sort in turn order."""
    return f"{number:0{max(3, len(str(count)))}d}.md"


def safe_relative(path: str) -> str:
    """``path`` as a relative POSIX path that stays below its root; raises ValueError."""
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        raise ValueError(f"file path {path!r} must be relative and stay inside its folder")
    return pure.as_posix()


def render_task(data: GroupGradeData) -> str:
    parts = ["# The task the candidates were given", ""]
    if data.task_system_prompt:
        parts += ["## System prompt", "", data.task_system_prompt.strip(), ""]
    parts += ["## Prompt", "", data.task_prompt.strip() or "(not recorded)", ""]
    return "\n".join(parts)


def turns_json(turns: list[str]) -> bytes:
    """``json.dumps(turns, indent=1, ensure_ascii=False)`` in UTF-8, encoded by pydantic-core
    (the same text, several times faster on long transcripts); the json module handles what
    it refuses (lone surrogates, kept as escapes)."""
    try:
        return pydantic_core.to_json(turns, indent=1)
    except (ValueError, UnicodeError):
        return _utf8(json.dumps(turns, indent=1, ensure_ascii=False))


def _utf8(text: str) -> bytes:
    """UTF-8; a lone surrogate (which UTF-8 cannot hold) is written as its escape."""
    return text.encode(errors="backslashreplace")


def stages_test_output(candidate: Candidate, mode: str) -> bool:
    """Whether ``tests.txt`` is staged: in rewards mode, when the test output says more than
    the outcome the reward already gives (not "hidden tests passed", not empty)."""
    output = candidate.test_output
    return mode == "rewards" and output is not None and not says_only_the_outcome(output)


def turn_files(base: str, candidate: Candidate) -> dict[str, bytes]:
    """``<base>/turns/NNN.md`` for each turn, each exactly ``candidate.turns[n - 1]`` (the
    text the citation check reads), and ``<base>/turns/index.md``, a line per turn."""
    count = len(candidate.turns)
    files = {
        f"{base}/{TURNS_DIR}/{turn_file_name(n, count)}": _utf8(turn)
        for n, turn in enumerate(candidate.turns, start=1)
    }
    files[f"{base}/{TURN_INDEX}"] = _utf8(render_turn_index(candidate))
    return files


def grader_files(data: GroupGradeData, grade_root: str) -> dict[str, bytes]:
    """Every file staged in the grader box, as the bytes written. Rewards and test output
    are left out in advantages mode, where the grader judges without them."""
    root = grade_root.rstrip("/") or "/"
    files = {f"{root}/{TASK_FILE}": _utf8(render_task(data))}
    for path, content in data.privileged.items():
        files[f"{root}/{PRIVILEGED_DIR}/{safe_relative(path)}"] = _utf8(content)
    for c in data.candidates:
        base = f"{root}/{c.label}"
        files[f"{base}/turns.json"] = turns_json(c.turns)
        files.update(turn_files(base, c))
        files[f"{base}/digest.md"] = _utf8(render_digest(c, data.mode))
        if c.patch is not None:
            files[f"{base}/patch.diff"] = _utf8(c.patch)
        if stages_test_output(c, data.mode):
            files[f"{base}/tests.txt"] = _utf8(c.test_output)
        for path, content in c.files.items():
            files[f"{base}/files/{safe_relative(path)}"] = _utf8(content)
    files[f"{root}/{MANIFEST_FILE}"] = render_manifest(data, root, files)
    return files


def tar_archive(files: dict[str, bytes], root: str) -> bytes:
    """``files`` (every path below ``root``) as one tar archive of paths relative to
    ``root``: the grader box's files in one upload, unpacked there with ``tar -xf``. GNU
    format, which GNU and busybox tar both read, long paths included."""
    prefix = root.rstrip("/") + "/"
    buffer = io.BytesIO()
    now = int(time.time())
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for path, content in files.items():
            if not path.startswith(prefix):
                raise ValueError(f"staged file {path!r} is not below {root!r}")
            info = tarfile.TarInfo(path[len(prefix) :])
            info.size, info.mode, info.mtime = len(content), 0o644, now
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


STAGING_CONCURRENCY = 8


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` (paths relative to ``root``, as ``SubprocessRuntime.write`` takes them):
    each folder made once, each file with one ``write`` call where the OS allows."""
    made: set[str] = set()
    for path, content in files.items():
        target = os.path.join(root, path)
        folder = os.path.dirname(target)
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)


ARCHIVE_MIN_FILES = 32
"""From this many files on, a runtime that is not a host directory gets one archive."""


async def stage_files(
    runtime: vf.Runtime, render: Callable[[], dict[str, bytes]], *, root: str | None = None
) -> None:
    """Write the files ``render`` returns into the box, rendering off the event loop (a large
    group takes long enough to stall it): render and write in one worker thread on the
    subprocess runtime (its box is a host directory). Elsewhere every upload is a round trip,
    and a group has a file per turn: with ``root`` (every path lies below it) and enough files,
    they go as one tar archive unpacked in the box; where that fails (no ``tar`` there), a few
    uploads at a time."""
    if isinstance(runtime, SubprocessRuntime):
        workdir = runtime.workdir
        await asyncio.to_thread(lambda: write_tree(workdir, render()))
        return
    files = await asyncio.to_thread(render)
    if (
        root is not None
        and len(files) >= ARCHIVE_MIN_FILES
        and await _unpack_archive(runtime, files, root)
    ):
        return
    gate = asyncio.Semaphore(STAGING_CONCURRENCY)

    async def put(path: str, content: bytes) -> None:
        async with gate:
            await runtime.write(path, content)

    await asyncio.gather(*(put(path, content) for path, content in files.items()))


_UNPACK = 'mkdir -p -- "$2" && tar -xf "$1" -C "$2"; rc=$?; rm -f -- "$1"; exit $rc'


async def _unpack_archive(runtime: vf.Runtime, files: dict[str, bytes], root: str) -> bool:
    """Upload ``files`` as one archive and unpack it under ``root``; False if that failed."""
    archive = await asyncio.to_thread(tar_archive, files, root)
    path = f"{root.rstrip('/')}/.staging-{uuid.uuid4().hex}.tar"
    try:
        await runtime.write(path, archive)
        result = await runtime.run(["sh", "-c", _UNPACK, "sh", path, root], {})
    except (SandboxError, OSError) as e:
        logger.warning("staging: the archive could not be unpacked (%s); uploading file by file", e)
        return False
    if result.exit_code != 0:
        detail = (result.stderr or result.stdout).strip()[-300:]
        logger.warning("staging: tar failed (%s); uploading file by file", detail)
        return False
    return True
