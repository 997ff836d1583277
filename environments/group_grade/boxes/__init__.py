"""Candidate boxes: make a checkpoint of a finished rollout's box, restore it for the grader,
delete it after grading. A checkpoint string names its backend: ``local:<path>`` or
``prime:<checkpoint id>``.

A solver taskset produces candidates with boxes by calling ``save_checkpoint`` in its
``finalize``; ``GroupGradeData.from_traces`` then picks up ``trace.info["checkpoint"]``::

    class SolveTask(vf.Task[...]):
        async def finalize(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
            await vf.capture_patch(trace, runtime)
            await save_checkpoint(trace, runtime, local_dir="~/.cache/group_grade/checkpoints")
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

import verifiers.v1 as vf
from verifiers.v1.runtimes import PrimeRuntime

from group_grade.boxes.base import (
    Box,
    BoxBackend,
    BoxError,
    BoxLimits,
    CommandResult,
    DeleteReport,
    split_checkpoint,
)

__all__ = [
    "Box",
    "BoxBackend",
    "BoxError",
    "BoxLimits",
    "CommandResult",
    "DeleteReport",
    "backend_for",
    "delete_checkpoints",
    "save_checkpoint",
    "split_checkpoint",
]


def backend_for(scheme: str, **options: object) -> BoxBackend:
    """A backend for checkpoints of ``scheme`` (``local`` or ``prime``)."""
    if scheme == "local":
        from group_grade.boxes.local import LocalBackend

        return LocalBackend(**options)  # type: ignore[arg-type]
    if scheme == "prime":
        from group_grade.boxes.prime import PrimeBackend

        return PrimeBackend(**options)  # type: ignore[arg-type]
    raise BoxError(f"unknown box backend {scheme!r}: expected 'local' or 'prime'")


async def save_checkpoint(
    trace: vf.Trace, runtime: vf.Runtime, *, local_dir: str | Path | None = None
) -> str:
    """Checkpoint a finished rollout's box into ``trace.info["checkpoint"]``: a Prime
    sandbox is checkpointed (waiting until DURABLE), any other runtime's working directory
    is archived into ``local_dir``."""
    if isinstance(runtime, PrimeRuntime):
        from group_grade.boxes.prime import checkpoint_runtime

        checkpoint = await checkpoint_runtime(runtime)
    else:
        from group_grade.boxes.local import make_local_checkpoint_from_runtime

        if local_dir is None:
            raise BoxError("a local checkpoint needs a local_dir to write its archive into")
        dest = Path(local_dir).expanduser()
        checkpoint = await make_local_checkpoint_from_runtime(
            runtime, dest, name=f"{trace.id}.tar.gz"
        )
    trace.info["checkpoint"] = checkpoint
    return checkpoint


async def delete_checkpoints(
    checkpoints: Iterable[str], *, local_root: str | Path | None = None
) -> DeleteReport:
    """Delete checkpoints of any backend; never raises. A ``local:`` checkpoint is deleted
    only inside ``local_root`` (None: none is). Ids refused for now (a Prime checkpoint still
    pending, or in use by a live restored box) come back in ``retry_later``; malformed ones,
    and local ones outside the root, in ``failed`` with the reason."""
    by_scheme: dict[str, list[str]] = {}
    report = DeleteReport()
    for checkpoint in checkpoints:
        try:
            scheme, _ = split_checkpoint(checkpoint)
        except BoxError as e:
            report.failed[checkpoint] = str(e)
            continue
        by_scheme.setdefault(scheme, []).append(checkpoint)

    async def delete(scheme: str, ids: list[str]) -> DeleteReport:
        options = {"checkpoint_root": local_root} if scheme == "local" else {}
        backend = backend_for(scheme, **options)
        try:
            return await backend.delete_checkpoints(ids)
        finally:
            await backend.aclose()

    for part in await asyncio.gather(*(delete(s, ids) for s, ids in by_scheme.items())):
        report.deleted += part.deleted
        report.retry_later += part.retry_later
        report.failed.update(part.failed)
    return report
