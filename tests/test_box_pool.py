"""BoxPool under concurrent uses, evictions, prefetches and close_all, with fake boxes.

The fakes make every interleaving deterministic: a restore or a close waits on an event the
test sets, or yields to the loop a given number of times (asyncio runs ready tasks in order).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from group_grade.boxes.base import Box, BoxError, CommandResult
from group_grade.boxes.pool import BoxPool


class FakeBox(Box):
    """Knows who uses it and how often it was closed."""

    def __init__(self, label: str, close_steps: int = 1, close_error: bool = False) -> None:
        self.label = label
        self.users = 0
        self.closes = 0
        self.closed_in_use = False
        self.close_steps = close_steps
        self.close_error = close_error

    async def run(
        self,
        command: str,
        *,
        timeout: float,
        env: dict[str, str] | None = None,
        workdir: str | None = None,
    ) -> CommandResult:
        return CommandResult(0, self.label)

    async def stage_grading(self, files: dict[str, bytes]) -> None:
        pass

    async def read_result(self, name: str, *, max_bytes: int) -> bytes | None:
        return None

    async def read(self, path: str) -> bytes:
        return b""

    async def write(self, path: str, data: bytes) -> None:
        pass

    async def close(self) -> None:
        self.closes += 1
        self.closed_in_use |= self.users > 0
        for _ in range(self.close_steps):
            await asyncio.sleep(0)
        if self.close_error:
            raise RuntimeError(f"closing {self.label} failed")


@dataclass
class Opener:
    """The pool's ``open_box``: a restore of a label waits for ``gates[label]`` if set, else
    for ``steps[label]`` loop turns; it raises ``errors[label]`` if set."""

    gates: dict[str, asyncio.Event] = field(default_factory=dict)
    steps: dict[str, int] = field(default_factory=dict)
    errors: dict[str, Exception] = field(default_factory=dict)
    close_errors: set[str] = field(default_factory=set)
    calls: Counter[str] = field(default_factory=Counter)
    boxes: list[FakeBox] = field(default_factory=list)

    async def __call__(self, label: str) -> Box:
        self.calls[label] += 1
        if label in self.gates:
            await self.gates[label].wait()
        for _ in range(self.steps.get(label, 1)):
            await asyncio.sleep(0)
        if label in self.errors:
            raise self.errors[label]
        box = FakeBox(label, close_error=label in self.close_errors)
        self.boxes.append(box)
        return box

    def open_boxes(self) -> list[str]:
        return sorted(box.label for box in self.boxes if not box.closes)


@asynccontextmanager
async def using(pool: BoxPool, label: str) -> AsyncIterator[FakeBox]:
    """``pool.use`` that checks it got ``label``'s own box, open, and marks it in use."""
    async with pool.use(label) as box:
        assert isinstance(box, FakeBox) and box.label == label and not box.closes
        box.users += 1
        try:
            yield box
        finally:
            assert not box.closes
            box.users -= 1


async def hold(pool: BoxPool, label: str, release: asyncio.Event) -> str:
    async with using(pool, label) as box:
        await release.wait()
        return box.label


async def settle(turns: int = 50) -> None:
    """Let every ready task run (bounded)."""
    for _ in range(turns):
        await asyncio.sleep(0)


def assert_closed_once_and_never_in_use(opener: Opener) -> None:
    assert [box.closes for box in opener.boxes] == [1] * len(opener.boxes)
    assert not any(box.closed_in_use for box in opener.boxes)


LABELS = [f"c{i:02d}" for i in range(1, 9)]


@pytest.mark.anyio
async def test_parallel_uses_over_more_labels_than_the_bound() -> None:
    """The reported race: all 8 boxes opened at once (bound 4), then one response with
    c03, c05, c07 and c06, its calls arriving a loop turn apart while closes take three:
    every use gets its own box, none an error about another label, and the pool is back
    at the bound once they end."""
    opener = Opener()
    pool = BoxPool(opener, max_open=4)
    release = asyncio.Event()
    everything = [asyncio.create_task(hold(pool, label, release)) for label in LABELS]
    await settle()
    assert len(opener.open_boxes()) == 8  # more in use than the bound: allowed meanwhile
    release.set()
    assert await asyncio.gather(*everything) == LABELS

    for box in opener.boxes:
        box.close_steps = 3
    release = asyncio.Event()
    batch = ["c03", "c05", "c07", "c06"]
    calls = []
    for label in batch:
        calls.append(asyncio.create_task(hold(pool, label, release)))
        await asyncio.sleep(0)
    await settle()
    release.set()
    assert await asyncio.gather(*calls) == batch
    await settle()
    assert opener.open_boxes() == sorted(batch) and sorted(pool.open_labels) == sorted(batch)
    await pool.close_all()
    assert_closed_once_and_never_in_use(opener)


@pytest.mark.anyio
async def test_a_use_of_a_box_chosen_for_eviction_keeps_it_open() -> None:
    """While the pool closes one idle box, a use starts on another idle one: that one must
    stay open (and the bound still holds once the uses end)."""
    opener = Opener()
    pool = BoxPool(opener, max_open=1)
    release = asyncio.Event()
    first = [asyncio.create_task(hold(pool, label, release)) for label in ("c01", "c02", "c03")]
    await settle()
    release.set()
    await asyncio.gather(*first)
    for box in opener.boxes:
        box.close_steps = 5  # closes take a while: uses interleave with them
    release = asyncio.Event()
    closed = sum(box.closes for box in opener.boxes)
    calls = [asyncio.create_task(hold(pool, "c04", release))]
    for _ in range(50):  # until c04's use is closing an idle box
        if sum(box.closes for box in opener.boxes) > closed:
            break
        await asyncio.sleep(0)
    calls.append(asyncio.create_task(hold(pool, "c02", release)))
    await settle()
    release.set()
    assert await asyncio.gather(*calls) == ["c04", "c02"]
    await settle()
    assert len(opener.open_boxes()) == 1
    await pool.close_all()
    assert_closed_once_and_never_in_use(opener)


@pytest.mark.anyio
async def test_uses_of_one_label_share_one_restore_even_if_its_first_use_is_cancelled() -> None:
    gate = asyncio.Event()
    opener = Opener(gates={"c01": gate})
    pool = BoxPool(opener, max_open=2)
    release = asyncio.Event()
    first = asyncio.create_task(hold(pool, "c01", release))
    await settle()
    others = [asyncio.create_task(hold(pool, "c01", release)) for _ in range(3)]
    await settle()
    first.cancel()  # the call that started the restore goes away; the others still wait
    await settle()
    gate.set()
    release.set()
    assert await asyncio.gather(*others) == ["c01"] * 3
    assert first.cancelled()
    assert opener.calls["c01"] == 1 and pool.restores == 1 and len(opener.boxes) == 1
    await pool.close_all()
    assert_closed_once_and_never_in_use(opener)


@pytest.mark.anyio
async def test_a_failed_restore_reaches_exactly_the_uses_of_its_label() -> None:
    """The uses waiting on a failing restore share it and all get a BoxError (whatever the
    opener raised); a use of another label at the same time gets its box; the next use of
    the failed label restores again."""
    gate = asyncio.Event()
    opener = Opener(gates={"c05": gate}, errors={"c05": KeyError("c07")})
    pool = BoxPool(opener, max_open=2)
    release = asyncio.Event()
    failing = [asyncio.create_task(hold(pool, "c05", release)) for _ in range(3)]
    fine = asyncio.create_task(hold(pool, "c06", release))
    await settle()
    gate.set()
    release.set()
    outcomes = await asyncio.gather(*failing, return_exceptions=True)
    assert await fine == "c06"
    assert all(isinstance(e, BoxError) for e in outcomes), outcomes
    assert opener.calls["c05"] == 1 and pool.restores == 1
    del opener.errors["c05"]
    assert await hold(pool, "c05", release) == "c05"
    assert opener.calls["c05"] == 2 and pool.restores == 2
    await pool.close_all()
    assert_closed_once_and_never_in_use(opener)


@pytest.mark.anyio
async def test_an_evicted_box_that_fails_to_close_fails_no_use() -> None:
    opener = Opener(close_errors={"c01"})
    pool = BoxPool(opener, max_open=1)
    release = asyncio.Event()
    release.set()
    assert await hold(pool, "c01", release) == "c01"
    assert await hold(pool, "c02", release) == "c02"  # evicts c01, whose close raises
    assert opener.open_boxes() == ["c02"]
    await pool.close_all()
    assert_closed_once_and_never_in_use(opener)


@pytest.mark.anyio
async def test_close_all_waits_for_a_use_and_for_a_restore_in_flight() -> None:
    """close_all closes the box in use once its use ends, and the box whose restore ends
    after close_all started (its use gets a BoxError, not a box being closed); later uses
    fail with a BoxError."""
    gate = asyncio.Event()
    opener = Opener(gates={"c02": gate})
    pool = BoxPool(opener, max_open=4)
    release = asyncio.Event()
    busy = asyncio.create_task(hold(pool, "c01", release))
    restoring = asyncio.create_task(hold(pool, "c02", release))
    await settle()
    closing = asyncio.create_task(pool.close_all())
    await settle()
    assert not closing.done()
    assert [box.closes for box in opener.boxes] == [0]  # c01, still in use
    gate.set()
    await settle()
    assert [box.closes for box in opener.boxes] == [0, 0]
    release.set()
    with pytest.raises(BoxError, match="closed"):
        await restoring
    assert await busy == "c01"
    await closing
    assert [box.label for box in opener.boxes] == ["c01", "c02"]
    assert_closed_once_and_never_in_use(opener)
    with pytest.raises(BoxError, match="closed"):
        await hold(pool, "c03", release)
    assert opener.calls["c03"] == 0


@pytest.mark.anyio
async def test_close_all_while_a_use_waits_for_a_prefetch() -> None:
    """The use shares the prefetch's restore and gets a BoxError once close_all started;
    no box is restored for it after close_all, and every prefetched box is closed."""
    gate = asyncio.Event()
    opener = Opener(gates={"c02": gate})
    pool = BoxPool(opener, max_open=2)
    pool.prefetch(LABELS)
    release = asyncio.Event()
    release.set()
    waiting = asyncio.create_task(hold(pool, "c02", release))
    await settle()
    closing = asyncio.create_task(pool.close_all())
    await settle()
    gate.set()
    with pytest.raises(BoxError, match="closed"):
        await waiting
    await closing
    assert sorted(box.label for box in opener.boxes) == ["c01", "c02"]
    assert_closed_once_and_never_in_use(opener)
    assert pool.open_labels == []


# ---------------------------------------------------------------------------------------------
# Generated schedules


@dataclass(frozen=True)
class Use:
    label: str
    hold_turns: int


@dataclass(frozen=True)
class Prefetch:
    labels: tuple[str, ...]


@dataclass(frozen=True)
class CloseAll:
    pass


SMALL = st.integers(min_value=0, max_value=6)
STEP = st.one_of(
    st.builds(Use, st.sampled_from(LABELS[:5]), SMALL).map(lambda use: [use]),
    st.lists(st.builds(Use, st.sampled_from(LABELS[:5]), SMALL), min_size=2, max_size=6),
    st.builds(Prefetch, st.lists(st.sampled_from(LABELS[:5]), max_size=3).map(tuple)).map(
        lambda p: [p]
    ),
)


@st.composite
def schedules(draw: st.DrawFn) -> dict:
    steps = draw(st.lists(st.tuples(STEP, SMALL), min_size=1, max_size=12))
    close_at = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=len(steps))))
    return {
        "max_open": draw(st.integers(min_value=1, max_value=3)),
        "steps": steps,
        "close_at": close_at,
        "restore_steps": draw(st.dictionaries(st.sampled_from(LABELS[:5]), SMALL)),
        "failing": draw(st.sets(st.sampled_from(LABELS[:5]), max_size=2)),
    }


async def run_schedule(schedule: dict) -> None:
    """Start each step's uses at once (a model response's parallel calls), let the loop run
    the given number of turns before the next step, close_all at ``close_at``; then check
    the invariants once everything has ended."""
    failing = schedule["failing"]
    opener = Opener(
        steps=schedule["restore_steps"], errors={x: BoxError(f"no box for {x}") for x in failing}
    )
    pool = BoxPool(opener, max_open=schedule["max_open"])
    tasks: list[tuple[Use, bool, asyncio.Task[str]]] = []
    closing: asyncio.Task[None] | None = None

    async def use(step: Use) -> str:
        async with using(pool, step.label) as box:
            for _ in range(step.hold_turns):
                await asyncio.sleep(0)
            return box.label

    for index, (actions, turns) in enumerate(schedule["steps"]):
        if index == schedule["close_at"]:
            closing = asyncio.create_task(pool.close_all())
        for action in actions:
            if isinstance(action, Prefetch):
                pool.prefetch(list(action.labels))
            else:
                tasks.append((action, closing is not None, asyncio.create_task(use(action))))
        await settle(turns)
    outcomes = await asyncio.gather(*(task for *_, task in tasks), return_exceptions=True)
    if closing is None:
        await settle()
        assert len(opener.open_boxes()) <= schedule["max_open"]
        assert len(pool.open_labels) <= schedule["max_open"]
        assert sorted(pool.open_labels) == opener.open_boxes()
        closing = asyncio.create_task(pool.close_all())
    await closing
    for (step, after_close, _), outcome in zip(tasks, outcomes, strict=True):
        if isinstance(outcome, str):
            assert outcome == step.label and not after_close
        else:
            assert isinstance(outcome, BoxError), outcome
            assert step.label in failing or "closed" in str(outcome), outcome
    assert_closed_once_and_never_in_use(opener)
    assert pool.restores == len(opener.boxes)
    with pytest.raises(BoxError, match="closed"):
        await use(Use("c01", 0))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedule=schedules())
def test_generated_schedules_keep_every_invariant(schedule: dict) -> None:
    asyncio.run(run_schedule(schedule))
