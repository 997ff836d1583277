"""A local fake of the Prime sandbox API that the unpatched ``prime-sandboxes`` SDK talks to.

Two HTTP servers on 127.0.0.1 (port 0), run by uvicorn in a thread with its own event loop:

- the **control plane** (``base_url``; point ``PRIME_API_BASE_URL`` at it), JSON under
  ``/api/v1``, authenticated with ``Authorization: Bearer <api key>``;
- the **gateway** (``gateway_url``, handed out by ``POST /sandbox/{id}/auth``), serving file
  upload / download / read-file and the Connect RPC ``command_session.CommandSession/Start``
  (server streaming, binary protobuf) under ``/{user_ns}/{job_id}``, authenticated with the
  per-sandbox token.

Wire shapes follow prime-sandboxes 0.5.1 (``prime_sandboxes/models.py``, ``sandbox.py``,
``core/client.py``): sandboxes are camelCase JSON, checkpoints snake_case; control-plane
errors are FastAPI-style ``{"detail": "..."}`` bodies (the SDK turns them into
``APIError("HTTP <code>: <detail>")``); gateway errors use the bodies the SDK recognises
(``410 {"error": "sandbox_terminated"}``).

Behaviour:

- A sandbox is ``PENDING`` for ``sandbox_start_seconds`` after create, then ``RUNNING``;
  deleted -> ``TERMINATED``. Its filesystem is a directory on this machine: sandbox path
  ``/x/y`` is ``<root>/sandboxes/<id>/fs/x/y`` for file transfers and working directories.
  Commands really run here (the SDK's ``/bin/bash -c <command>``) in a clean environment, in
  their own process group, killed at the Connect deadline (reported as
  ``DEADLINE_EXCEEDED``), inside a bubblewrap jail whose root is the sandbox's directory (with
  this machine's ``/usr`` and the test's Python mounted read-only), so absolute paths in a
  command refer to the sandbox, as in a real one.
- A checkpoint copies the sandbox directory; it is ``PENDING`` for
  ``checkpoint_pending_seconds`` (read when it is requested), then ``DURABLE``. It becomes the
  sandbox's "active tip"; a sandbox restored from a checkpoint has that checkpoint as its tip.
  Deleting a checkpoint gives 409 while it is pending or the tip of a live sandbox, 404 when
  unknown. Deleting a sandbox discards its pending checkpoints. Only DURABLE checkpoints
  restore (409 otherwise, 404 when unknown).
- Network egress settings sent at create are recorded (``create_requests``), not enforced.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

import uvicorn
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication, Endpoint
from google.protobuf.message import Message
from prime_sandboxes._connectrpc import GOOGLE_PROTOBUF_BINARY_CODEC
from prime_sandboxes._proto.command_session import command_session_pb2 as pb
from prime_sandboxes.rpc_command_session import COMMAND_SESSION_START_RPC_METHOD
from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from group_grade.boxes import sandbox as sandboxing

_PATH = os.pathsep.join(
    [
        os.path.dirname(sys.executable),
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    ]
)
"""As in an image with Python: the test's own (mounted in every command's jail) comes first."""
_READ_FILE_LIMIT = 10 * 1024 * 1024
_CHUNK = 64 * 1024
_DRAIN_SECONDS = 0.5
"""Output still read after the shell exits while leftover background processes hold it."""
_START_TIMEOUT = 10.0


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _detail(status: int, detail: Any) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status)


@dataclass
class FakeCheckpoint:
    id: str
    sandbox_id: str
    parent_id: str | None
    depth: int
    docker_image: str
    disk_size_gb: float
    snapshot: Path
    size: int
    created_at: str
    ready_at: float
    """``time.monotonic()`` at which the checkpoint becomes DURABLE."""

    @property
    def state(self) -> str:
        return "DURABLE" if time.monotonic() >= self.ready_at else "PENDING"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "sandbox_id": self.sandbox_id,
            "parent_id": self.parent_id,
            "team_id": None,
            "state": self.state,
            "depth": self.depth,
            "docker_image": self.docker_image,
            "disk_size_bytes": int(self.disk_size_gb * 1024**3),
            "stored_bytes": self.size,
            "occupied_bytes": self.size,
            "error": None,
            "created_at": self.created_at,
            "updated_at": self.created_at if self.state == "PENDING" else _now(),
        }


@dataclass
class FakeSandbox:
    id: str
    job_id: str
    token: str
    request: dict[str, Any]
    docker_image: str
    disk_size_gb: float
    fs: Path
    created_at: str
    running_at: float
    """``time.monotonic()`` at which the sandbox becomes RUNNING."""
    tip: str | None = None
    terminated_at: str | None = None
    process_groups: set[int] = field(default_factory=set)
    rpc: ConnectASGIApplication[Any] | None = None

    @property
    def status(self) -> str:
        if self.terminated_at is not None:
            return "TERMINATED"
        return "RUNNING" if time.monotonic() >= self.running_at else "PENDING"

    @property
    def alive(self) -> bool:
        return self.terminated_at is None

    def to_json(self) -> dict[str, Any]:
        req = self.request
        status = self.status
        return {
            "id": self.id,
            "name": req["name"],
            "dockerImage": self.docker_image,
            "startCommand": req.get("start_command"),
            "cpuCores": req.get("cpu_cores", 1.0),
            "memoryGB": req.get("memory_gb", 1.0),
            "diskSizeGB": self.disk_size_gb,
            "diskMountPath": "/",
            "gpuCount": req.get("gpu_count", 0),
            "gpuType": req.get("gpu_type"),
            "vm": bool(req.get("vm", False)),
            "networkAllowlist": req.get("network_allowlist"),
            "networkDenylist": req.get("network_denylist"),
            "status": status,
            "timeoutMinutes": req.get("timeout_minutes", 60),
            "idleTimeoutMinutes": req.get("idle_timeout_minutes"),
            "terminationReason": "DELETED" if self.terminated_at else None,
            "environmentVars": req.get("environment_vars"),
            "labels": req.get("labels", []),
            "createdAt": self.created_at,
            "updatedAt": self.terminated_at or self.created_at,
            "startedAt": self.created_at if status != "PENDING" else None,
            "terminatedAt": self.terminated_at,
            "userId": "user-test",
            "teamId": req.get("team_id"),
            "region": req.get("region"),
        }

    def path(self, sandbox_path: str) -> Path | None:
        """The host path standing for ``sandbox_path`` (relative = from ``/``); None if it
        would leave the sandbox directory."""
        root = self.fs.resolve()
        target = (root / sandbox_path.lstrip("/")).resolve()
        return target if target.is_relative_to(root) else None


class _CommandSessionApp(ConnectASGIApplication[Any]):
    """The gateway's ``command_session.CommandSession`` Connect service (``Start`` only)."""

    @property
    def path(self) -> str:
        return "/command_session.CommandSession"


class _RPCRouter:
    """ASGI app forwarding ``/{ns}/{job}/command_session.CommandSession/*`` to the addressed
    sandbox's Connect service, mounted at ``/{ns}/{job}``."""

    def __init__(self, api: FakePrimeAPI) -> None:
        self._api = api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        params = scope["path_params"]
        sandbox = self._api._jobs.get(params["job"]) if params["ns"] == self._api.user_ns else None
        app = sandbox.rpc if sandbox is not None and sandbox.rpc else self._api._missing_rpc
        scope = {**scope, "root_path": f"/{params['ns']}/{params['job']}"}
        await app(scope, receive, send)


def _event(**kwargs: Any) -> Message:
    return pb.StartResponse(event=pb.CommandSessionEvent(**kwargs))


def _jail(fs: Path, cwd: str) -> list[str]:
    """bwrap argv running a program with ``fs`` as its root directory."""
    found = sandboxing.probe().sandbox
    if found is None:
        raise RuntimeError(f"the fake Prime API needs bubblewrap: {sandboxing.probe().reason}")
    argv = [found.bwrap, "--unshare-user", "--uid", "0", "--gid", "0", "--unshare-pid"]
    argv += ["--die-with-parent", "--bind", str(fs), "/"]
    for mount in sandboxing.system_mounts():
        argv += ["--ro-bind", mount.source, mount.dest]
    for name in sandboxing.SYSTEM_LINKS:
        if os.path.islink(f"/{name}"):
            argv += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
    return [*argv, "--proc", "/proc", "--dev", "/dev", "--chdir", cwd, "--"]


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _tree_size(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


class FakePrimeAPI:
    """The fake API; use as a context manager (or ``start()`` / ``stop()``).

    ``sandbox_start_seconds`` and ``checkpoint_pending_seconds`` may be changed while it runs;
    they apply to sandboxes / checkpoints created afterwards."""

    def __init__(
        self,
        root: Path,
        *,
        api_key: str = "test-key",
        sandbox_start_seconds: float = 0.01,
        checkpoint_pending_seconds: float = 0.3,
        user_ns: str = "user-test",
    ) -> None:
        self.root = root
        self.api_key = api_key
        self.sandbox_start_seconds = sandbox_start_seconds
        self.checkpoint_pending_seconds = checkpoint_pending_seconds
        self.user_ns = user_ns
        self.create_requests: list[dict[str, Any]] = []
        """Every ``POST /sandbox`` body, in order (egress settings included)."""
        self.requests: list[tuple[str, str]] = []
        """(method, path) of every request to either server."""
        self.served_checkpoint_states: dict[str, list[str]] = {}
        """Checkpoint id -> every ``state`` this fake has reported for it, in order."""
        self.sandboxes: dict[str, FakeSandbox] = {}
        self.checkpoints: dict[str, FakeCheckpoint] = {}
        self._jobs: dict[str, FakeSandbox] = {}
        self._idempotency: dict[str, str] = {}
        self._servers: list[uvicorn.Server] = []
        self._thread: threading.Thread | None = None
        self._missing_rpc = self._rpc_app(None)
        self.base_url = ""
        self.gateway_url = ""

    # ---------------------------------------------------------------- lifecycle

    def __enter__(self) -> FakePrimeAPI:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        (self.root / "sandboxes").mkdir(parents=True, exist_ok=True)
        (self.root / "checkpoints").mkdir(parents=True, exist_ok=True)
        sockets = []
        for app in (self._control_app(), self._gateway_app()):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
            config = uvicorn.Config(
                self._logged(app),
                lifespan="off",
                log_level="warning",
                access_log=False,
                timeout_graceful_shutdown=2,
            )
            self._servers.append(uvicorn.Server(config))
        api_port, gateway_port = (s.getsockname()[1] for s in sockets)
        self.base_url = f"http://127.0.0.1:{api_port}"
        self.gateway_url = f"http://127.0.0.1:{gateway_port}"

        async def serve() -> None:
            await asyncio.gather(
                *(
                    server.serve(sockets=[sock])
                    for server, sock in zip(self._servers, sockets, strict=True)
                )
            )

        self._thread = threading.Thread(
            target=asyncio.run, args=(serve(),), name="fake-prime-api", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT
        while not all(server.started for server in self._servers):
            if time.monotonic() > deadline or not self._thread.is_alive():
                self.stop()
                raise RuntimeError("the fake Prime API did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        for server in self._servers:
            server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        for sandbox in self.sandboxes.values():
            for pgid in sandbox.process_groups:
                _killpg(pgid)
            sandbox.process_groups.clear()

    # ---------------------------------------------------------------- test helpers

    def make_durable(self, checkpoint_id: str) -> None:
        """End a checkpoint's PENDING phase now."""
        self.checkpoints[checkpoint_id].ready_at = time.monotonic()

    def sandbox_root(self, sandbox_id: str) -> Path:
        """The host directory standing for the sandbox's ``/``."""
        return self.sandboxes[sandbox_id].fs

    # ---------------------------------------------------------------- plumbing

    def _logged(self, app: Callable[[Scope, Receive, Send], Any]) -> Any:
        async def logged(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                self.requests.append((scope["method"], scope["path"]))
            await app(scope, receive, send)

        return logged

    def _authorized(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {self.api_key}"

    def _control_app(self) -> Starlette:
        def route(path: str, handler: Callable[..., Any], method: str) -> Route:
            async def endpoint(request: Request) -> Response:
                if not self._authorized(request):
                    return _detail(401, "Invalid API key")
                return await handler(request, **request.path_params)

            return Route(f"/api/v1{path}", endpoint, methods=[method])

        return Starlette(
            routes=[
                route("/sandbox", self._create, "POST"),
                route("/sandbox", self._list, "GET"),
                route("/sandbox/status:batchGet", self._batch_status, "POST"),
                route("/sandbox/checkpoints:batchGet", self._batch_checkpoints, "POST"),
                route("/sandbox/checkpoints/{cid}", self._get_checkpoint, "GET"),
                route("/sandbox/checkpoints/{cid}", self._delete_checkpoint, "DELETE"),
                route("/sandbox/{sid}", self._get, "GET"),
                route("/sandbox/{sid}", self._delete, "DELETE"),
                route("/sandbox/{sid}/error-context", self._error_context, "GET"),
                route("/sandbox/{sid}/auth", self._auth, "POST"),
                route("/sandbox/{sid}/checkpoints", self._checkpoint, "POST"),
                route("/sandbox/{sid}/checkpoints", self._list_checkpoints, "GET"),
                route("/sandbox/{sid}/checkpoints", self._delete_sandbox_checkpoints, "DELETE"),
            ]
        )

    def _gateway_app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/{ns}/{job}/upload", self._upload, methods=["POST"]),
                Route("/{ns}/{job}/download", self._download, methods=["GET"]),
                Route("/{ns}/{job}/read-file", self._read_file, methods=["GET"]),
                Route("/{ns}/{job}/command_session.CommandSession/{method}", _RPCRouter(self)),
            ]
        )

    def _rpc_app(self, sandbox: FakeSandbox | None) -> _CommandSessionApp:
        start = functools.partial(self._start_command, sandbox)
        return _CommandSessionApp(
            service=sandbox,
            endpoints=lambda _: {
                "/command_session.CommandSession/Start": Endpoint.server_stream(
                    COMMAND_SESSION_START_RPC_METHOD, start
                )
            },
            codecs=[GOOGLE_PROTOBUF_BINARY_CODEC],
        )

    def _checkpoint_json(self, checkpoint: FakeCheckpoint) -> dict[str, Any]:
        data = checkpoint.to_json()
        self.served_checkpoint_states.setdefault(checkpoint.id, []).append(data["state"])
        return data

    # ---------------------------------------------------------------- control plane

    async def _create(self, request: Request) -> Response:
        payload = await request.json()
        self.create_requests.append(payload)
        key = payload.get("idempotency_key")
        if key and key in self._idempotency:
            return JSONResponse(self.sandboxes[self._idempotency[key]].to_json(), 201)
        if not payload.get("name"):
            return _detail(422, "name is required")
        if payload.get("network_allowlist") is not None and payload.get("network_denylist"):
            return _detail(422, "network_allowlist and network_denylist are mutually exclusive")
        sid = uuid.uuid4().hex[:24]
        fs = self.root / "sandboxes" / sid / "fs"
        tip = None
        if cid := payload.get("checkpoint_id"):
            if payload.get("docker_image") or payload.get("disk_size_gb") is not None:
                return _detail(422, "omit docker_image and disk_size_gb when restoring")
            checkpoint = self.checkpoints.get(cid)
            if checkpoint is None:
                return _detail(404, f"Checkpoint {cid} not found")
            if checkpoint.state != "DURABLE":
                return _detail(
                    409, f"Checkpoint {cid} is {checkpoint.state}; only DURABLE checkpoints restore"
                )
            await asyncio.to_thread(shutil.copytree, checkpoint.snapshot, fs, symlinks=True)
            image, disk, tip = checkpoint.docker_image, checkpoint.disk_size_gb, cid
        elif payload.get("docker_image"):
            image, disk = payload["docker_image"], float(payload.get("disk_size_gb") or 5.0)
            for sub in ("tmp", "root"):
                (fs / sub).mkdir(parents=True)
        else:
            return _detail(422, "docker_image is required unless checkpoint_id is set")
        sandbox = FakeSandbox(
            id=sid,
            job_id=f"job-{uuid.uuid4().hex[:12]}",
            token=uuid.uuid4().hex,
            request=payload,
            docker_image=image,
            disk_size_gb=disk,
            fs=fs,
            created_at=_now(),
            running_at=time.monotonic() + self.sandbox_start_seconds,
            tip=tip,
        )
        sandbox.rpc = self._rpc_app(sandbox)
        self.sandboxes[sid] = sandbox
        self._jobs[sandbox.job_id] = sandbox
        if key:
            self._idempotency[key] = sid
        return JSONResponse(sandbox.to_json(), 201)

    async def _list(self, request: Request) -> Response:
        query = request.query_params
        page, per_page = int(query.get("page", 1)), int(query.get("per_page", 50))
        labels = set(query.getlist("labels"))
        selected = [
            s
            for s in self.sandboxes.values()
            if (not query.get("status") or s.status == query["status"])
            and labels <= set(s.request.get("labels", []))
            and (query.get("is_active") != "true" or s.alive)
        ]
        window = selected[(page - 1) * per_page : page * per_page]
        return JSONResponse(
            {
                "sandboxes": [s.to_json() for s in window],
                "total": len(selected),
                "page": page,
                "perPage": per_page,
                "hasNext": page * per_page < len(selected),
            }
        )

    async def _batch_status(self, request: Request) -> Response:
        ids = (await request.json()).get("sandbox_ids") or []
        if not 1 <= len(ids) <= 100 or len(set(ids)) != len(ids):
            return _detail(422, "sandbox_ids must hold 1 to 100 unique ids")
        statuses, errors = [], []
        for sid in ids:
            if (sandbox := self.sandboxes.get(sid)) is None:
                errors.append(
                    {"sandbox_id": sid, "code": "NOT_FOUND", "message": "Sandbox not found"}
                )
            else:
                statuses.append({"sandbox_id": sid, "status": sandbox.status})
        return JSONResponse({"statuses": statuses, "errors": errors})

    async def _get(self, request: Request, sid: str) -> Response:
        if (sandbox := self.sandboxes.get(sid)) is None:
            return _detail(404, f"Sandbox {sid} not found")
        return JSONResponse(sandbox.to_json())

    async def _delete(self, request: Request, sid: str) -> Response:
        sandbox = self.sandboxes.get(sid)
        if sandbox is None or not sandbox.alive:
            return _detail(404, f"Sandbox {sid} not found")
        sandbox.terminated_at = _now()
        for pgid in sandbox.process_groups:
            _killpg(pgid)
        sandbox.process_groups.clear()
        for cid, checkpoint in list(self.checkpoints.items()):
            if checkpoint.sandbox_id == sid and checkpoint.state == "PENDING":
                del self.checkpoints[cid]  # "discarded with it" (not yet uploaded)
                await asyncio.to_thread(shutil.rmtree, checkpoint.snapshot, True)
        await asyncio.to_thread(shutil.rmtree, sandbox.fs, True)
        return JSONResponse({"success": True, "message": f"Sandbox {sid} deleted"})

    async def _error_context(self, request: Request, sid: str) -> Response:
        if (sandbox := self.sandboxes.get(sid)) is None:
            return _detail(404, f"Sandbox {sid} not found")
        return JSONResponse({"status": sandbox.status, "errorType": None, "errorMessage": None})

    async def _auth(self, request: Request, sid: str) -> Response:
        sandbox = self.sandboxes.get(sid)
        if sandbox is None or not sandbox.alive:
            return _detail(404, f"Sandbox {sid} not found")
        expires = datetime.now(UTC) + timedelta(hours=1)
        return JSONResponse(
            {
                "gateway_url": self.gateway_url,
                "user_ns": self.user_ns,
                "job_id": sandbox.job_id,
                "token": sandbox.token,
                "expires_at": expires.isoformat().replace("+00:00", "Z"),
            }
        )

    async def _checkpoint(self, request: Request, sid: str) -> Response:
        sandbox = self.sandboxes.get(sid)
        if sandbox is None or not sandbox.alive:
            return _detail(404, f"Sandbox {sid} not found")
        if sandbox.status != "RUNNING":
            return _detail(409, f"Sandbox {sid} is {sandbox.status}, not RUNNING")
        cid = f"ckpt-{uuid.uuid4().hex[:20]}"
        snapshot = self.root / "checkpoints" / cid
        await asyncio.to_thread(shutil.copytree, sandbox.fs, snapshot, symlinks=True)
        parent = self.checkpoints.get(sandbox.tip) if sandbox.tip else None
        checkpoint = FakeCheckpoint(
            id=cid,
            sandbox_id=sid,
            parent_id=sandbox.tip,
            depth=parent.depth + 1 if parent else 1,
            docker_image=sandbox.docker_image,
            disk_size_gb=sandbox.disk_size_gb,
            snapshot=snapshot,
            size=await asyncio.to_thread(_tree_size, snapshot),
            created_at=_now(),
            ready_at=time.monotonic() + self.checkpoint_pending_seconds,
        )
        self.checkpoints[cid] = checkpoint
        sandbox.tip = cid
        return JSONResponse(self._checkpoint_json(checkpoint), 201)

    async def _get_checkpoint(self, request: Request, cid: str) -> Response:
        if (checkpoint := self.checkpoints.get(cid)) is None:
            return _detail(404, f"Checkpoint {cid} not found")
        return JSONResponse(self._checkpoint_json(checkpoint))

    async def _batch_checkpoints(self, request: Request) -> Response:
        ids = (await request.json()).get("checkpoint_ids") or []
        if not 1 <= len(ids) <= 100 or len(set(ids)) != len(ids):
            return _detail(422, "checkpoint_ids must hold 1 to 100 unique ids")
        found, errors = [], []
        for cid in ids:
            if (checkpoint := self.checkpoints.get(cid)) is None:
                errors.append(
                    {"checkpoint_id": cid, "code": "NOT_FOUND", "message": "Checkpoint not found"}
                )
            else:
                found.append(self._checkpoint_json(checkpoint))
        return JSONResponse({"checkpoints": found, "errors": errors})

    async def _list_checkpoints(self, request: Request, sid: str) -> Response:
        if sid not in self.sandboxes:
            return _detail(404, f"Sandbox {sid} not found")
        only = request.query_params.get("checkpoint_id")
        return JSONResponse(
            {
                "checkpoints": [
                    self._checkpoint_json(c)
                    for c in self.checkpoints.values()
                    if c.sandbox_id == sid and (only is None or c.id == only)
                ]
            }
        )

    def _conflict(self, checkpoint: FakeCheckpoint) -> str | None:
        """Why ``checkpoint`` cannot be deleted now (None: it can)."""
        if checkpoint.state == "PENDING":
            return f"Checkpoint {checkpoint.id} is still pending; delete it once it is durable"
        for sandbox in self.sandboxes.values():
            if sandbox.alive and sandbox.tip == checkpoint.id:
                return (
                    f"Checkpoint {checkpoint.id} is the active tip of running sandbox {sandbox.id}"
                )
        return None

    async def _drop_checkpoint(self, checkpoint: FakeCheckpoint) -> None:
        del self.checkpoints[checkpoint.id]
        await asyncio.to_thread(shutil.rmtree, checkpoint.snapshot, True)

    async def _delete_checkpoint(self, request: Request, cid: str) -> Response:
        if (checkpoint := self.checkpoints.get(cid)) is None:
            return _detail(404, f"Checkpoint {cid} not found")
        if (reason := self._conflict(checkpoint)) is not None:
            return _detail(409, reason)
        await self._drop_checkpoint(checkpoint)
        return Response(status_code=204)

    async def _delete_sandbox_checkpoints(self, request: Request, sid: str) -> Response:
        if sid not in self.sandboxes:
            return _detail(404, f"Sandbox {sid} not found")
        deleted, errors = [], []
        for checkpoint in [c for c in self.checkpoints.values() if c.sandbox_id == sid]:
            if (reason := self._conflict(checkpoint)) is not None:
                errors.append(
                    {"checkpoint_id": checkpoint.id, "code": "CONFLICT", "message": reason}
                )
            else:
                await self._drop_checkpoint(checkpoint)
                deleted.append(checkpoint.id)
        return JSONResponse({"deleted": deleted, "errors": errors})

    # ---------------------------------------------------------------- gateway

    def _gateway_sandbox(self, request: Request) -> FakeSandbox | Response:
        params = request.path_params
        sandbox = self._jobs.get(params["job"]) if params["ns"] == self.user_ns else None
        if sandbox is None:
            return JSONResponse({"error": "not_found", "message": "unknown sandbox"}, 404)
        if request.headers.get("authorization") != f"Bearer {sandbox.token}":
            return JSONResponse({"error": "unauthorized", "message": "invalid token"}, 401)
        if not sandbox.alive:
            return JSONResponse(
                {"error": "sandbox_terminated", "message": "sandbox was deleted"}, 410
            )
        if sandbox.status != "RUNNING":
            return JSONResponse({"error": "not_running", "message": "sandbox not running"}, 409)
        return sandbox

    def _gateway_file(self, request: Request) -> tuple[FakeSandbox, Path] | Response:
        sandbox = self._gateway_sandbox(request)
        if isinstance(sandbox, Response):
            return sandbox
        path = request.query_params.get("path", "")
        target = sandbox.path(path) if path else None
        if target is None:
            return JSONResponse({"error": "bad_path", "message": f"invalid path {path!r}"}, 400)
        return sandbox, target

    async def _upload(self, request: Request) -> Response:
        found = self._gateway_file(request)
        if isinstance(found, Response):
            return found
        _, target = found
        async with request.form() as form:
            upload = form.get("file")
            if not isinstance(upload, UploadFile):
                return JSONResponse({"error": "bad_request", "message": "missing file"}, 400)
            data = await upload.read()

        def write() -> None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)

        await asyncio.to_thread(write)
        return JSONResponse(
            {
                "success": True,
                "path": request.query_params["path"],
                "size": len(data),
                "timestamp": _now(),
            }
        )

    async def _read(self, request: Request) -> bytes | Response:
        found = self._gateway_file(request)
        if isinstance(found, Response):
            return found
        _, target = found
        if not target.is_file():
            message = f"file not found: {request.query_params['path']}"
            return JSONResponse({"error": "file_not_found", "message": message}, 404)
        return await asyncio.to_thread(target.read_bytes)

    async def _download(self, request: Request) -> Response:
        data = await self._read(request)
        if isinstance(data, Response):
            return data
        return Response(data, media_type="application/octet-stream")

    async def _read_file(self, request: Request) -> Response:
        data = await self._read(request)
        if isinstance(data, Response):
            return data
        if len(data) > _READ_FILE_LIMIT:
            return JSONResponse({"error": "file_too_large", "message": "file too large"}, 413)
        return JSONResponse({"content": data.decode(errors="replace"), "size": len(data)})

    async def _start_command(
        self, sandbox: FakeSandbox | None, request: Message, ctx: RequestContext[Any, Any]
    ) -> AsyncIterator[Message]:
        """``CommandSession/Start``: run the command, stream start / data / end events."""
        if sandbox is None or not sandbox.alive:
            raise ConnectError(Code.NOT_FOUND, "sandbox not found")
        if ctx.request_headers.get("authorization") != f"Bearer {sandbox.token}":
            raise ConnectError(Code.UNAUTHENTICATED, "invalid sandbox token")
        if sandbox.status != "RUNNING":
            raise ConnectError(Code.UNAVAILABLE, "sandbox is not running yet")
        spec = request.command  # type: ignore[attr-defined]
        cwd = sandbox.path(spec.cwd) if spec.HasField("cwd") else sandbox.fs
        if cwd is None or not cwd.is_dir():
            raise ConnectError(Code.FAILED_PRECONDITION, f"chdir {spec.cwd}: no such directory")
        env = {
            "PATH": _PATH,
            "HOME": "/root",
            "LANG": "C.UTF-8",
            **(sandbox.request.get("environment_vars") or {}),
            **dict(spec.envs),
        }
        loop = asyncio.get_running_loop()
        timeout_ms = ctx.timeout_ms
        deadline = loop.time() + timeout_ms / 1000 if timeout_ms is not None else None
        inside = "/" + cwd.relative_to(sandbox.fs.resolve()).as_posix().removeprefix(".")
        proc = await asyncio.create_subprocess_exec(
            *_jail(sandbox.fs, inside),
            spec.cmd,
            *spec.args,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        sandbox.process_groups.add(proc.pid)
        assert proc.stdout is not None and proc.stderr is not None
        streams = {"stdout": proc.stdout, "stderr": proc.stderr}
        reads = {asyncio.ensure_future(s.read(_CHUNK)): name for name, s in streams.items()}
        waiter = asyncio.ensure_future(proc.wait())
        drain_until: float | None = None
        try:
            yield _event(start=pb.CommandSessionEvent.StartEvent(pid=proc.pid))
            while reads:
                if waiter.done() and drain_until is None:
                    drain_until = loop.time() + _DRAIN_SECONDS
                limits = [t for t in (deadline, drain_until) if t is not None]
                limit = min(limits) - loop.time() if limits else None
                if limit is not None and limit <= 0:
                    if drain_until is not None:
                        break  # background children hold the output open
                    raise ConnectError(Code.DEADLINE_EXCEEDED, "command deadline exceeded")
                waitable = set(reads) if waiter.done() else {*reads, waiter}
                done, _ = await asyncio.wait(
                    waitable, timeout=limit, return_when=asyncio.FIRST_COMPLETED
                )
                for read in [r for r in reads if r in done]:
                    name = reads.pop(read)
                    if chunk := read.result():
                        yield _event(data=pb.CommandSessionEvent.DataEvent(**{name: chunk}))
                        reads[asyncio.ensure_future(streams[name].read(_CHUNK))] = name
            remaining = None if deadline is None else max(0.0, deadline - loop.time())
            try:
                code = await asyncio.wait_for(asyncio.shield(waiter), remaining)
            except TimeoutError:
                raise ConnectError(Code.DEADLINE_EXCEEDED, "command deadline exceeded") from None
            status = f"exit status {code}" if code >= 0 else f"signal: {signal.Signals(-code).name}"
            end = pb.CommandSessionEvent.EndEvent(
                exit_code=code if code >= 0 else 128 - code, exited=code >= 0, status=status
            )
            yield _event(end=end)
        finally:
            for read in reads:
                read.cancel()
            if proc.returncode is None:  # deadline, client gone or server stopping
                _killpg(proc.pid)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(waiter), 5)
            waiter.cancel()
            if not _group_alive(proc.pid):  # never signal a recycled process group later
                sandbox.process_groups.discard(proc.pid)
