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


class BoxError(RuntimeError):
    """A box could not be restored or driven; the message is fit to show the grader."""


@dataclass(frozen=True)
class CommandResult:
    exit_code: int
    output: str
    """stdout and stderr, interleaved as the command wrote them where the backend can."""
    timed_out: bool = False


@dataclass
class DeleteReport:
    """What a checkpoint deletion did: ids deleted, ids refused for now (retry later),
    and ids that failed for another reason (with the reason)."""

    deleted: list[str] = field(default_factory=list)
    retry_later: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


class Box(ABC):
    """One restored candidate box. ``workdir`` is where commands run by default."""

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


BOX_PRIVILEGED_DIR = ".grade/privileged"
"""Where the privileged materials are staged in every restored candidate box, relative to
the box's working directory (pytest does not collect dot-directories by default)."""
