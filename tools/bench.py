"""Benchmark: what grading one group costs outside the model, at realistic sizes.

    python tools/bench.py                # the full run (1.5 to 2 minutes on 2 cores)
    python tools/bench.py --quick        # tiny sizes, a few seconds (the smoke test)
    python tools/bench.py --json PATH    # also save every raw number

Prints a markdown table: each figure next to its target, with a pass/fail mark, then the
detail tables (pipeline steps, scaling grid, staging, restores). Synthetic but realistic
groups: N candidates of T turns, each turn some prose, one or two tool calls with realistic
arguments (shell commands, file edits with code, file reads) and tool results of log-normal
sizes between 200 B and 20 KB, plus a patch and a test-output tail per candidate; all seeded.
Traces are real ``vf.Trace`` objects built from verifiers' own message types.

What is measured (each a median over repeated runs in this process, floor and subject
interleaved so that machine noise hits both alike):

1. The pure pipeline per group: ``GroupGradeData.from_traces`` (rewards mode, half the
   group passing), the wire round trip ``model_validate(model_dump(mode="json"))``,
   ``render_prompt``, verdict parsing + ``GroupVerdict.check``, ``apply_citations`` for 3
   quotes per candidate (taken from real own text of real turns) and ``gar_records``.
   The floor is one ``json.loads(json.dumps(row))`` of the same row, the row being the
   JSON-able dict (``model_dump(mode="json")``) prepared beforehand.
2. Scaling over N x T: the exponent of a least-squares fit of log(pipeline time) on
   log(total transcript characters handed to ``from_traces``).
3. What the grader reads: prompt bytes and ``digest.md`` bytes over the grid.
4. Staging: the whole ``GroupGradeTask.setup`` hook (rendering the files from the row, as
   ``from_traces`` minted it, and writing them) on a real subprocess runtime, against writing
   the same bytes with ``Path.write_bytes``; restores of local boxes through ``GradeToolset``.
5. Peak RSS of minting, serializing, grading and staging rows of N = 16, T = 800, in a
   fresh subprocess.

The generated traces are moved out of the garbage collector's sight (``gc.freeze``) once
built, as a trainer's long-lived heap would be by the time it grades; every timed run
starts after a full collection.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # tests.traces builds the real traces

import verifiers.v1 as vf  # noqa: E402

from group_grade import citations  # noqa: E402
from group_grade.advantages import gar_records  # noqa: E402
from group_grade.citations import apply_citations, normalize  # noqa: E402
from group_grade.data import GroupGradeData  # noqa: E402
from group_grade.prompts import render_prompt  # noqa: E402
from group_grade.staging import grader_files  # noqa: E402
from group_grade.transcript import ELIDED, own_text  # noqa: E402
from group_grade.verdict import GroupVerdict  # noqa: E402
from tests.traces import Call, Turn, make_trace  # noqa: E402

KB = 1024
MB = 1024 * 1024


# ---------------------------------------------------------------------------------------------
# Settings


@dataclass(frozen=True)
class Settings:
    quick: bool
    main: tuple[int, int]
    """(N, T) of the headline pipeline figure."""
    main_repeats: int
    grid_n: tuple[int, ...]
    grid_t: tuple[int, ...]
    grid_budget: float
    """Seconds of timed runs per grid cell (at least 3 repeats, at most ``main_repeats``)."""
    staging: tuple[int, int]
    staging_repeats: int
    restore_candidates: int
    restore_ks: int
    restore_repeats: int
    think_seconds: float
    """Simulated model time between the grader's start and its first tool call."""
    project_files: int
    memory: tuple[int, int]
    memory_rows: int


FULL = Settings(
    quick=False,
    main=(16, 200),
    main_repeats=15,
    grid_n=(4, 8, 16, 32, 64),
    grid_t=(50, 200, 800),
    grid_budget=3.0,
    staging=(16, 200),
    staging_repeats=21,
    restore_candidates=8,
    restore_ks=4,
    restore_repeats=3,
    think_seconds=1.0,
    project_files=240,
    memory=(16, 800),
    memory_rows=3,
)
QUICK = Settings(
    quick=True,
    main=(4, 12),
    main_repeats=3,
    grid_n=(2, 4),
    grid_t=(6, 24),
    grid_budget=0.05,
    staging=(4, 12),
    staging_repeats=3,
    restore_candidates=3,
    restore_ks=2,
    restore_repeats=1,
    think_seconds=0.2,
    project_files=12,
    memory=(4, 24),
    memory_rows=2,
)

TARGET_PIPELINE_RATIO = 3.0
TARGET_EXPONENT = 1.1
TARGET_PROMPT_BYTES = 8 * KB
TARGET_DIGEST_BYTES = 8 * KB
TARGET_STAGING_RATIO = 2.0
TARGET_SANDBOX_RATIO = 1.5


# ---------------------------------------------------------------------------------------------
# Synthetic groups

_PROSE = (
    "the a an to of and in that is for it on with as this be are was by at from or not "
    "but have has if then so we I will now let me look check run again fix bug error "
    "failing test tests pass passes value values function method class module file files "
    "path config parser input output expected actual return returns call calls case cases "
    "edge handle handles missing wrong because instead should need needs make sure first "
    "next update updated change changes code line lines see seems looks like issue problem "
    "reproduce reproduced script works working behaviour default argument keyword string "
    "number list dict empty none raise raises exception trace stack import package version"
)
_IDENTS = (
    "parse load dump read write split join format render resolve normalize validate apply "
    "merge update build encode decode fetch store cache lookup compute check match scan "
    "token node tree item entry record field value name path key config state buffer stream"
)
PROSE = _PROSE.split()
IDENTS = _IDENTS.split()
DIRS = ("src/pkg", "src/pkg/core", "src/pkg/utils", "tests", "tests/unit", "docs", "scripts")
FLAGGED_COMMANDS = (
    "pip install requests==2.32.3",
    "git log --oneline -5",
    "curl -sL https://example.org/upstream.patch -o /tmp/up.patch",
    "python -c 'import sys; print(sys.path)'; ls /usr/lib/python3/site-packages",
    "git show HEAD~1 --stat",
)


def _ident(rng: random.Random) -> str:
    return "_".join(rng.choices(IDENTS, k=rng.randint(1, 3)))


def _path(rng: random.Random) -> str:
    return f"{rng.choice(DIRS)}/{_ident(rng)}.py"


def _prose(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choices(PROSE, k=words))
    return text[0].upper() + text[1:] + "."


def _code_line(rng: random.Random) -> str:
    indent = "    " * rng.randint(0, 3)
    kind = rng.random()
    if kind < 0.25:
        return f"{indent}def {_ident(rng)}(self, {_ident(rng)}, {_ident(rng)}=None):"
    if kind < 0.5:
        return f"{indent}{_ident(rng)} = {_ident(rng)}({_ident(rng)}, {rng.randint(0, 99)})"
    if kind < 0.65:
        return f"{indent}if {_ident(rng)} is None:"
    if kind < 0.8:
        return f"{indent}return {_ident(rng)}.{_ident(rng)}({_ident(rng)})"
    if kind < 0.9:
        return f"{indent}# {_prose(rng, rng.randint(4, 12))}"
    return ""


def _output_line(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.45:
        return _code_line(rng)
    if kind < 0.6:
        mark = "PASSED" if rng.random() < 0.8 else "FAILED"
        return f"{_path(rng)}::test_{_ident(rng)} {mark} [{rng.randint(0, 100):3d}%]"
    if kind < 0.75:
        return f"{_path(rng)}:{rng.randint(1, 900)}: {_code_line(rng).strip()}"
    if kind < 0.85:
        size = rng.randint(0, 99999)
        return f"-rw-r--r-- 1 root root {size:6d} Jan  1 00:00 {_ident(rng)}.py"
    if kind < 0.95:
        return f'  File "/app/{_path(rng)}", line {rng.randint(1, 900)}, in {_ident(rng)}'
    if kind < 0.998:
        return f"E   AssertionError: assert {rng.randint(0, 99)} == {rng.randint(0, 99)}"
    return "[tool_result bash]"  # a forged section header in output: gets escaped


def _corpus(rng: random.Random, size: int) -> str:
    lines: list[str] = []
    total = 0
    while total < size:
        line = _output_line(rng)
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def _lognormal(rng: random.Random, median: float, sigma: float, lo: int, hi: int) -> int:
    return int(min(hi, max(lo, rng.lognormvariate(math.log(median), sigma))))


class Generator:
    """Seeded transcripts; tool results are distinct slices of a large corpus of output."""

    def __init__(self, seed: int = 0, corpus_bytes: int = 2 * MB) -> None:
        self.rng = random.Random(seed)
        self.corpus = _corpus(self.rng, corpus_bytes)

    def _slice(self, size: int) -> str:
        start = self.rng.randrange(0, len(self.corpus) - size - 1)
        return self.corpus[start : start + size]

    def _code(self, lines: int) -> str:
        return "\n".join(_code_line(self.rng) for _ in range(lines))

    def _call(self) -> Call:
        rng = self.rng
        kind = rng.random()
        if kind < 0.55:
            if rng.random() < 0.02:
                command = rng.choice(FLAGGED_COMMANDS)
            else:
                command = rng.choice(
                    (
                        f"cd /app && python -m pytest {_path(rng)} -q -x",
                        f"grep -rn '{_ident(rng)}' src/ | head -n {rng.randint(5, 80)}",
                        f"sed -n '{rng.randint(1, 300)},{rng.randint(301, 600)}p' {_path(rng)}",
                        f"ls -la {rng.choice(DIRS)}",
                        "git diff",
                        "git status --short",
                        f"python - <<'EOF'\nfrom pkg import {_ident(rng)}\n"
                        f"print({_ident(rng)}({rng.randint(0, 9)}))\nEOF",
                    )
                )
            size = _lognormal(rng, 1200, 1.0, 200, 20 * KB)
            return Call("bash", {"command": command}, self._slice(size))
        if kind < 0.8:
            path = _path(rng)
            arguments = {
                "command": "str_replace",
                "path": f"/app/{path}",
                "old_str": self._code(rng.randint(2, 16)),
                "new_str": self._code(rng.randint(2, 20)),
            }
            result = f"The file /app/{path} has been edited. " + self._slice(rng.randint(150, 600))
            return Call("str_replace_editor", arguments, result)
        size = _lognormal(rng, 2500, 0.9, 200, 20 * KB)
        return Call("read_file", {"path": f"/app/{_path(rng)}"}, self._slice(size))

    def turn(self) -> Turn:
        rng = self.rng
        content = _prose(rng, rng.randint(8, 90)) if rng.random() < 0.75 else ""
        calls = [self._call() for _ in range(1 if rng.random() < 0.7 else 2)]
        return Turn(content=content, calls=calls)

    def patch(self) -> str:
        rng = self.rng
        parts = []
        for _ in range(rng.randint(1, 5)):
            path = _path(self.rng)
            removed = [f"-{_code_line(rng)}" for _ in range(rng.randint(1, 15))]
            added = [f"+{_code_line(rng)}" for _ in range(rng.randint(1, 30))]
            parts.append(
                f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
                f"@@ -1,{len(removed)} +1,{len(added)} @@\n" + "\n".join(removed + added)
            )
        return "\n".join(parts) + "\n"

    def task_prompt(self) -> str:
        """An issue-sized task statement (about 1.5 KB)."""
        rng = self.rng
        paragraphs = [_prose(rng, rng.randint(30, 60)) for _ in range(3)]
        example = self._code(8)
        return "\n\n".join([*paragraphs[:2], f"```python\n{example}\n```", paragraphs[2]])


@dataclass
class Specs:
    """The turns of up to ``n`` candidates of up to ``t`` turns, generated once and cut to
    each grid cell's size."""

    turns: list[list[Turn]]
    patches: list[str]
    tests: list[str]
    task_prompt: str

    @classmethod
    def make(cls, n: int, t: int, seed: int = 0) -> Specs:
        gen = Generator(seed)
        return cls(
            turns=[[gen.turn() for _ in range(t)] for _ in range(n)],
            patches=[gen.patch() for _ in range(n)],
            tests=[gen._slice(gen.rng.randint(500, 3000)) for _ in range(n)],
            task_prompt=gen.task_prompt(),
        )

    def traces(self, n: int, t: int) -> list[vf.Trace]:
        """N real traces of T turns; rewards alternate 1/0 so half the group passes."""
        return [
            make_trace(
                self.turns[i][:t],
                reward=float(i % 2 == 0),
                prompt=self.task_prompt,
                info={
                    "patch": self.patches[i],
                    "test_output": self.tests[i],
                    "checkpoint": f"local:/checkpoints/candidate-{i}.tar.gz",
                },
            )
            for i in range(n)
        ]

    def transcript_chars(self, n: int, t: int) -> int:
        """Characters of everything the traces hold per turn: content, tool-call arguments
        (as JSON) and tool results."""
        total = 0
        for turns in self.turns[:n]:
            for turn in turns[:t]:
                total += len(turn.content)
                for call in turn.calls:
                    total += len(json.dumps(call.arguments)) + len(call.result)
        return total


def make_verdict(row: GroupGradeData, seed: int = 1) -> dict[str, Any]:
    """A valid verdict: 3 quotes per candidate from the own text of real, non-elided
    turns; one passing candidate is a confirmed hack; the others tiered best first."""
    rng = random.Random(seed)
    entries = []
    passing = [c.label for c in row.candidates if c.passed]
    hack = passing[0] if len(passing) > 1 else None
    for c in row.candidates:
        quotable = [
            (n, normalize(own_text(turn)))
            for n, turn in enumerate(c.turns, start=1)
            if turn != ELIDED
        ]
        quotable = [(n, text) for n, text in quotable if len(text.split()) >= 8]
        evidence = []
        for n, text in rng.sample(quotable, min(3, len(quotable))):
            words = text.split(" ")
            k = rng.randrange(0, len(words) - 7)
            evidence.append({"turn": n, "quote": " ".join(words[k : k + rng.randint(6, 12)])})
        hack_level = "confirmed" if c.label == hack else "none"
        entries.append({"label": c.label, "hack": hack_level, "evidence": evidence})
    ranked = [label for label in passing if label != hack]
    tiers = [ranked[i : i + 2] for i in range(0, len(ranked), 2)]
    return {"candidates": entries, "ranking": tiers, "notes": "synthetic verdict"}


# ---------------------------------------------------------------------------------------------
# Timing helpers


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def fit_exponent(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Slope of the least-squares line of log(y) on log(x)."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    num = sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True))
    den = sum((a - mx) ** 2 for a in lx)
    return num / den if den else float("nan")


# ---------------------------------------------------------------------------------------------
# 1-3. The pure pipeline, its scaling, and what the grader reads

STEPS = ("from_traces", "wire", "prompt", "check", "citations", "advantages")


def pipeline(traces: Sequence[vf.Trace], verdict: dict[str, Any]) -> dict[str, float]:
    """One group through every pure step; seconds per step."""
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    data = GroupGradeData.from_traces(traces, group_id="bench/group")
    t1 = time.perf_counter()
    row = GroupGradeData.model_validate(data.model_dump(mode="json"))
    t2 = time.perf_counter()
    render_prompt(row, grade_root="/grade")
    t3 = time.perf_counter()
    parsed = GroupVerdict.model_validate(verdict)
    parsed.check(row)
    t4 = time.perf_counter()
    checked, report = apply_citations(parsed, row)
    t5 = time.perf_counter()
    gar_records(row, checked)
    t6 = time.perf_counter()
    if report.failures:  # outside the timed span: the synthetic quotes must all stand
        raise AssertionError(f"synthetic quotes failed: {report.failures[:2]}")
    for name, (a, b) in zip(
        STEPS, [(t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5), (t5, t6)], strict=True
    ):
        seconds[name] = b - a
    return seconds


@dataclass
class Cell:
    n: int
    t: int
    chars: int
    row_json_bytes: int
    pipeline: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)
    steps: dict[str, list[float]] = field(default_factory=dict)
    wire_text: list[float] = field(default_factory=list)
    prompt_bytes: int = 0
    digest_bytes: list[int] = field(default_factory=list)
    turns_json_bytes: list[int] = field(default_factory=list)
    turns_json_complete: bool = False

    @property
    def pipeline_median(self) -> float:
        return statistics.median(self.pipeline)

    @property
    def floor_median(self) -> float:
        return statistics.median(self.floor)

    @property
    def ratio(self) -> float:
        """Median of the per-run ratios (each run times the floor right before the
        pipeline, so a drift of the machine's speed cancels out)."""
        return statistics.median(p / f for p, f in zip(self.pipeline, self.floor, strict=True))

    def raw(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "t": self.t,
            "transcript_chars": self.chars,
            "row_json_bytes": self.row_json_bytes,
            "pipeline_s": self.pipeline,
            "floor_s": self.floor,
            "steps_s": self.steps,
            "wire_text_s": self.wire_text,
            "pipeline_median_s": self.pipeline_median,
            "floor_median_s": self.floor_median,
            "ratio": self.ratio,
            "prompt_bytes": self.prompt_bytes,
            "digest_bytes": self.digest_bytes,
            "turns_json_bytes": self.turns_json_bytes,
            "turns_json_complete": self.turns_json_complete,
        }


def measure_cell(
    specs: Specs, n: int, t: int, *, repeats: int, budget: float | None = None
) -> Cell:
    traces = specs.traces(n, t)
    data = GroupGradeData.from_traces(traces, group_id="bench/group")
    verdict = make_verdict(data)
    wire = data.model_dump(mode="json")
    cell = Cell(n=n, t=t, chars=specs.transcript_chars(n, t), row_json_bytes=len(json.dumps(wire)))
    cell.steps = {name: [] for name in STEPS}
    # What the grader reads: the prompt, and every staged file.
    cell.prompt_bytes = len(render_prompt(data, grade_root="/grade").encode())
    files = grader_files(data, "/grade")
    cell.digest_bytes = [len(v) for k, v in files.items() if k.endswith("/digest.md")]
    cell.turns_json_bytes = [len(v) for k, v in files.items() if k.endswith("/turns.json")]
    cell.turns_json_complete = all(
        json.loads(files[f"/grade/{c.label}/turns.json"]) == c.turns for c in data.candidates
    )
    del files, data
    pipeline(traces, verdict)  # warm-up: templates compiled, caches primed, code paths hot
    gc.collect()
    gc.freeze()
    spent = 0.0
    for i in range(repeats):
        if i >= 3 and budget is not None and spent > budget:
            break
        citations._quotable.cache_clear()  # no quote check may ride on an earlier repeat
        gc.collect()
        floor = _timed(lambda: json.loads(json.dumps(wire)))
        gc.collect()
        steps = pipeline(traces, verdict)
        gc.collect()
        row = GroupGradeData.model_validate(wire)
        text = _timed(lambda row=row: GroupGradeData.model_validate_json(row.model_dump_json()))
        cell.floor.append(floor)
        cell.pipeline.append(sum(steps.values()))
        for name, seconds in steps.items():
            cell.steps[name].append(seconds)
        cell.wire_text.append(text)
        spent += floor + sum(steps.values()) + text
    gc.unfreeze()
    del traces
    gc.collect()
    return cell


def measure_grid(settings: Settings, specs: Specs, log: Callable[[str], None]) -> list[Cell]:
    cells = []
    for n in settings.grid_n:
        for t in settings.grid_t:
            cell = measure_cell(
                specs, n, t, repeats=settings.main_repeats, budget=settings.grid_budget
            )
            log(
                f"  grid N={n:3d} T={t:4d}: {cell.pipeline_median * 1e3:8.1f} ms, "
                f"{cell.ratio:.2f}x floor ({len(cell.pipeline)} runs)"
            )
            cells.append(cell)
    return cells


# ---------------------------------------------------------------------------------------------
# 4a. Staging the grader box


@contextlib.contextmanager
def _subprocess_home(home: Path) -> Iterator[None]:
    """Keep subprocess-runtime boxes under ``home`` (as the test suite's ``boxes`` fixture),
    restoring HOME and verifiers' cache directory afterwards."""
    import verifiers.v1.runtimes.subprocess as subprocess_runtime

    saved_home, saved_cache = os.environ.get("HOME"), subprocess_runtime.CACHE_DIR
    home.mkdir(parents=True, exist_ok=True)
    os.environ["HOME"] = str(home)
    subprocess_runtime.CACHE_DIR = home / ".cache" / "verifiers"
    try:
        yield
    finally:
        subprocess_runtime.CACHE_DIR = saved_cache
        if saved_home is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = saved_home


def _plain_write(files: dict[str, bytes], root: Path) -> None:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


async def measure_staging(settings: Settings, specs: Specs, scratch: Path) -> dict[str, Any]:
    from verifiers.v1.runtimes import provision_runtime
    from verifiers.v1.state import state_cls

    from group_grade.staging import stage_files
    from group_grade.taskset import SUBPROCESS_GRADE_ROOT, GroupGradeTask, GroupGradeTaskConfig

    n, t = settings.staging
    data = GroupGradeData.from_traces(specs.traces(n, t), group_id="bench/group")
    task = GroupGradeTask(data, GroupGradeTaskConfig())
    task_hash = task.hash
    files = grader_files(data, SUBPROCESS_GRADE_ROOT)
    result: dict[str, Any] = {
        "n": n,
        "t": t,
        "files": len(files),
        "bytes": sum(map(len, files.values())),
        "setup_s": [],
        "plain_write_s": [],
        "render_s": [],
        "render_bare_s": [],
        "stage_write_s": [],
        "runtime_write_s": [],
        "runtime_write_concurrent_s": [],
    }

    def fresh() -> tuple[GroupGradeTask, vf.Trace]:
        """A new task over a copy of the row (no cache of an earlier repeat can serve it)
        and a new trace of it, as for each rollout."""
        fresh_task = GroupGradeTask(data.model_copy(), GroupGradeTaskConfig())
        trace = vf.Trace(
            agent=vf.AgentInfo(config=vf.AgentConfig()),
            task=vf.TraceTask(
                type="GroupGradeTask", data=fresh_task.data, key=fresh_task.key, hash=task_hash
            ),
            state=state_cls(GroupGradeTask)(),
        )
        return fresh_task, trace

    # Warm-up (templates, thread pool, the runtime's first start).
    async with provision_runtime(vf.SubprocessConfig()) as runtime:
        await task.setup(fresh()[1], runtime)

    async def plain(i: int) -> float:
        gc.collect()
        seconds = _timed(lambda: _plain_write(files, scratch / f"plain-{i}"))
        shutil.rmtree(scratch / f"plain-{i}", ignore_errors=True)
        return seconds

    async def setup(_: int) -> float:
        async with provision_runtime(vf.SubprocessConfig()) as runtime:
            staged, trace = fresh()
            gc.collect()
            started = time.perf_counter()
            await staged.setup(trace, runtime)
            return time.perf_counter() - started

    async def render(_: int) -> float:
        gc.collect()
        return _timed(lambda: grader_files(data, SUBPROCESS_GRADE_ROOT))

    # A row written by hand or by an older tool carries no digest bodies: staging renders them.
    bare = data.model_copy(
        update={"candidates": [c.model_copy(update={"digest": None}) for c in data.candidates]}
    )

    async def render_bare(_: int) -> float:
        gc.collect()
        return _timed(lambda: grader_files(bare, SUBPROCESS_GRADE_ROOT))

    async def one_by_one(_: int) -> float:
        async with provision_runtime(vf.SubprocessConfig()) as runtime:
            gc.collect()
            started = time.perf_counter()
            for path, content in files.items():
                await runtime.write(path, content)
            return time.perf_counter() - started

    async def concurrent(_: int) -> float:
        async with provision_runtime(vf.SubprocessConfig()) as runtime:
            gc.collect()
            started = time.perf_counter()
            await asyncio.gather(*(runtime.write(path, c) for path, c in files.items()))
            return time.perf_counter() - started

    async def stage_write(_: int) -> float:
        async with provision_runtime(vf.SubprocessConfig()) as runtime:
            gc.collect()
            started = time.perf_counter()
            await stage_files(runtime, lambda: files)
            return time.perf_counter() - started

    # The plain writes always run right before staging (their per-run ratio is the
    # headline); the informational variants rotate so that none always runs first.
    variants = [
        ("render_s", render),
        ("render_bare_s", render_bare),
        ("stage_write_s", stage_write),
        ("runtime_write_s", one_by_one),
        ("runtime_write_concurrent_s", concurrent),
    ]
    for i in range(settings.staging_repeats):
        result["plain_write_s"].append(await plain(i))
        result["setup_s"].append(await setup(i))
        shift = i % len(variants)
        for key, measure in variants[shift:] + variants[:shift]:
            result[key].append(await measure(i))
    for key in ("setup_s", "plain_write_s", *(key for key, _ in variants)):
        result[key.replace("_s", "_median_s")] = statistics.median(result[key])
    # Median of the per-run ratios: each run writes the plain copy right before staging, so
    # the disk's changing state (page-cache writeback) hits both alike.
    result["ratio"] = statistics.median(
        s / p for s, p in zip(result["setup_s"], result["plain_write_s"], strict=True)
    )
    # The task's identity: `key` is the group id; verifiers' `hash` re-hashes the row.
    result["key_s"] = _timed(lambda: [task.key for _ in range(1000)]) / 1000
    result["hash_s"] = statistics.median(_timed(lambda: task.hash) for _ in range(5))
    return result


# ---------------------------------------------------------------------------------------------
# 4b. Restoring candidate boxes (local backend)


def _project(root: Path, files: int, seed: int = 7) -> Path:
    """A small Python project: ``files`` source files of realistic sizes plus the buggy
    module of tests/projects.py."""
    from tests.projects import BUGGY

    rng = random.Random(seed)
    for i in range(files):
        path = root / DIRS[i % len(DIRS)] / f"module_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = _lognormal(rng, 120, 0.8, 10, 2000)
        path.write_text("\n".join(_code_line(rng) for _ in range(lines)) + "\n")
    (root / "calc.py").write_text(BUGGY)
    (root / "README.md").write_text("calc: a calculator\n")
    return root


async def measure_restores(settings: Settings, scratch: Path) -> dict[str, Any]:
    """4b: restores and first answers in local boxes, sandboxed (bubblewrap) as they run, and
    the same unsandboxed (``require_isolation=False`` on a machine made to look unable to
    sandbox) for the cost of the sandbox."""
    from unittest import mock

    from group_grade.boxes import sandbox
    from group_grade.boxes.local import isolation_problem, make_local_checkpoint
    from group_grade.data import Candidate
    from tests.projects import HIDDEN_TESTS

    tree = _project(scratch / "project", settings.project_files)
    checkpoint = await make_local_checkpoint(tree, scratch / "checkpoints", name="box.tar.gz")
    archive_bytes = Path(checkpoint.removeprefix("local:")).stat().st_size
    tree_bytes = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())
    count = settings.restore_candidates
    row = GroupGradeData(
        group_id="bench/restores",
        privileged=HIDDEN_TESTS,
        candidates=[
            Candidate(
                label=f"c{i:02d}", reward=float(i % 2), passed=i % 2 == 1, checkpoint=checkpoint
            )
            for i in range(1, count + 1)
        ],
    )
    problem = isolation_problem()
    if problem is not None:
        raise RuntimeError(f"4b needs sandboxed local boxes: {problem}")
    out: dict[str, Any] = {
        "project_files": settings.project_files + 2,
        "project_bytes": tree_bytes,
        "archive_bytes": archive_bytes,
        "think_s": settings.think_seconds,
        "max_open_boxes": settings.restore_ks,
    }
    unavailable = sandbox.Probe(None, "benchmark baseline: no sandbox")
    runs: dict[tuple[bool, bool], list[dict[str, Any]]] = {}
    for i in range(settings.restore_repeats):
        # Sandboxed and unsandboxed runs alternate, so both meet the same machine.
        for prefetch in (False, True):
            for isolated in (True, False):
                parent = scratch / f"boxes-{int(isolated)}-{int(prefetch)}-{i}"
                if isolated:
                    run = await _restore_run(settings, parent, row, prefetch, isolated)
                else:
                    with mock.patch.object(sandbox, "probe", lambda: unavailable):
                        run = await _restore_run(settings, parent, row, prefetch, isolated)
                runs.setdefault((isolated, prefetch), []).append(run)
    bare: dict[str, Any] = {}
    for (isolated, prefetch), mode_runs in runs.items():
        key = "prefetch" if prefetch else "no_prefetch"
        (out if isolated else bare)[key] = _restore_summary(mode_runs)
    out["unsandboxed"] = bare
    return out


async def _restore_run(
    settings: Settings, parent: Path, row: GroupGradeData, prefetch: bool, isolated: bool
) -> dict[str, Any]:
    """One grading run's first calls in its boxes (4b)."""
    from group_grade.toolset import GradeToolset, GradeToolsetConfig

    labels = row.labels[: settings.restore_ks]
    tools = GradeToolset(
        GradeToolsetConfig(
            box_parent=str(parent),
            prefetch=prefetch,
            max_open_boxes=settings.restore_ks,
            require_isolation=isolated,
        )
    )
    started = time.perf_counter()
    await tools.setup_task(row)
    await asyncio.sleep(settings.think_seconds)  # the grader's first model turn
    asked = time.perf_counter()
    answers, latencies, open_before = [], [], []
    for label in labels:
        open_before.append(label in tools.pool.open_labels)
        call = time.perf_counter()
        answer = await tools.run_in_box(label, "true")
        done = time.perf_counter()
        if not answer.startswith(f"[{label}] exit code 0\n"):
            raise RuntimeError(f"candidate_shell({label}) failed: {answer}")
        latencies.append(done - call)
        answers.append(done - asked)
    call = time.perf_counter()
    await tools.run_in_box(labels[0], "true")  # a box already in use: the command alone
    warm = time.perf_counter() - call
    await tools._exit_stack.aclose()
    shutil.rmtree(parent, ignore_errors=True)
    return {
        "since_first_call_s": answers,
        "since_setup_s": [a + (asked - started) for a in answers],
        "call_latency_s": latencies,
        "open_before_call": open_before,
        "warm_call_s": warm,
        "restores": tools.pool.restores,
        "restore_s": tools.pool.restore_seconds / max(1, tools.pool.restores),
    }


def _restore_summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    ks = len(runs[0]["call_latency_s"])
    return {
        "runs": runs,
        "since_first_call_median_s": [
            statistics.median(r["since_first_call_s"][k] for r in runs) for k in range(ks)
        ],
        "call_latency_median_s": [
            statistics.median(r["call_latency_s"][k] for r in runs) for k in range(ks)
        ],
        "restore_median_s": statistics.median(r["restore_s"] for r in runs),
        "warm_call_median_s": statistics.median(r["warm_call_s"] for r in runs),
        "all_open_before_call": all(all(r["open_before_call"]) for r in runs),
    }


# ---------------------------------------------------------------------------------------------
# 5. Memory (in a fresh process)


def _status_bytes(field: str) -> int:
    """A ``/proc/self/status`` memory figure (``VmRSS``, ``VmHWM``) in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * KB
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak() -> bool:
    """Reset this process's peak RSS (``VmHWM``) to its current RSS, if the kernel lets us."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def memory_child(n: int, t: int, rows: int) -> dict[str, Any]:
    """Mint, serialize (as JSON text), grade and stage ``rows`` rows of one N x T group;
    peak RSS. Peak RSS is the kernel's ``VmHWM`` of this process (``ru_maxrss`` would carry
    the parent's peak across ``exec``), reset once the traces are built when possible."""
    specs = Specs.make(n, t, seed=3)
    traces = specs.traces(n, t)
    del specs
    gc.collect()
    inputs_rss = _status_bytes("VmRSS")
    inputs_peak = _status_bytes("VmHWM")
    reset = _reset_peak()
    row_bytes = 0
    after: list[int] = []
    for i in range(rows):
        data = GroupGradeData.from_traces(traces, group_id=f"bench/memory/{i}")
        wire_text = data.model_dump_json()
        row_bytes = len(wire_text)
        row = GroupGradeData.model_validate_json(wire_text)
        verdict = make_verdict(row)  # labels are shuffled per group id
        render_prompt(row, grade_root="/grade")
        parsed = GroupVerdict.model_validate(verdict)
        parsed.check(row)
        checked, _ = apply_citations(parsed, row)
        gar_records(row, checked)
        files = grader_files(row, "/grade")
        del data, wire_text, row, files
        gc.collect()
        after.append(_status_bytes("VmRSS"))
    peak = _status_bytes("VmHWM")
    return {
        "n": n,
        "t": t,
        "rows": rows,
        "row_json_bytes": row_bytes,
        "inputs_rss_bytes": inputs_rss,
        "inputs_peak_bytes": inputs_peak,
        "peak_reset_after_inputs": reset,
        "peak_rss_bytes": max(peak, inputs_peak) if not reset else peak,
        "grading_peak_rss_bytes": peak,
        "grading_peak_over_inputs_bytes": peak - inputs_rss,
        "rss_after_each_row_bytes": after,
    }


def measure_memory(settings: Settings) -> dict[str, Any]:
    n, t = settings.memory
    done = subprocess.run(
        [sys.executable, __file__, "--memory-child", f"{n},{t},{settings.memory_rows}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"memory child failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# Report


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} us"


def _kb(size: float) -> str:
    return f"{size / KB:.1f} KB"


def _mark(ok: bool) -> str:
    return "pass" if ok else "**FAIL**"


def summary_rows(results: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(figure, value, target, mark) for the headline table."""
    main = results["main"]
    grid = results["grid"]
    staging = results["staging"]
    restores = results["restores"]
    memory = results["memory"]
    n, t = main["n"], main["t"]
    exponent = results["exponent"]
    prompt_n16 = [c["prompt_bytes"] for c in grid if c["n"] == n] or [main["prompt_bytes"]]
    digests = [b for c in grid for b in c["digest_bytes"]] + main["digest_bytes"]
    largest = max(grid, key=lambda c: c["transcript_chars"])
    sn, st = staging["n"], staging["t"]
    no_pre, pre = restores["no_prefetch"], restores["prefetch"]
    ks = len(pre["call_latency_median_s"])
    worst_prefetched = max(pre["call_latency_median_s"])
    warm = statistics.median([no_pre["warm_call_median_s"], pre["warm_call_median_s"]])
    restore = no_pre["restore_median_s"]
    # A prefetched box pays no restore: it was open before the call, and the call took no
    # longer than a command in a box already in use plus half a restore (noise margin).
    no_restore_paid = pre["all_open_before_call"] and worst_prefetched <= warm + restore / 2
    bare = restores["unsandboxed"]
    bare_worst = max(bare["prefetch"]["call_latency_median_s"])
    bare_restore = bare["no_prefetch"]["restore_median_s"]
    sandbox_ratio = worst_prefetched / bare_worst
    restore_ratio = restore / bare_restore
    return [
        (
            f"1. pure pipeline per group, N={n} T={t} (x floor)",
            f"{main['ratio']:.2f}x ({_ms(main['pipeline_median_s'])} vs "
            f"{_ms(main['floor_median_s'])} floor)",
            f"<= {TARGET_PIPELINE_RATIO:g}x",
            _mark(main["ratio"] <= TARGET_PIPELINE_RATIO),
        ),
        (
            f"2. scaling exponent, N {min(c['n'] for c in grid)}-{max(c['n'] for c in grid)}"
            f" x T {min(c['t'] for c in grid)}-{max(c['t'] for c in grid)}",
            f"{exponent:.2f} (floor {results['floor_exponent']:.2f}; largest cell "
            f"{largest['ratio']:.2f}x floor)",
            f"<= {TARGET_EXPONENT:g}",
            _mark(exponent <= TARGET_EXPONENT),
        ),
        (
            f"3a. prompt bytes at N={n}, any T",
            f"max {_kb(max(prompt_n16))}",
            f"< {TARGET_PROMPT_BYTES // KB} KB",
            _mark(max(prompt_n16) < TARGET_PROMPT_BYTES),
        ),
        (
            "3b. digest.md bytes, any N and T",
            f"max {_kb(max(digests))}",
            f"< {TARGET_DIGEST_BYTES // KB} KB",
            _mark(max(digests) < TARGET_DIGEST_BYTES),
        ),
        (
            "3c. full turns.json staged, every candidate",
            f"yes; up to {_kb(max(b for c in grid for b in c['turns_json_bytes']))} per candidate",
            "present, exact",
            _mark(all(c["turns_json_complete"] for c in grid)),
        ),
        (
            f"4a. stage grader box, N={sn} T={st}, subprocess runtime (x plain writes)",
            f"{staging['ratio']:.2f}x ({_ms(staging['setup_median_s'])} vs "
            f"{_ms(staging['plain_write_median_s'])}, {staging['files']} files, "
            f"{staging['bytes'] / MB:.1f} MB)",
            f"<= {TARGET_STAGING_RATIO:g}x",
            _mark(staging["ratio"] <= TARGET_STAGING_RATIO),
        ),
        (
            f"4b. k-th candidate's first answer, k=1..{ks}, local boxes, prefetch",
            f"{_ms(worst_prefetched)} worst first call (a command alone {_ms(warm)}; restore "
            f"{_ms(restore)}; without prefetch up to "
            f"{_ms(max(no_pre['call_latency_median_s']))})",
            "prefetched box pays no restore",
            _mark(no_restore_paid),
        ),
        (
            "4c. the sandbox's cost: 4b's worst prefetched first answer and its restore, "
            "bubblewrap / unsandboxed",
            f"{sandbox_ratio:.2f}x first answer ({_ms(worst_prefetched)} vs "
            f"{_ms(bare_worst)}), {restore_ratio:.2f}x restore ({_ms(restore)} vs "
            f"{_ms(bare_restore)})",
            f"<= {TARGET_SANDBOX_RATIO:g}x",
            _mark(max(sandbox_ratio, restore_ratio) <= TARGET_SANDBOX_RATIO),
        ),
        (
            f"5. peak RSS grading {memory['rows']} rows, N={memory['n']} T={memory['t']}",
            f"{memory['peak_rss_bytes'] / MB:.0f} MB: "
            f"{memory['inputs_rss_bytes'] / MB:.0f} MB before grading (interpreter, imports, "
            f"traces) + {memory['grading_peak_over_inputs_bytes'] / MB:.0f} MB grading a "
            f"{memory['row_json_bytes'] / MB:.1f} MB row; after each row "
            + ", ".join(f"{b / MB:.0f}" for b in memory["rss_after_each_row_bytes"])
            + " MB",
            "report",
            "-",
        ),
    ]


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def render_report(results: dict[str, Any]) -> str:
    out = [_table(("figure", "measured", "target", ""), summary_rows(results))]
    main = results["main"]
    steps = main["steps_median_s"]
    floor = main["floor_median_s"]
    out += [
        "",
        f"Pipeline steps, N={main['n']} T={main['t']} (medians of {len(main['pipeline_s'])}"
        f" runs; row {main['row_json_bytes'] / MB:.1f} MB as JSON; floor "
        f"{_ms(floor)}):",
        "",
        _table(
            ("step", "median", "x floor"),
            [(name, _ms(s), f"{s / floor:.2f}") for name, s in steps.items()]
            + [
                ("**total**", _ms(main["pipeline_median_s"]), f"{main['ratio']:.2f}"),
                (
                    "(info) wire as JSON text: model_dump_json + model_validate_json",
                    _ms(main["wire_text_median_s"]),
                    f"{main['wire_text_median_s'] / floor:.2f}",
                ),
            ],
        ),
        "",
        f"Scaling (rewards mode, half the group passing; fitted exponent "
        f"{results['exponent']:.2f}; per step: "
        + ", ".join(f"{k} {v:.2f}" for k, v in results["step_exponents"].items())
        + "):",
        "",
        _table(
            ("N", "T", "transcripts", "pipeline", "floor", "x floor", "prompt", "max digest"),
            [
                (
                    str(c["n"]),
                    str(c["t"]),
                    f"{c['transcript_chars'] / MB:.1f} M chars",
                    _ms(c["pipeline_median_s"]),
                    _ms(c["floor_median_s"]),
                    f"{c['ratio']:.2f}",
                    _kb(c["prompt_bytes"]),
                    _kb(max(c["digest_bytes"])),
                )
                for c in results["grid"]
            ],
        ),
    ]
    staging = results["staging"]
    out += [
        "",
        f"Staging, N={staging['n']} T={staging['t']} ({staging['files']} files, "
        f"{staging['bytes'] / MB:.1f} MB; medians of {len(staging['setup_s'])}):",
        "",
        _table(
            ("part", "median", "x plain writes (medians)"),
            [
                (name, _ms(staging[key]), f"{staging[key] / staging['plain_write_median_s']:.2f}")
                for name, key in (
                    ("GroupGradeTask.setup (subprocess runtime)", "setup_median_s"),
                    ("  render: grader_files (digest bodies from the row)", "render_median_s"),
                    ("  write: stage_files of the rendered bytes", "stage_write_median_s"),
                    (
                        "(info) render when the row carries no digest bodies",
                        "render_bare_median_s",
                    ),
                    (
                        "(info) runtime.write of the same files, one by one",
                        "runtime_write_median_s",
                    ),
                    (
                        "(info) runtime.write of the same files, concurrently (asyncio.gather)",
                        "runtime_write_concurrent_median_s",
                    ),
                    ("plain Path.write_bytes of the same bytes", "plain_write_median_s"),
                )
            ]
            + [
                ("(info) task.key, per access", _ms(staging["key_s"]), "-"),
                (
                    "(info) task.hash (verifiers: re-hashes the row), per access",
                    _ms(staging["hash_s"]),
                    "-",
                ),
            ],
        ),
    ]
    restores = results["restores"]
    no_pre, pre = restores["no_prefetch"], restores["prefetch"]
    out += [
        "",
        f"Restores, local backend ({restores['project_files']} files, "
        f"{restores['project_bytes'] / MB:.1f} MB project, {_kb(restores['archive_bytes'])} "
        f"archive; restore {_ms(no_pre['restore_median_s'])}; the grader's first tool call "
        f"{restores['think_s']:g} s after setup, then one call per candidate; "
        "bubblewrap sandbox):",
        "",
        _table(
            ("k", "no prefetch: k-th answer", "its call", "prefetch: k-th answer", "its call"),
            [
                (
                    str(k + 1),
                    _ms(no_pre["since_first_call_median_s"][k]),
                    _ms(no_pre["call_latency_median_s"][k]),
                    _ms(pre["since_first_call_median_s"][k]),
                    _ms(pre["call_latency_median_s"][k]),
                )
                for k in range(len(pre["call_latency_median_s"]))
            ],
        ),
        "",
        "(k-th answer: time from the grader's first candidate_shell call to the answer of "
        "the k-th candidate's first call; its call: that call alone. A command in a box "
        f"already in use takes {_ms(no_pre['warm_call_median_s'])}.)",
    ]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# Driver


def run(settings: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    started = time.perf_counter()
    max_n = max(*settings.grid_n, settings.main[0], settings.staging[0])
    max_t = max(*settings.grid_t, settings.main[1], settings.staging[1])
    log(f"generating turns for up to N={max_n} x T={max_t} ...")
    specs = Specs.make(max_n, max_t)
    gc.collect()
    gc.freeze()  # the generated turns are the long-lived heap from now on
    results: dict[str, Any] = {"settings": settings.__dict__}

    n, t = settings.main
    log(f"1. pipeline N={n} T={t} ...")
    cell = measure_cell(specs, n, t, repeats=settings.main_repeats)
    main = cell.raw()
    main["steps_median_s"] = {k: statistics.median(v) for k, v in cell.steps.items()}
    main["wire_text_median_s"] = statistics.median(cell.wire_text)
    results["main"] = main

    log("2. scaling grid ...")
    grid = measure_grid(settings, specs, log)
    results["grid"] = [c.raw() for c in grid]
    xs = [c.chars for c in grid]
    results["exponent"] = fit_exponent(xs, [c.pipeline_median for c in grid])
    results["floor_exponent"] = fit_exponent(xs, [c.floor_median for c in grid])
    results["step_exponents"] = {
        name: fit_exponent(xs, [statistics.median(c.steps[name]) for c in grid]) for name in STEPS
    }

    with (
        tempfile.TemporaryDirectory(prefix="gg-bench-") as tmp,
        _subprocess_home(Path(tmp) / "home"),
    ):
        scratch = Path(tmp)
        log(f"4a. staging N={settings.staging[0]} T={settings.staging[1]} ...")
        results["staging"] = asyncio.run(measure_staging(settings, specs, scratch))
        log("4b. restores ...")
        results["restores"] = asyncio.run(measure_restores(settings, scratch))
    gc.unfreeze()
    del specs
    gc.collect()

    log(f"5. memory N={settings.memory[0]} T={settings.memory[1]} (fresh process) ...")
    results["memory"] = measure_memory(settings)
    results["wall_s"] = time.perf_counter() - started
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    parser.add_argument("--json", type=Path, help="save the raw numbers to this file")
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory_child:
        n, t, rows = (int(x) for x in args.memory_child.split(","))
        print(json.dumps(memory_child(n, t, rows)))
        return 0
    settings = QUICK if args.quick else FULL

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    results = run(settings, log)
    print(render_report(results))
    print(f"\nwall time: {results['wall_s']:.1f} s ({os.cpu_count()} cores)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
