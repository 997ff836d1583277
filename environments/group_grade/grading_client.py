"""Grading groups from a training loop.

A trainer mints one grading row per finished group (``GroupGradeData.from_traces``), sends it
to a served group-grade env (verifiers' ``EnvServer``) and applies the advantages that come
back on the grade trace, mapped back onto its own traces::

    grader = GroupGrader("tcp://10.0.0.5:5000", client={"base_url": JUDGE_URL,
                         "api_key_var": "JUDGE_API_KEY"}, model="judge-model",
                         current_step=lambda: trainer.step, max_staleness=2)
    result = await grader.grade(group_traces, group_id=f"step{step}-task{idx}")
    advantages = result.advantages          # one per trace, in the order given
    ...
    await grader.close()                    # retries checkpoint deletions refused earlier

Every failure (deadline, stale group, transport or env failure, invalid verdict) falls back
to plain GRPO advantages (zeros in advantages mode) with the reason on every record.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, computed_field
from verifiers.v1.serve.client import EnvClient

from group_grade import boxes
from group_grade.advantages import (
    F_MIN,
    LAMBDA_MAX,
    AdvantageRecord,
    FallbackReason,
    GarKnobs,
    fallback_records,
    needs_grading,
    ungraded_records,
)
from group_grade.boxes.base import DeleteReport
from group_grade.data import GroupGradeData, Mode
from group_grade.grade_record import GradeRecord
from group_grade.grade_traces import is_grade_record, is_grade_trace

logger = logging.getLogger(__name__)

Deleter = Callable[[list[str]], Awaitable[DeleteReport]]
"""Deletes checkpoints; the default is ``group_grade.boxes.delete_checkpoints``."""
_client_config = TypeAdapter(vf.ClientConfig)


class GroupResult(BaseModel):
    """The outcome for one group: a record per original trace, in the order given."""

    model_config = ConfigDict(frozen=True)

    group_id: str
    trace_ids: list[str]
    """The original traces' ids, in the order given to ``grade``."""
    records: list[AdvantageRecord]
    """One per original trace, same order; ``record.label`` is its anonymized label."""
    labels: dict[str, str]
    """Label -> original trace id."""
    graded: bool
    """True when the advantages come from the grader's verdict."""
    fallback_reason: FallbackReason | None = None
    """Why a group that was due for grading fell back to plain GRPO (None otherwise)."""
    error: str | None = None
    """What went wrong, for a fallback."""
    episode_id: str | None = None
    """The grading episode, when one came back."""

    @computed_field
    @property
    def advantages(self) -> list[float]:
        return [record.advantage for record in self.records]


@dataclass(frozen=True)
class _Outcome:
    records: list[AdvantageRecord]
    graded: bool = False
    reason: FallbackReason | None = None
    error: str | None = None
    episode_id: str | None = None


class _Limits(BaseModel):
    """``GroupGrader``'s limits, finite."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    timeout: float = Field(gt=0)
    max_concurrent: int = Field(ge=1)
    max_staleness: int | None = Field(ge=0)


def _fallback(
    row: GroupGradeData, reason: FallbackReason, error: str, episode_id: str | None = None
) -> _Outcome:
    return _Outcome(fallback_records(row, reason), False, reason, error, episode_id)


class GroupGrader:
    """An async client that grades finished groups on a served group-grade env.

    - ``address``: the env server's ZMQ address (verifiers ``EnvServer`` / ``serve_env``).
    - ``client`` / ``model`` / ``sampling``: the grader's (frozen judge's) endpoint, sent
      with every request (a verifiers ``ClientConfig``, or a dict of one: ``type`` defaults
      to ``eval``). A server whose ``[env.agent]`` pins ``model`` / ``client`` uses its own.
    - ``timeout``: seconds per group, covering the wait for a slot and the grading.
    - ``max_concurrent``: groups in flight at once.
    - ``current_step`` + ``max_staleness``: a group dispatched at step ``s`` is stale once
      ``current_step() - s > max_staleness``, checked when it would be sent and when its
      result arrives.
    - ``f_min`` / ``lambda_max``: the rewards-mode redistribution knobs (``GarKnobs``); a
      verdict the env mapped with other values is mapped again here.
    - ``privileged``: files (relative path -> text) given to every group's grader.
    - ``delete_checkpoints``: delete the candidates' checkpoints once a group is done, with
      ``deleter`` (default ``group_grade.boxes.delete_checkpoints``); ``local_checkpoint_root``
      is the only folder the default deleter deletes ``local:`` checkpoints in (None: it
      deletes none, and reports each as failed).

    A knob that is not a finite number in its range raises a ValidationError naming it.
    """

    def __init__(
        self,
        address: str,
        *,
        client: vf.EvalClientConfig | vf.TrainClientConfig | Mapping[str, Any],
        model: str,
        sampling: vf.SamplingConfig | None = None,
        mode: Mode = "rewards",
        timeout: float = 1800.0,
        max_concurrent: int = 32,
        current_step: Callable[[], int] | None = None,
        max_staleness: int | None = None,
        f_min: float = F_MIN,
        lambda_max: float = LAMBDA_MAX,
        privileged: Mapping[str, str] | None = None,
        delete_checkpoints: bool = True,
        deleter: Deleter | None = None,
        local_checkpoint_root: str | Path | None = None,
    ) -> None:
        limits = _Limits(
            timeout=timeout, max_concurrent=max_concurrent, max_staleness=max_staleness
        )
        if (current_step is None) != (max_staleness is None):
            raise ValueError("current_step and max_staleness go together")
        self.knobs = GarKnobs(f_min=f_min, lambda_max=lambda_max)
        self.address = address
        self.client = _client_config.validate_python(
            {"type": "eval", **client} if isinstance(client, Mapping) else client
        )
        self.model = model
        self.sampling = sampling or vf.SamplingConfig()
        self.mode: Mode = mode
        self.timeout = limits.timeout
        self.max_concurrent = limits.max_concurrent
        self.current_step = current_step
        self.max_staleness = limits.max_staleness
        self.privileged = dict(privileged or {})
        self.delete_checkpoints = delete_checkpoints
        self._deleter: Deleter = deleter or functools.partial(
            boxes.delete_checkpoints, local_root=local_checkpoint_root
        )
        self._slots = asyncio.Semaphore(limits.max_concurrent)
        self._env_client: EnvClient | None = None
        self._deletions: set[asyncio.Task[None]] = set()
        self._retry: list[str] = []
        self._closed = False

    async def __aenter__(self) -> GroupGrader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def grade(
        self,
        traces: Sequence[vf.Trace],
        *,
        group_id: str,
        privileged: Mapping[str, str] | None = None,
        passed: Sequence[bool] | None = None,
        step: int | None = None,
    ) -> GroupResult:
        """Grade one finished group. ``privileged`` adds to (and overrides) the grader-wide
        files; ``passed`` overrides the pass flags derived from rewards; ``step`` is the
        training step the group was dispatched at (default: ``current_step()`` now).
        A group that is not due for grading is answered at once, nothing sent. Raises
        ValueError for unusable input (no traces, duplicate ids, grade traces, a reward
        missing in rewards mode or not finite); every other failure falls back."""
        if self._closed:
            raise RuntimeError("GroupGrader is closed")
        ids = [trace.id for trace in traces]
        if len(set(ids)) != len(ids):
            raise ValueError(f"group {group_id}: trace ids are not unique: {ids}")
        if graders := [trace.id for trace in traces if is_grade_record(trace)]:
            raise ValueError(f"group {group_id}: grade traces cannot be candidates: {graders}")
        if step is None and self.current_step is not None:
            step = self.current_step()
        checkpoints = [c for trace in traces if (c := trace.info.get("checkpoint"))]
        try:
            # Minting renders every turn and digest (tens of ms for a large group): off the loop.
            row = await asyncio.to_thread(
                GroupGradeData.from_traces,
                traces,
                group_id=group_id,
                mode=self.mode,
                passed=passed,
                privileged={**self.privileged, **(privileged or {})},
            )
            if needs_grading(row):
                outcome = await self._grade_row(row, step)
            else:
                outcome = _Outcome(ungraded_records(row))
        except asyncio.CancelledError:
            self._spawn_deletion(checkpoints)
            raise
        deletion = self._spawn_deletion(checkpoints)
        if deletion is not None:
            await asyncio.shield(deletion)
        labels = row.trace_ids
        by_trace = {labels[record.label]: record for record in outcome.records}
        return GroupResult(
            group_id=group_id,
            trace_ids=ids,
            records=[by_trace[trace_id] for trace_id in ids],
            labels=labels,
            graded=outcome.graded,
            fallback_reason=outcome.reason,
            error=outcome.error,
            episode_id=outcome.episode_id,
        )

    async def close(self) -> DeleteReport:
        """Wait for pending deletions, retry once the checkpoints refused for now, close
        the connection. Returns the retry's report (what still failed is logged too)."""
        self._closed = True
        if self._deletions:
            await asyncio.gather(*list(self._deletions), return_exceptions=True)
        retry, self._retry = self._retry, []
        report = DeleteReport()
        if retry:
            try:
                report = await self._deleter(retry)
            except Exception as e:
                report = DeleteReport(failed={c: f"{type(e).__name__}: {e}" for c in retry})
        for checkpoint in report.retry_later:
            logger.warning("checkpoint %s is still in use and was not deleted", checkpoint)
        for checkpoint, why in report.failed.items():
            logger.warning("could not delete checkpoint %s: %s", checkpoint, why)
        if self._env_client is not None:
            await self._env_client.close()
            self._env_client = None
        return report

    def _stale(self, step: int | None) -> bool:
        if self.current_step is None or self.max_staleness is None or step is None:
            return False
        return self.current_step() - step > self.max_staleness

    def _client(self) -> EnvClient:
        if self._env_client is None:
            self._env_client = EnvClient(self.address)
        return self._env_client

    async def _grade_row(self, row: GroupGradeData, step: int | None) -> _Outcome:
        deadline = asyncio.timeout(self.timeout)
        try:
            async with deadline, self._slots:
                if self._stale(step):
                    return _fallback(row, "stale", "the group was stale before it was sent")
                episode = await self._client().run(
                    client=self.client,
                    model=self.model,
                    sampling=self.sampling,
                    task_data=row.model_dump(mode="json"),
                )
        except TimeoutError as e:
            if deadline.expired():
                return _fallback(row, "timeout", f"no result within {self.timeout:g}s")
            return _fallback(row, "error", f"TimeoutError: {e}")
        except Exception as e:  # transport or env-server failure: fall back, keep training
            logger.warning("group %s: grading failed: %s: %s", row.group_id, type(e).__name__, e)
            return _fallback(row, "error", f"{type(e).__name__}: {e}")
        outcome = self._read_episode(row, episode)
        if outcome.graded and self._stale(step):
            return _fallback(row, "stale", "the group went stale while graded", episode.id)
        return outcome

    def _read_episode(self, row: GroupGradeData, episode: vf.WireEpisode) -> _Outcome:
        trace = next((t for t in episode.traces if is_grade_trace(t)), None)
        if trace is None:
            why = episode.errors[-1].message if episode.errors else "no grade trace came back"
            return _fallback(row, "error", why, episode.id)
        try:
            record = GradeRecord.of(trace)
            if record is None:
                raise ValueError("the grade trace carries no grade record (info.kind)")
            if record.group_id != row.group_id:
                why = f"the grade trace is for group {record.group_id!r}"
                return _fallback(row, "error", why, episode.id)
            records = record.advantages(row, self.knobs)
        except ValueError as e:
            why = trace.errors[-1].message if trace.errors else str(e)
            return _fallback(row, "error", why, episode.id)
        reason = records[0].fallback_reason
        if reason is None:
            return _Outcome(records, True, episode_id=episode.id)
        why = record.verdict_error or (trace.errors[-1].message if trace.errors else reason)
        return _Outcome(records, False, reason, why, episode.id)

    def _spawn_deletion(self, checkpoints: list[str]) -> asyncio.Task[None] | None:
        """Delete in a task of its own, so that it completes even if ``grade`` is cancelled
        (``close`` waits for it)."""
        if not (self.delete_checkpoints and checkpoints):
            return None
        task = asyncio.ensure_future(self._delete(checkpoints))
        self._deletions.add(task)
        task.add_done_callback(self._deletions.discard)
        return task

    async def _delete(self, checkpoints: list[str]) -> None:
        try:
            report = await self._deleter(list(checkpoints))
        except Exception as e:  # a deleter that raises: keep the ids for the retry
            logger.warning(
                "checkpoint deletion failed, retrying at close: %s: %s", type(e).__name__, e
            )
            self._retry.extend(checkpoints)
            return
        self._retry.extend(report.retry_later)
        for checkpoint, why in report.failed.items():
            logger.warning("could not delete checkpoint %s: %s", checkpoint, why)
