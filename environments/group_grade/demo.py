"""Grade the shipped groups end to end: ``python -m group_grade.demo``.

Runs verifiers' own ``run_eval`` on the embedded defaults: local candidate boxes, the
subprocess runtime for the grader box, the default in-process harness, and the reference
grader served on 127.0.0.1 (no API key, no network). ``--model M --base-url URL
--api-key-var VAR`` grades with an LLM instead. Prints each group's verdict next to plain
GRPO, then the mean of every agreement metric over the groups.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.cli.output import output_path
from verifiers.v1.configs.cli.eval import EvalConfig
from verifiers.v1.utils.loaders import load_taskset
from verifiers.v1.utils.trace_store import TRACES_FILE

from group_grade import hidden_tests
from group_grade.advantages import AdvantageRecord, fallback_records
from group_grade.boxes.base import BoxError
from group_grade.boxes.local import LocalBackend, make_local_checkpoint
from group_grade.chat_server import ChatServer
from group_grade.citations import CitationReport
from group_grade.data import Candidate, GroupGradeData
from group_grade.reference import ReferenceGrader
from group_grade.verdict import GroupVerdict

REFERENCE_MODEL = "reference"
REFERENCE_KEY_VAR = "GROUP_GRADE_REFERENCE_KEY"
"""Never needs to be set: the reference grader takes any key."""
FAILED = ("error", "timeout")
QUOTE_SHOWN = 100


def group_data(trace: vf.Trace) -> GroupGradeData:
    data = trace.task.data
    if isinstance(data, GroupGradeData):
        return data
    return GroupGradeData.model_validate(data.model_dump(mode="json"))


def _cut(text: str, cap: int = QUOTE_SHOWN) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= cap else flat[: cap - 3] + "..."


def tiers_line(verdict: GroupVerdict) -> str:
    """``c02 >large> c01, c05 >slight> c03``: tiers best first, margins between them."""
    parts = [", ".join(verdict.ranking[0])] if verdict.ranking else ["(nothing ranked)"]
    for number, tier in enumerate(verdict.ranking[1:]):
        gap = verdict.margins[number] if number < len(verdict.margins) else None
        parts.append((f" >{gap}> " if gap else " > ") + ", ".join(tier))
    return "".join(parts)


def advantage_table(trace: vf.Trace) -> list[str]:
    data = group_data(trace)
    records = {
        label: AdvantageRecord.model_validate(raw)
        for label, raw in (trace.info.get("gar") or {}).items()
    }
    grpo = {r.label: r.advantage for r in fallback_records(data, "invalid")}
    rows = [f"  {'label':<6} {'reward':>6} {'GRPO':>7} {'graded':>7}  tier  hack"]
    for c in data.candidates:
        record = records.get(c.label)
        reward = "-" if c.reward is None else f"{c.reward:g}"
        graded = "-" if record is None else f"{record.advantage:+.3f}"
        tier = "-" if record is None or record.tier is None else str(record.tier)
        hack = "-" if record is None or record.hack == "none" else record.hack
        rows.append(
            f"  {c.label:<6} {reward:>6} {grpo[c.label]:>+7.3f} {graded:>7}  {tier:<4}  {hack}"
        )
    return rows


def group_report(trace: vf.Trace) -> str:
    """One group's result: tiers, hack calls with their quotes, advantages vs. GRPO."""
    data = group_data(trace)
    lines = [f"== {data.group_id} ({data.mode} mode, {len(data.candidates)} candidates)"]
    raw = trace.info.get("verdict")
    if raw is None:
        reason = trace.info.get("fallback_reason", "invalid")
        detail = trace.info.get("verdict_error") or "; ".join(e.message for e in trace.errors)
        lines.append(
            f"  no verdict: fallback `{reason}`" + (f" ({_cut(detail)})" if detail else "")
        )
    else:
        verdict = GroupVerdict.model_validate(raw)
        lines.append(f"  tiers: {tiers_line(verdict)}")
        for entry in verdict.candidates:
            if entry.hack == "none":
                continue
            lines.append(f"  hack {entry.label}: {entry.hack}")
            lines.extend(f'    turn {e.turn}: "{_cut(e.quote)}"' for e in entry.evidence)
        report = CitationReport.model_validate(trace.info.get("citations") or {})
        lines.extend(
            f"  quote failed, {label} downgraded to suspected" for label in report.downgraded
        )
    lines.extend(advantage_table(trace))
    return "\n".join(lines)


def agreement(traces: Sequence[vf.Trace]) -> dict[str, float]:
    """Mean of every ``agreement*`` metric and reward over the traces that carry it."""
    values: dict[str, list[float]] = {}
    for trace in traces:
        scores: dict[str, Any] = {**trace.metrics}
        scores.update({k: r.score for k, r in trace.rewards.items() if r is not None})
        for name, value in scores.items():
            if name.startswith("agreement") and value is not None:
                values.setdefault(name, []).append(float(value))
    return {name: sum(v) / len(v) for name, v in sorted(values.items())}


def summary(traces: Sequence[vf.Trace], seconds: float) -> str:
    valid = sum(1 for t in traces if t.info.get("verdict") is not None)
    lines = [
        f"== summary: {len(traces)} groups in {seconds:.1f} s, {valid} valid verdicts",
    ]
    means = agreement(traces)
    lines.extend(f"  {name:<28} {value:.3f}" for name, value in means.items())
    if not means:
        lines.append("  (the traces carry no agreement metrics)")
    return "\n".join(lines)


def failed(episode: vf.Episode) -> bool:
    return not episode.ok or any(t.info.get("fallback_reason") in FAILED for t in episode.traces)


def eval_config(args: argparse.Namespace, base_url: str) -> EvalConfig:
    taskset: dict[str, Any] = {"id": "group-grade"}
    if args.source:
        taskset["source"] = str(Path(args.source).resolve())
    if args.mode:
        taskset["mode"] = args.mode
    return EvalConfig(
        env={
            "taskset": taskset,
            "agent": {
                "runtime": {"type": "subprocess"},
                "max_turns": 60,
                "timeout": {"rollout": 1800, "scoring": 120},
            },
        },
        model=args.model or REFERENCE_MODEL,
        client={
            "type": "eval",
            "base_url": base_url,
            "api_key_var": args.api_key_var or REFERENCE_KEY_VAR,
        },
        select={"limit": args.limit},
        num_rollouts=1,
        max_concurrent=args.max_concurrent,
        push=False,
        rich=None,
        output_dir=Path(args.output_dir),
    )


async def _progress(results: Path, total: int) -> None:
    """A progress bar on stderr over the episodes written to ``results`` so far."""
    columns = (
        TextColumn("grading"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task("grading", total=total)

        def update() -> None:
            done = results.read_bytes().count(b"\n") if results.exists() else 0
            bar.update(task, completed=min(done, total))

        try:
            while True:
                update()
                await asyncio.sleep(0.5)
        finally:
            update()


async def grade(args: argparse.Namespace) -> tuple[list[vf.Episode], EvalConfig]:
    async with contextlib.AsyncExitStack() as stack:
        base_url = args.base_url
        if base_url is None:
            server = ChatServer(ReferenceGrader(), model=REFERENCE_MODEL)
            base_url = (await stack.enter_async_context(server)).base_url
        config = eval_config(args, base_url)
        total = sum(1 for _ in load_taskset(config.env.taskset).select(config.select))
        watcher = asyncio.create_task(_progress(output_path(config) / TRACES_FILE, total))
        try:
            episodes = await run_eval(config)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
    return episodes, config


SELF_CHECK_TEST = "def test_the_box_runs_pytest():\n    assert True\n"


async def box_problem() -> str | None:
    """Why local boxes cannot run hidden tests on this machine (None: they can): one tiny
    box, restored and tested exactly as a candidate's is."""
    with tempfile.TemporaryDirectory(prefix="gg-self-check-") as scratch:
        tree = Path(scratch) / "tree"
        tree.mkdir()
        checkpoint = await make_local_checkpoint(tree, Path(scratch) / "checkpoints")
        row = GroupGradeData(
            group_id="self-check",
            candidates=[Candidate(label="c01", reward=1.0, checkpoint=checkpoint)],
            privileged={"tests/test_self_check.py": SELF_CHECK_TEST},
        )
        try:
            box = await LocalBackend(box_parent=Path(scratch) / "boxes").restore(checkpoint)
        except BoxError as e:
            return str(e)
        try:
            await box.stage_grading(hidden_tests.grading_files(row))
            run = await hidden_tests.run(box, row, "c01", timeout=120, output_cap=2000)
        except BoxError as e:
            return str(e)
        finally:
            await box.close()
    if run.status == "passed":
        return None
    return f"a trivial hidden test did not pass in a local box: {run.reason}\n{run.output}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m group_grade.demo", description=__doc__)
    parser.add_argument("--source", help="rows file (default: the shipped labeled groups)")
    parser.add_argument("--limit", type=int, help="grade only the first N groups")
    parser.add_argument("--max-concurrent", type=int, default=2)
    parser.add_argument("--mode", choices=["rewards", "advantages"], help="override every row's")
    parser.add_argument("--output-dir", default="runs/demo")
    parser.add_argument("--model", help="grade with this LLM instead of the reference grader")
    parser.add_argument("--base-url", help="the LLM's OpenAI-compatible endpoint")
    parser.add_argument("--api-key-var", help="environment variable holding its API key")
    args = parser.parse_args(argv)
    if (args.model is None) != (args.base_url is None):
        parser.error("--model and --base-url go together")
    if (problem := asyncio.run(box_problem())) is not None:
        print(f"cannot grade: {problem}", file=sys.stderr)
        return 2
    start = time.monotonic()
    episodes, config = asyncio.run(grade(args))
    seconds = time.monotonic() - start
    traces = [t for e in episodes for t in e.traces]
    for episode in episodes:
        if not episode.traces:
            errors = "; ".join(e.message for e in episode.errors) or "no trace"
            print(f"== {episode.task.key}: failed ({_cut(errors)})\n")
        for trace in episode.traces:
            print(group_report(trace) + "\n")
    print(summary(traces, seconds))
    print(f"results: {output_path(config)}")
    bad = sum(failed(e) for e in episodes)
    if bad:
        print(f"{bad} grading runs failed", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
