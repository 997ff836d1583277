"""Prime boxes: a candidate's box restored from a DURABLE Prime sandbox checkpoint, with no
network egress, driven through the ``prime-sandboxes`` SDK.

Also the checkpoint helpers a solver taskset uses to give its candidates boxes
(``make_prime_checkpoint``, ``checkpoint_runtime``) and the deletion after grading
(``PrimeBackend.delete_checkpoints``).

Credentials come from the SDK defaults (``PRIME_API_KEY`` or ``~/.prime/config.json``, base URL
from ``PRIME_API_BASE_URL`` / ``PRIME_BASE_URL``) unless passed explicitly; nothing is read at
import time, and the client is made on first use.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import shlex
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

import httpx
from prime_sandboxes import (
    APIError,
    AsyncSandboxClient,
    CommandTimeoutError,
    CreateSandboxRequest,
    Sandbox,
)

from group_grade.boxes.base import (
    Box,
    BoxBackend,
    BoxError,
    CommandResult,
    DeleteReport,
    split_checkpoint,
)
from group_grade.layout import RESULTS_SUBDIR

if TYPE_CHECKING:
    from verifiers.v1.runtimes.prime import PrimeRuntime

logger = logging.getLogger(__name__)

GRADE_DIR_PARENT = "/tmp"
"""Where a prime box's grading area is made, under a random name."""
TIMEOUT_EXIT_CODE = 124
"""``exit_code`` of a command killed by its timeout (as coreutils ``timeout``)."""
KILL_GRACE_SECONDS = 5
"""A timed-out command gets SIGTERM, then SIGKILL this much later."""
_RPC_GRACE_SECONDS = 10
"""Extra time the SDK call waits beyond the in-box timeout before giving up itself."""

_RUN_SCRIPT = """exec 2>&1
c={command}
if timeout -k 1 5 true >/dev/null 2>&1; then exec timeout -k {grace} {seconds} /bin/bash -c "$c"; fi
exec /bin/bash -c "$c"
"""
"""Runs the command with stderr merged into stdout, under coreutils/busybox ``timeout`` when
the image has one (it kills the command's whole process group and keeps the output so far);
otherwise only the SDK deadline applies."""


def prime_client(api_key: str | None = None, base_url: str | None = None) -> AsyncSandboxClient:
    """An SDK client; ``api_key`` / ``base_url`` default to the SDK's (env vars, then
    ``~/.prime/config.json``). Close it with ``await client.aclose()``."""
    client = AsyncSandboxClient(api_key=api_key)
    if base_url is not None:
        client.client.base_url = base_url.rstrip("/").removesuffix("/api/v1")
    return client


def _http_status(exc: BaseException) -> int | None:
    """The HTTP status behind an SDK ``APIError`` (it keeps it only in the exception chain or
    in its ``"HTTP <code>: ..."`` message)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, httpx.HTTPStatusError):
            return current.response.status_code
        current = current.__cause__ or current.__context__
    match = re.match(r"HTTP (\d{3})\b", str(exc))
    return int(match.group(1)) if match else None


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


async def _delete_sandbox(client: AsyncSandboxClient, sandbox_id: str) -> None:
    try:
        await client.delete(sandbox_id)
    except Exception as exc:
        logger.warning("prime: could not delete sandbox %s: %s", sandbox_id, _describe(exc))


_deletions: set[asyncio.Task[None]] = set()
"""Sandbox deletions in flight, referenced so that they finish even if their caller is gone."""


def _spawn_deletion(client: AsyncSandboxClient, sandbox_id: str) -> asyncio.Task[None]:
    task = asyncio.ensure_future(_delete_sandbox(client, sandbox_id))
    _deletions.add(task)
    task.add_done_callback(_deletions.discard)
    return task


async def _create_sandbox(client: AsyncSandboxClient, request: CreateSandboxRequest) -> str:
    """Create a sandbox and return its id. If the caller is cancelled while the request is
    in flight, the sandbox it creates is deleted once the request completes."""
    task: asyncio.Task[Sandbox] = asyncio.ensure_future(client.create(request))
    try:
        return (await asyncio.shield(task)).id
    except asyncio.CancelledError:

        def delete_orphan(done: asyncio.Task[Sandbox]) -> None:
            if not done.cancelled() and done.exception() is None:
                _spawn_deletion(client, done.result().id)

        task.add_done_callback(delete_orphan)
        raise


class PrimeBox(Box):
    """A running Prime sandbox restored from a candidate's checkpoint (made by
    ``PrimeBackend.restore``). Relative paths are relative to ``workdir``."""

    def __init__(
        self, client: AsyncSandboxClient, sandbox_id: str, *, workdir: str, checkpoint: str
    ) -> None:
        self.id = sandbox_id
        self.workdir = workdir
        self.checkpoint = checkpoint
        self.grade_dir = f"{GRADE_DIR_PARENT}/grade-{uuid.uuid4().hex}"
        """A fresh directory whose name the candidate could not predict (made by
        ``stage_grading``)."""
        self._client = client
        self._closed = False

    def _path(self, path: str) -> str:
        return path if path.startswith("/") else f"{self.workdir.rstrip('/')}/{path}"

    def _check_open(self) -> None:
        if self._closed:
            raise BoxError(f"prime sandbox {self.id} is closed")

    async def run(
        self,
        command: str,
        *,
        timeout: float,
        env: dict[str, str] | None = None,
        workdir: str | None = None,
    ) -> CommandResult:
        """Run ``bash -c command`` in ``workdir`` (default: the box's) with ``env`` added,
        stderr merged into stdout. A command still running after ``timeout`` seconds is
        killed (whole process group) and returns ``timed_out=True``, exit code 124 and the
        output so far; if the sandbox cannot report it, the output is empty. Raises BoxError
        when the sandbox fails (gone, unreachable, bad ``workdir``)."""
        self._check_open()
        seconds = max(1, math.ceil(timeout))
        script = _RUN_SCRIPT.format(
            command=shlex.quote(command), grace=KILL_GRACE_SECONDS, seconds=seconds
        )
        started = time.monotonic()
        try:
            response = await self._client.execute_command(
                self.id,
                script,
                working_dir=self._path(workdir) if workdir is not None else self.workdir,
                env={**self.grade_env(), **(env or {})},
                timeout=seconds + KILL_GRACE_SECONDS + _RPC_GRACE_SECONDS,
            )
        except CommandTimeoutError:
            return CommandResult(TIMEOUT_EXIT_CODE, "", timed_out=True)
        except (APIError, RuntimeError) as exc:
            raise BoxError(f"command failed in prime sandbox {self.id}: {exc}") from exc
        output = response.stdout + response.stderr
        killed = response.exit_code in (TIMEOUT_EXIT_CODE, 128 + 9)
        if killed and time.monotonic() - started >= seconds:
            return CommandResult(TIMEOUT_EXIT_CODE, output, timed_out=True)
        return CommandResult(response.exit_code, output)

    async def stage_grading(self, files: dict[str, bytes]) -> None:
        """Make the grading area (``mkdir`` fails if anything is already there), upload the
        files into it, then make it read-only."""
        area = shlex.quote(self.grade_dir)
        made = await self.run(
            f"umask 022 && mkdir -m 0755 {area} && mkdir {area}/{RESULTS_SUBDIR}", timeout=60
        )
        if made.exit_code != 0:
            raise BoxError(f"cannot make the grading area {self.grade_dir}: {made.output[-500:]}")
        for path, data in files.items():
            await self.write(f"{self.grade_dir}/{path}", data)
        sealed = await self.run(
            f"cd {area} && find . -path ./{RESULTS_SUBDIR} -prune -o -exec chmod a-w {{}} +",
            timeout=60,
        )
        if sealed.exit_code != 0:
            raise BoxError(f"cannot seal the grading area: {sealed.output[-500:]}")

    async def read_result(self, name: str, *, max_bytes: int) -> bytes | None:
        path = f"{self.grade_dir}/{RESULTS_SUBDIR}/{name}"
        probe = await self.run(
            f"test -f {shlex.quote(path)} && ! test -L {shlex.quote(path)}", timeout=60
        )
        if probe.exit_code != 0:
            return None
        data = await self.read(path)
        if len(data) > max_bytes:
            raise BoxError(f"result {name!r} is larger than {max_bytes} bytes")
        return data

    async def read(self, path: str) -> bytes:
        self._check_open()
        with tempfile.TemporaryDirectory(prefix="gg-prime-") as directory:
            local = Path(directory) / "download"
            try:
                await self._client.download_file(self.id, self._path(path), str(local))
            except (APIError, RuntimeError) as exc:
                raise BoxError(f"cannot read {path!r} in prime sandbox {self.id}: {exc}") from exc
            return await asyncio.to_thread(local.read_bytes)

    async def write(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path``; missing parent directories are created."""
        self._check_open()
        target = self._path(path)
        try:
            await self._client.upload_bytes(
                self.id, target, data, filename=PurePosixPath(target).name or "file"
            )
        except (APIError, RuntimeError) as exc:
            raise BoxError(f"cannot write {path!r} in prime sandbox {self.id}: {exc}") from exc

    async def close(self) -> None:
        """Delete the sandbox. Idempotent; never raises (failures are logged). The deletion
        completes even if the caller is cancelled."""
        if self._closed:
            return
        self._closed = True
        await asyncio.shield(_spawn_deletion(self._client, self.id))


class PrimeBackend(BoxBackend):
    """Restores ``prime:<checkpoint id>`` checkpoints into new Prime sandboxes created with
    an empty network allowlist (no egress at all, DNS included).

    ``workdir`` is where commands run by default and what relative paths are relative to;
    ``start_timeout`` bounds a restore (create + wait until running and reachable). Sandboxes
    live at most ``timeout_minutes`` and delete themselves after ``idle_timeout_minutes``
    without commands or file transfers (a backstop for leaks). ``client`` shares an existing
    SDK client (the backend then never closes it); otherwise one is made on first use from
    ``api_key`` / ``base_url`` or the SDK defaults. Close boxes before ``aclose()``."""

    scheme = "prime"

    def __init__(
        self,
        *,
        workdir: str = "/app",
        cpu_cores: float = 1.0,
        memory_gb: float = 2.0,
        timeout_minutes: int = 240,
        idle_timeout_minutes: int | None = 60,
        labels: Sequence[str] = ("group-grade",),
        start_timeout: float = 600.0,
        api_key: str | None = None,
        base_url: str | None = None,
        client: AsyncSandboxClient | None = None,
    ) -> None:
        self.workdir = workdir
        self.cpu_cores = cpu_cores
        self.memory_gb = memory_gb
        self.timeout_minutes = timeout_minutes
        self.idle_timeout_minutes = idle_timeout_minutes
        self.labels = list(labels)
        self.start_timeout = start_timeout
        self._api_key = api_key
        self._base_url = base_url
        self._shared = client
        self._own: AsyncSandboxClient | None = None
        self._own_loop: asyncio.AbstractEventLoop | None = None

    def client(self) -> AsyncSandboxClient:
        """The SDK client in use (one per event loop when the backend makes its own)."""
        if self._shared is not None:
            return self._shared
        loop = asyncio.get_running_loop()
        if self._own is None or self._own_loop is not loop:
            self._own = prime_client(self._api_key, self._base_url)
            self._own_loop = loop
        return self._own

    async def aclose(self) -> None:
        """Close the SDK client this backend made (not a shared one)."""
        own, self._own, self._own_loop = self._own, None, None
        if own is not None:
            await own.aclose()

    async def restore(self, checkpoint: str) -> PrimeBox:
        """A new sandbox from the DURABLE checkpoint, running and reachable. Raises BoxError
        with the API's reason (unknown or not durable checkpoint, quota, start failure...)."""
        scheme, ref = split_checkpoint(checkpoint)
        if scheme != self.scheme:
            raise BoxError(f"checkpoint {checkpoint!r} is not a prime checkpoint")
        try:
            request = CreateSandboxRequest(
                name=f"group-grade-{uuid.uuid4().hex[:8]}",
                checkpoint_id=ref,
                cpu_cores=self.cpu_cores,
                memory_gb=self.memory_gb,
                network_allowlist=[],
                timeout_minutes=self.timeout_minutes,
                idle_timeout_minutes=self.idle_timeout_minutes,
                labels=self.labels,
            )
        except ValueError as exc:
            raise BoxError(f"checkpoint {checkpoint!r}: {exc}") from exc
        client = self.client()
        try:
            sandbox_id = await _create_sandbox(client, request)
        except Exception as exc:
            raise BoxError(f"cannot restore {checkpoint!r}: {exc}") from exc
        box = PrimeBox(client, sandbox_id, workdir=self.workdir, checkpoint=checkpoint)
        try:
            async with asyncio.timeout(self.start_timeout):
                # The SDK turns max_attempts into a wall-clock budget of 5 + 2 * (n - 5) s.
                await client.wait_for_creation(
                    sandbox_id, max_attempts=math.ceil(self.start_timeout / 2) + 5
                )
        except BaseException as exc:
            await box.close()
            if isinstance(exc, TimeoutError):
                reason = f"not running within {self.start_timeout:g}s"
            elif isinstance(exc, Exception):
                reason = _describe(exc)
            else:
                raise
            raise BoxError(
                f"prime sandbox {sandbox_id} restored from {checkpoint!r} did not start: {reason}"
            ) from exc
        return box

    async def delete_checkpoints(self, checkpoints: list[str]) -> DeleteReport:
        """Delete each ``prime:<id>``: deleted; HTTP 409 (pending, or the active tip of a
        live sandbox, e.g. a box restored from it) -> ``retry_later``; anything else ->
        ``failed`` with the reason. Never raises."""
        client = self.client()
        outcomes = await asyncio.gather(
            *(_delete_checkpoint(client, checkpoint) for checkpoint in checkpoints)
        )
        report = DeleteReport()
        for checkpoint, (outcome, reason) in zip(checkpoints, outcomes, strict=True):
            if outcome == "deleted":
                report.deleted.append(checkpoint)
            elif outcome == "retry_later":
                report.retry_later.append(checkpoint)
            else:
                report.failed[checkpoint] = reason
        return report


async def _delete_checkpoint(
    client: AsyncSandboxClient, checkpoint: str
) -> tuple[Literal["deleted", "retry_later", "failed"], str]:
    """(outcome, reason) of deleting one checkpoint; never raises."""
    try:
        scheme, ref = split_checkpoint(checkpoint)
        if scheme != PrimeBackend.scheme:
            raise BoxError(f"checkpoint {checkpoint!r} is not a prime checkpoint")
        await client.delete_checkpoint(ref)
    except Exception as exc:
        if isinstance(exc, APIError) and _http_status(exc) == 409:
            logger.info("prime: checkpoint %s in use, retry later: %s", checkpoint, exc)
            return "retry_later", str(exc)
        logger.warning("prime: could not delete checkpoint %s: %s", checkpoint, exc)
        return "failed", _describe(exc)
    return "deleted", ""


async def make_prime_checkpoint(
    sandbox_id: str, *, client: AsyncSandboxClient | None = None, timeout: float = 300
) -> str:
    """Checkpoint a running sandbox's filesystem and wait (up to ``timeout`` s) until the
    checkpoint is DURABLE; returns ``"prime:<checkpoint id>"``. Keep the sandbox alive until
    this returns (a pending checkpoint is discarded with its sandbox). Raises BoxError."""
    sdk = client if client is not None else prime_client()
    try:
        try:
            pending = await sdk.checkpoint(sandbox_id)
        except APIError as exc:
            raise BoxError(f"cannot checkpoint prime sandbox {sandbox_id}: {exc}") from exc
        try:
            durable = await sdk.wait_for_checkpoint(pending.id, timeout_seconds=timeout)
        except TimeoutError as exc:
            raise BoxError(
                f"checkpoint {pending.id} of prime sandbox {sandbox_id} was not DURABLE within "
                f"{timeout:g}s (it may still become durable)"
            ) from exc
        except (APIError, RuntimeError) as exc:
            raise BoxError(
                f"checkpoint {pending.id} of prime sandbox {sandbox_id} failed: {exc}"
            ) from exc
        return f"prime:{durable.id}"
    finally:
        if client is None:
            with contextlib.suppress(Exception):
                await sdk.aclose()


async def checkpoint_runtime(
    runtime: PrimeRuntime, *, client: AsyncSandboxClient | None = None, timeout: float = 300
) -> str:
    """``make_prime_checkpoint`` for a started verifiers ``PrimeRuntime`` (its sandbox id is
    ``runtime.info.id``); call it before the runtime stops."""
    sandbox_id = runtime.info.id
    if sandbox_id is None:
        raise BoxError("the prime runtime has no sandbox (not started)")
    return await make_prime_checkpoint(sandbox_id, client=client, timeout=timeout)
