"""Open candidate boxes of one grading run: restored on first use, least recently used
closed first beyond a bound, all closed at the end."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from group_grade.boxes.base import Box

Opener = Callable[[str], Awaitable[Box]]
logger = logging.getLogger(__name__)
PREFETCH_DRAIN_SECONDS = 30.0


class BoxPool:
    def __init__(self, open_box: Opener, *, max_open: int) -> None:
        if max_open < 1:
            raise ValueError("max_open must be at least 1")
        self._open_box = open_box
        self._max_open = max_open
        self._boxes: OrderedDict[str, Box] = OrderedDict()
        self._in_use: dict[str, int] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._prefetches: list[asyncio.Task[None]] = []
        self.restores = 0
        self.restore_seconds = 0.0

    @property
    def open_labels(self) -> list[str]:
        """Open boxes, least recently used first."""
        return list(self._boxes)

    @asynccontextmanager
    async def use(self, label: str) -> AsyncIterator[Box]:
        """The box of ``label``, restored if it is not open; it is not evicted while in use."""
        self._in_use[label] = self._in_use.get(label, 0) + 1
        try:
            async with self._locks.setdefault(label, asyncio.Lock()):
                box = self._boxes.get(label)
                if box is None:
                    started = time.monotonic()
                    box = await self._open_box(label)
                    self.restores += 1
                    self.restore_seconds += time.monotonic() - started
                    self._boxes[label] = box
            self._boxes.move_to_end(label)
            await self._evict()
            yield box
        finally:
            self._in_use[label] -= 1

    def prefetch(self, labels: list[str]) -> None:
        """Restore up to ``max_open`` of ``labels`` in the background, ahead of use; a use
        of a label being prefetched waits for that restore instead of starting another."""
        for label in labels[: self._max_open]:
            self._prefetches.append(asyncio.create_task(self._prefetch(label)))

    async def _prefetch(self, label: str) -> None:
        try:
            async with self.use(label):
                pass
        except Exception as e:  # a later use restores again and reports the error
            logger.info("prefetching the box of %s failed: %s", label, e)

    async def _evict(self) -> None:
        idle = [label for label in self._boxes if not self._in_use.get(label)]
        while len(self._boxes) > self._max_open and idle:
            await self._boxes.pop(idle.pop(0)).close()

    async def close_all(self) -> None:
        """Close every box. Restores in flight finish first (bounded), so that no box is
        left behind half-made."""
        if self._prefetches:
            _, pending = await asyncio.wait(self._prefetches, timeout=PREFETCH_DRAIN_SECONDS)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            self._prefetches.clear()
        boxes = list(self._boxes.values())
        self._boxes.clear()
        await asyncio.gather(*(box.close() for box in boxes), return_exceptions=True)
