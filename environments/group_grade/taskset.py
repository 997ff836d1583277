"""The grading taskset: one task = one group, graded by an agent in its own box."""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from pydantic import Field
from verifiers.v1.errors import SandboxError
from verifiers.v1.runtimes import SubprocessRuntime

from group_grade import scoring
from group_grade.acceptance import accept_verdict
from group_grade.advantages import (
    DEFAULT_KNOBS,
    F_MIN,
    LAMBDA_MAX,
    FallbackReason,
    FMin,
    GarKnobs,
    LambdaMax,
)
from group_grade.data import GroupGradeData, Mode
from group_grade.grade_record import GradeRecord
from group_grade.layout import VERDICT_FILE
from group_grade.prompts import render_prompt
from group_grade.rows import load_rows, shipped_groups
from group_grade.staging import grader_files, stage_files
from group_grade.state import GradeState
from group_grade.toolset import GradeToolset, GradeToolsetConfig
from group_grade.verdict import GroupVerdict

logger = logging.getLogger(__name__)


OPEN_NETWORK = (
    "group-grade: warning: the grader box runs on the subprocess runtime, which restricts "
    "neither its network nor its files; grade untrusted candidates with "
    "--env.agent.runtime.type docker or prime"
)


@functools.cache
def _warn_open_network() -> None:
    """Once per process: logged, and written to stderr when no logging handler would show
    it (vf-eval routes only verifiers' own loggers)."""
    if logger.hasHandlers():
        logger.warning(OPEN_NETWORK)
    else:
        print(OPEN_NETWORK, file=sys.stderr, flush=True)


CONTAINER_GRADE_ROOT = "/grade"
SUBPROCESS_GRADE_ROOT = "grade"
VERDICT_MAX_BYTES = 1 << 20


class GroupGradeTaskConfig(vf.TaskConfig):
    f_min: FMin = F_MIN
    """Floor of the redistribution factor in rewards mode."""
    lambda_max: LambdaMax = LAMBDA_MAX
    """Cap on the rewards-mode redistribution scale."""
    policy: str | None = None
    """Grading-policy text replacing the default one (``prompts/policy.md``)."""
    policy_file: Path | None = None
    """File whose text replaces the default grading policy."""
    grade_root: str | None = None
    """Where the group is staged in the grader box; None: ``/grade`` on container and
    sandbox runtimes, ``grade`` (relative to the box) on ``subprocess``, where absolute
    paths would land on the host."""
    stop_on_verdict: bool = True
    """End the grader's run as soon as ``submit_verdict`` accepts a verdict."""
    tools: GradeToolsetConfig = GradeToolsetConfig()

    @property
    def knobs(self) -> GarKnobs:
        """The knobs as the mapping takes them; ``f_min`` and ``lambda_max`` were checked
        when this config was, by the very types ``GarKnobs`` checks them with."""
        return GarKnobs.model_construct(f_min=self.f_min, lambda_max=self.lambda_max)

    def policy_text(self) -> str | None:
        if self.policy_file is not None:
            return self.policy_file.read_text()
        return self.policy


def task_hook(hook: Callable[..., Any]) -> staticmethod:
    """A hook of ``scoring.py`` as one of the task's own: verifiers finds it by the marks its
    decorator left and calls the function itself (unbound: it takes ``task`` and ``trace``)."""
    held = staticmethod(hook)
    vars(held).update(vars(hook))
    return held


class GroupGradeTask(vf.Task[GroupGradeData, GradeState, GroupGradeTaskConfig]):
    def __init__(self, data: GroupGradeData, config: GroupGradeTaskConfig | None = None) -> None:
        super().__init__(data, config)
        self.renders_prompt = self.data.prompt is None
        """The row brings no prompt of its own: the grader's prompt is rendered for it, and
        rendered again in setup when the runtime's grade root differs from the default."""
        if self.renders_prompt:
            self.data = self.data.model_copy(update={"prompt": self.prompt_for(self.default_root)})

    @property
    def default_root(self) -> str:
        return self.config.grade_root or CONTAINER_GRADE_ROOT

    @property
    def key(self) -> str:
        return self.data.group_id

    @property
    def hash(self) -> str:
        """verifiers' content hash, computed once per row (it reads it on every rollout)."""
        cached = self.__dict__.get("_hash")
        if cached is None or cached[0] is not self.data:
            cached = self.__dict__["_hash"] = (self.data, super().hash)
        return cached[1]

    @classmethod
    def toolsets(cls, config: GroupGradeTaskConfig) -> list[vf.Toolset]:
        return [GradeToolset(config.tools)]

    def prompt_for(self, grade_root: str) -> str:
        """The grader's prompt for a box whose group is staged at ``grade_root``, rendered
        once per root (this task serves every rollout of its row)."""
        prompts = self.__dict__.setdefault("_prompts", {})
        if grade_root not in prompts:
            policy = self.config.policy_text()
            prompts[grade_root] = render_prompt(
                self.data,
                grade_root=grade_root,
                policy=policy,
                command_timeout=self.config.tools.command_timeout,
                output_cap=self.config.tools.output_cap,
            )
        return prompts[grade_root]

    def grade_root(self, runtime: vf.Runtime) -> str:
        if self.config.grade_root is not None:
            return self.config.grade_root
        if isinstance(runtime, SubprocessRuntime):
            return SUBPROCESS_GRADE_ROOT
        return CONTAINER_GRADE_ROOT

    async def setup(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        root = self.grade_root(runtime)
        record = GradeRecord.start(self.data, trace)
        record.model_copy(update={"grade_root": root}).write(trace)
        await stage_files(runtime, functools.partial(grader_files, self.data, root), root=root)
        if self.renders_prompt and root != self.default_root:
            data = trace.task.data.model_copy(update={"prompt": self.prompt_for(root)})
            trace.task = trace.task.model_copy(update={"data": data})

    async def finalize(self, trace: vf.Trace, runtime: vf.Runtime) -> None:
        """The verdict ``submit_verdict`` accepted is the verdict, and is written to
        ``<grade root>/verdict.json`` for the record. Only when nothing was accepted is a
        ``verdict.json`` the grader wrote itself read. Either is validated, citation-checked,
        mapped to advantages and stored in the trace's ``GradeRecord``."""
        record = GradeRecord.start(self.data, trace)
        path = f"{record.grade_root or self.grade_root(runtime)}/{VERDICT_FILE}"
        raw: str | GroupVerdict | None = trace.state.submitted
        read_error: str | None = None
        if raw is not None:
            await runtime.write(path, raw.model_dump_json().encode())
        else:
            try:
                data = await runtime.read(path, max_bytes=VERDICT_MAX_BYTES)
                raw = data.decode(errors="replace")
            except (SandboxError, OSError) as e:
                read_error = str(e)[-500:]
        outcome = accept_verdict(self.data, raw)
        reason: FallbackReason | None = None
        if outcome.verdict is None:
            reason = "timeout" if trace.is_timeout else "invalid"
        record = record.model_copy(
            update={
                "verdict_read_error": read_error,
                "citations": outcome.citations,
                "verdict": outcome.verdict,
                "verdict_error": outcome.error,
                "fallback_reason": reason,
            }
        )
        record.mapped(self.data, self.config.knobs).write(trace)

    @vf.stop
    async def verdict_submitted(self, trace: vf.Trace) -> bool:
        return self.config.stop_on_verdict and trace.state.submitted is not None

    gar = task_hook(scoring.gar)
    tools = task_hook(scoring.tools)
    agreement_metrics = task_hook(scoring.agreement_metrics)
    valid = task_hook(scoring.valid)
    agreement = task_hook(scoring.agreement)


class GroupGradeTasksetConfig(vf.TasksetConfig):
    source: str | None = None
    """Rows to grade: a ``.jsonl``/``.json`` or ``.parquet`` file, or a Hugging Face dataset
    path; None: the labeled groups shipped with the package."""
    split: str = "train"
    """Split of a Hugging Face dataset source."""
    mode: Mode | None = None
    """Grade every loaded row in this mode (None: each row's own mode)."""
    checkpoint_roots: list[str] = Field(default_factory=list)
    """Folders outside the rows file's folder that `local:` checkpoints may name."""
    task: GroupGradeTaskConfig = GroupGradeTaskConfig()


class GroupGradeTaskset(vf.Taskset[GroupGradeTask, GroupGradeTasksetConfig]):
    def load(self) -> Iterator[GroupGradeTask]:
        """The rows of ``config.source`` as tasks; a source or row that cannot be used
        raises ``InputError`` (``file:line: what is wrong``)."""
        source = self.config.source or str(shipped_groups())
        roots = [Path(root).expanduser() for root in self.config.checkpoint_roots]
        for row in load_rows(source, self.config.split, self.config.mode, roots):
            yield GroupGradeTask(row, self.config.task)


class GroupGradeEnvConfig(vf.EnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig()
    """The grader's seat (``--env.agent.*``)."""
    grader_trainable: bool = False
    """Grade traces hold privileged data and a frozen judge's tokens: untrainable unless
    you are training the grader itself."""


class GroupGradeEnv(vf.Env[GroupGradeEnvConfig]):
    """One grader run per group; a run that failed before scoring still gets its
    fallback advantages recorded, with the reason."""

    def __init__(self, config: GroupGradeEnvConfig) -> None:
        super().__init__(config)
        if isinstance(config.agent.runtime, vf.SubprocessConfig):
            _warn_open_network()

    async def setup(self, agents: vf.Agents) -> None:
        agents.agent.trainable = self.config.grader_trainable

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        if isinstance(self.config.agent.runtime, vf.SubprocessConfig):
            # The subprocess runtime cannot restrict the network (nor anything else); it is
            # for local development, where the grader box's egress stays open.
            task = task.with_data(network_allow=["*"])
        await agents.agent.run(task)

    async def finalize(self, task: vf.Task, episode: vf.Episode) -> None:
        for trace in episode.traces:
            record = GradeRecord.start(task.data, trace)
            if record.gar is not None:
                continue
            reason = record.fallback_reason or ("timeout" if trace.is_timeout else "error")
            record = record.model_copy(update={"fallback_reason": reason})
            record = record.mapped(task.data, record.gar_config or DEFAULT_KNOBS)
            record.write(trace)
            trace.record_metrics(scoring.gar_metrics(task.data, record))
