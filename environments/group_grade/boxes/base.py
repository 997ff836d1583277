"""The box-backend interface: restore a candidate's box from its checkpoint and drive it.

A checkpoint string names its backend by scheme, ``<backend>:<reference>``:

- ``local:/abs/path/to/snapshot.tar.gz`` or ``local:/abs/path/to/dir`` -- a snapshot archive
  (or directory) of the candidate's working directory;
- ``prime:<checkpoint id>`` -- a Prime sandbox filesystem checkpoint.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from group_grade.layout import PRIVILEGED_SUBDIR, RESULTS_SUBDIR


class BoxError(RuntimeError):
    """A box could not be restored or driven; the message is fit to show the grader."""


@dataclass(frozen=True)
class CommandResult:
    exit_code: int
    output: str
    """stdout and stderr, interleaved as the command wrote them where the backend can."""
    timed_out: bool = False
    dropped: int = 0
    """Bytes of output the backend did not keep (the middle of a very long output): the
    line numbers of ``output`` past its head are then unknown."""


@dataclass
class DeleteReport:
    """What a checkpoint deletion did: ids deleted, ids refused for now (retry later),
    and ids that failed for another reason (with the reason)."""

    deleted: list[str] = field(default_factory=list)
    retry_later: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


class Box(ABC):
    """One restored candidate box.

    ``workdir`` is where commands run by default. ``grade_dir`` is the box's grading area: the
    hidden tests (``privileged/``), group-grade's test runner, and ``results/``, where a
    hidden-test run writes its machine-readable result. It lies outside anything the candidate
    could have put in its box (local boxes: a read-only mount; prime boxes: a fresh directory
    with a name the candidate could not predict). Every command sees ``GRADE_PRIVILEGED`` and
    ``GRADE_RESULTS`` in its environment."""

    workdir: str
    grade_dir: str

    @property
    def privileged_dir(self) -> str:
        return f"{self.grade_dir}/{PRIVILEGED_SUBDIR}"

    @property
    def results_dir(self) -> str:
        return f"{self.grade_dir}/{RESULTS_SUBDIR}"

    def grade_env(self) -> dict[str, str]:
        """The variables every command gets: where the grading area's parts are."""
        return {"GRADE_PRIVILEGED": self.privileged_dir, "GRADE_RESULTS": self.results_dir}

    @abstractmethod
    async def run(
        self,
        command: str,
        *,
        timeout: float,
        env: dict[str, str] | None = None,
        workdir: str | None = None,
    ) -> CommandResult:
        """Run a shell command with the network blocked. A timeout returns
        ``timed_out=True`` (the command is killed), never raises."""

    @abstractmethod
    async def stage_grading(self, files: dict[str, bytes]) -> None:
        """Write the grading area (paths relative to ``grade_dir``). Raises BoxError when the
        files cannot be placed."""

    @abstractmethod
    async def read_result(self, name: str, *, max_bytes: int) -> bytes | None:
        """The file ``name`` in ``results_dir`` (None: there is none). Raises BoxError when
        it cannot be read or is larger than ``max_bytes``."""

    @abstractmethod
    async def read(self, path: str) -> bytes: ...

    @abstractmethod
    async def write(self, path: str, data: bytes) -> None: ...

    @abstractmethod
    async def close(self) -> None:
        """Release the box. Idempotent; never raises for an already-closed box."""


class BoxBackend(ABC):
    scheme: ClassVar[str]

    @abstractmethod
    async def restore(self, checkpoint: str) -> Box:
        """A fresh box restored from ``checkpoint`` (``<scheme>:<ref>``). Raises BoxError."""

    @abstractmethod
    async def delete_checkpoints(self, checkpoints: list[str]) -> DeleteReport:
        """Delete checkpoints; never raises. Ids refused for now go to ``retry_later``."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most backends hold nothing
        """Release clients the backend holds."""


def split_checkpoint(checkpoint: str) -> tuple[str, str]:
    """``"local:/x.tar.gz"`` -> ``("local", "/x.tar.gz")``. Raises BoxError on a bare string."""
    scheme, sep, ref = checkpoint.partition(":")
    if not sep or not ref or scheme not in ("local", "prime"):
        raise BoxError(
            f"checkpoint {checkpoint!r} names no backend: expected 'local:<path>' or "
            "'prime:<checkpoint id>'"
        )
    return scheme, ref


class BoxLimits(BaseModel):
    """Resource limits of every command in a local box (on top of its timeout and output cap).
    CPU, memory and file size apply per process; processes per command."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpu_seconds: int = Field(600, ge=1)
    """CPU seconds one process may use (``RLIMIT_CPU``)."""
    memory_mb: int = Field(4096, ge=64)
    """Address space of one process, in MiB (``RLIMIT_AS``)."""
    processes: int = Field(128, ge=8)
    """Processes and threads one command may have at once (``RLIMIT_NPROC``)."""
    file_mb: int = Field(128, ge=1)
    """Largest file a process may write, in MiB (``RLIMIT_FSIZE``)."""
