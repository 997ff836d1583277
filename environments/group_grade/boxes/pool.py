"""Open candidate boxes of one grading run: restored on first use, least recently used
closed first beyond a bound, all closed at the end.

Every label being used has one *slot*: a restore task, the box it made, and the number of
uses holding the slot. Uses of a label run at once (the grader's parallel tool calls) and
share the slot. The pool lives on one event loop, so nothing happens between two awaits;
each step below ends with these invariants true:

1. A label has at most one slot in ``_slots``. A slot enters it when its restore starts and
   leaves it when it is evicted, when its restore fails, or in ``close_all``. So concurrent
   uses of a label share one restore, and a use that is cancelled does not cancel it.
2. Eviction takes only a slot whose box is restored and that no use holds, and takes it out
   of ``_slots`` in the same step as it picks it, before closing its box. So a box in use
   is never closed, and a box being closed is never handed out: the next use of its label
   restores a new one. A close that fails is logged; no use gets its error.
3. The bound: a new slot, a finished restore and a use ending each evict the least
   recently used idle boxes while more than ``max_open`` slots remain (restores in flight
   count). More remain only while more than ``max_open`` slots are in use or restoring,
   and they are evicted as those uses end. A use waits for the closes its eviction started.
4. A failed restore takes its slot out and raises one BoxError to every use waiting on
   that slot, and to no other; whatever the opener raised, the uses get a BoxError. The
   next use of the label restores again.
5. ``close_all`` refuses every use from then on (BoxError), lets the uses and restores in
   flight end (a use whose restore ends then gets a BoxError, not the box), then closes
   every box left. Each box is closed once: by the eviction that took its slot out, or by
   ``close_all``, which empties ``_slots`` itself. The wait is bounded (``DRAIN_SECONDS``):
   past it, restores still running are cancelled and boxes still in use are closed anyway,
   the one case of a box closed in use (the run is over, and a box must not outlive it).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from group_grade.boxes.base import Box, BoxError

Opener = Callable[[str], Awaitable[Box]]
logger = logging.getLogger(__name__)
DRAIN_SECONDS = 20.0
"""How long ``close_all`` waits for uses and restores in flight before it cancels the
restores and closes the boxes still in use; under the tool server's 30 s to clean up."""
CLOSED = "the grading run is over: its candidate boxes are closed"


@dataclass
class _Slot:
    restore: asyncio.Task[Box] = field(init=False)
    box: Box | None = None
    """Set when the restore succeeded."""
    users: int = 0

    @property
    def idle(self) -> bool:
        return self.box is not None and not self.users


def _log_failure(label: str, restore: asyncio.Task[Box]) -> None:
    if not restore.cancelled() and (error := restore.exception()) is not None:
        logger.info("restoring the box of %s failed: %s", label, error)


async def _close_box(label: str, box: Box) -> None:
    try:
        await box.close()
    except Exception as e:  # the box is out of the pool either way; no use waits on it
        logger.warning("closing the box of %s failed: %s", label, e)


class BoxPool:
    def __init__(self, open_box: Opener, *, max_open: int) -> None:
        if max_open < 1:
            raise ValueError("max_open must be at least 1")
        self._open_box = open_box
        self._max_open = max_open
        self._slots: OrderedDict[str, _Slot] = OrderedDict()
        """Least recently used first."""
        self._closes: set[asyncio.Task[None]] = set()
        self._uses = 0
        self._no_uses = asyncio.Event()
        self._no_uses.set()
        self._closed = False
        self.restores = 0
        self.restore_seconds = 0.0

    @property
    def open_labels(self) -> list[str]:
        """Open boxes, least recently used first."""
        return [label for label, slot in self._slots.items() if slot.box is not None]

    @asynccontextmanager
    async def use(self, label: str) -> AsyncIterator[Box]:
        """The box of ``label``, restored if it is not open; it is not closed while in use.
        BoxError if the restore fails or the pool is closed."""
        if self._closed:
            raise BoxError(CLOSED)
        slot = self._slots.get(label) or self._start(label)
        self._slots.move_to_end(label)
        slot.users += 1
        self._uses += 1
        self._no_uses.clear()
        try:
            await self._evict()
            await asyncio.wait([slot.restore])  # never cancels the restore it waits for
            if self._closed:
                raise BoxError(CLOSED)
            yield slot.restore.result()
        finally:
            slot.users -= 1
            self._uses -= 1
            if not self._uses:
                self._no_uses.set()
            await self._evict()

    def prefetch(self, labels: list[str]) -> None:
        """Restore up to ``max_open`` of ``labels`` in the background, ahead of use; a use
        of a label being prefetched shares that restore. A failure is logged; the next use
        of the label restores again and gets the error."""
        for label in labels[: self._max_open]:
            if not self._closed and label not in self._slots:
                self._start(label)

    def _start(self, label: str) -> _Slot:
        slot = self._slots[label] = _Slot()
        slot.restore = asyncio.create_task(self._restore(label, slot))
        slot.restore.add_done_callback(functools.partial(_log_failure, label))
        return slot

    async def _restore(self, label: str, slot: _Slot) -> Box:
        started = time.monotonic()
        try:
            box = await self._open_box(label)
        except Exception as e:
            del self._slots[label]  # this slot: a restore in flight keeps it in (1, 2, 5)
            if isinstance(e, BoxError):
                raise
            raise BoxError(f"restoring the box failed: {type(e).__name__}: {e}") from e
        self.restores += 1
        self.restore_seconds += time.monotonic() - started
        slot.box = box
        await self._evict()  # a restore no use waits for may be one too many
        return box

    async def _evict(self) -> None:
        """Close the least recently used idle boxes while more than ``max_open`` slots
        remain."""
        excess = max(0, len(self._slots) - self._max_open)
        idle = [label for label, slot in self._slots.items() if slot.idle][:excess]
        closes = [self._close(label, self._slots.pop(label)) for label in idle]
        if closes:
            await asyncio.wait(closes)  # a cancelled caller leaves the closes running

    def _close(self, label: str, slot: _Slot) -> asyncio.Task[None]:
        assert slot.box is not None
        task = asyncio.create_task(_close_box(label, slot.box))
        self._closes.add(task)
        task.add_done_callback(self._closes.discard)
        return task

    async def close_all(self) -> None:
        """Close every box, once. Uses and restores in flight end first (bounded by
        ``DRAIN_SECONDS``), so that no box is left behind half-made or closed under a
        command; after that, restores still running are cancelled and boxes still in use
        are closed all the same."""
        self._closed = True
        restores = [slot.restore for slot in self._slots.values()]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(DRAIN_SECONDS):
                await self._no_uses.wait()
                await asyncio.gather(*restores, return_exceptions=True)
        for restore in restores:
            restore.cancel()
        await asyncio.gather(*restores, return_exceptions=True)
        slots, self._slots = self._slots, OrderedDict()
        for label, slot in slots.items():
            if slot.box is not None:
                self._close(label, slot)
        if self._closes:
            await asyncio.wait(self._closes)
