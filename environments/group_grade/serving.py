"""Serving the env with verifiers' ``serve_env`` so that it fails loudly.

verifiers 0.4.0's worker pool (``verifiers.v1.serve.pool.EnvServerPool``) starts its worker
processes and keeps listening when they die: a worker whose runtime cannot start (the
default ``prime`` runtime without credentials, say) exits at once, the pool has already
logged ``workers=2/2``, and requests routed to it wait forever. ``serve`` runs the same pool
with each worker watched: the first worker that exits ends the pool, and ``serve`` returns
its reason (what the worker raised) as ``ServeFailure``. A single in-process server
(``max_workers`` 1) is run as verifiers runs it, its failure caught the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from typing import Any

from verifiers.v1.serve import pool as vf_pool

logger = logging.getLogger(__name__)
WATCH_SECONDS = 0.2


class ServeFailure(RuntimeError):
    """The env server stopped serving: a worker died, or the server failed to start."""


def describe(error: BaseException) -> str:
    if isinstance(error, SystemExit):
        return str(error.code)
    return f"{type(error).__name__}: {error}"


def _supervised_worker(*, reasons: Any, **kwargs: Any) -> None:
    """A pool worker (``serve_env`` with one worker) that tells its parent why it ended."""
    try:
        vf_pool.serve_env(**kwargs)
    except BaseException as e:
        with contextlib.suppress(Exception):
            reasons.send(describe(e))
        raise


class SupervisedPool(vf_pool.EnvServerPool):
    """``EnvServerPool`` whose run ends as soon as one of its workers exits."""

    failure: str | None = None

    def _spawn_worker(self) -> None:
        # verifiers' own `_spawn_worker`, with the worker wrapped to report its reason.
        i = len(self.workers)
        address = f"ipc://{self._worker_path(i)}"
        parent_conn, child_conn = self._mpctx.Pipe()
        reasons_in, reasons_out = self._mpctx.Pipe(duplex=False)
        proc = self._mpctx.Process(
            target=_supervised_worker,
            kwargs=dict(
                reasons=reasons_out,
                max_workers=1,
                address=address,
                death_pipe=child_conn,
                log_setup=self.log_setup,
                **self.server_kwargs,
            ),
            daemon=False,
        )
        proc.start()
        child_conn.close()
        reasons_out.close()
        dealer = self.ctx.socket(vf_pool.zmq.DEALER)
        dealer.setsockopt(vf_pool.zmq.LINGER, 0)
        dealer.connect(address)
        self.workers.append(
            {
                "process": proc,
                "dealer": dealer,
                "pipe": parent_conn,
                "reasons": reasons_in,
                "active": 0,
                "index": i,
            }
        )
        if self._poller is not None:
            self._poller.register(dealer, vf_pool.zmq.POLLIN)

    def _dead_worker(self) -> str | None:
        for worker in self.workers:
            process = worker["process"]
            if process.exitcode is None:
                continue
            reason = f"exit code {process.exitcode}"
            with contextlib.suppress(Exception):
                if worker["reasons"].poll(1.0):
                    reason = worker["reasons"].recv()
            return f"env worker {worker['index']} (pid {process.pid}) stopped: {reason}"
        return None

    async def _watch(self) -> None:
        while (dead := self._dead_worker()) is None:
            await asyncio.sleep(WATCH_SECONDS)
        self.failure = dead

    async def run(self) -> None:
        serving = asyncio.ensure_future(super().run())
        watching = asyncio.ensure_future(self._watch())
        try:
            await asyncio.wait({serving, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (watching, serving):
                task.cancel()
            await asyncio.gather(watching, serving, return_exceptions=True)
        if serving.done() and not serving.cancelled() and serving.exception() is not None:
            raise serving.exception()  # type: ignore[misc]


def serve(
    *,
    max_workers: int | None,
    address: str | None = None,
    multiplex: int = 128,
    elastic: bool = True,
    log_setup: Any = None,
    **server_kwargs: Any,
) -> None:
    """``verifiers.v1.serve.pool.serve_env`` that raises ``ServeFailure`` with the reason
    when the server or any worker stops; returns only on an interrupt (Ctrl-C, SIGTERM)."""
    address = address or "tcp://127.0.0.1:5000"
    if max_workers is not None and max_workers <= 1:
        reason = None
        try:
            vf_pool.serve_env(
                max_workers=max_workers,
                address=address,
                log_setup=log_setup,
                **server_kwargs,
            )
        except KeyboardInterrupt:
            return
        except BaseException as e:
            reason = describe(e)
        if reason is None:
            return
        # The failed server task is still about; asyncio reports it when it is collected:
        # collect it now, so the reason comes last.
        gc.collect()
        raise ServeFailure(f"the env server stopped: {reason}")
    vf_pool._arm_teardown()
    if log_setup is not None:
        log_setup()
    if "config" in server_kwargs:
        server_kwargs = {**server_kwargs}
        server_kwargs["config_data"] = vf_pool.env_config_data(server_kwargs.pop("config"))
    pool = SupervisedPool(server_kwargs, max_workers, address, log_setup, multiplex, elastic)
    logger.info("serving at %s", pool.address)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(pool.run())
    if pool.failure is not None:
        raise ServeFailure(pool.failure)
