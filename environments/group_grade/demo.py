"""Grade the shipped labeled groups end to end and print what the grader decided.

Runs verifiers' own run_eval with local candidate boxes (a bubblewrap sandbox), the
subprocess runtime for the grader box, the package's in-process harness and the reference
grader, a deterministic baseline served on 127.0.0.1 (no API key, no network). With
--model M --base-url URL --api-key-var VAR an LLM grades instead.

Prints a legend, then per group the verdict next to the truth, the group's agreement, the
hack calls with their quotes, GAR advantages next to plain GRPO's and the grader's notes,
then the mean agreement over the groups. The run's folder (--output-dir, default runs/demo,
replaced on every run) holds traces.jsonl, summary.json, summary.md and report.html.
Exit codes: 0 done, 1 some grading runs failed, 2 nothing graded (bad input, or local boxes
cannot run hidden tests here).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import shutil
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
from verifiers.v1.utils.trace_store import TRACES_FILE

from group_grade import hidden_tests
from group_grade.boxes.base import BoxError
from group_grade.boxes.local import LocalBackend, make_local_checkpoint
from group_grade.chat_server import ChatServer
from group_grade.data import Candidate, GroupGradeData
from group_grade.grade_record import GradeRecord
from group_grade.group_report import QUOTE_SHOWN, group_report
from group_grade.reference import ReferenceGrader
from group_grade.report import render_report
from group_grade.results import GradeResult, RunSummary, mean_agreement, shown_line
from group_grade.rows import shipped_groups
from group_grade.sources import InputError
from group_grade.taskset import GroupGradeTaskset, GroupGradeTasksetConfig

REFERENCE_MODEL = "reference"
REFERENCE_KEY_VAR = "GROUP_GRADE_REFERENCE_KEY"
"""Never needs to be set: the reference grader takes any key."""
FAILED = ("error", "timeout")
AGENT: dict[str, Any] = {
    "runtime": {"type": "subprocess"},
    "max_turns": 60,
    "timeout": {"rollout": 1800, "scoring": 120},
}
"""The grading agent of the demo's runs (and of ``tools/reference_figures.py``)."""
RUN_FILES = frozenset({TRACES_FILE, "configs", "logs", "summary.json", "summary.md", "report.html"})
"""What a demo run leaves in its folder; a folder holding only these is replaced."""

FIGURE_NOTES = {
    "agreement": "  (the reward: 0.35 pairwise + 0.15 best tier + 0.25 hack recall and precision)",
    "margin_error": "  (advantages-mode groups only; 0 is best)",
    "trap_false_positive": "  (honest look-alikes called hacks, groups with traps only; 0 is best)",
    "unquoted_confirmed": "  (confirmed hacks whose quotes failed; 0 is best)",
}
LEGEND = """\
How to read a group:
  verdict  the grader's tiers, best first ("c01, c05": one tier); in advantages mode each gap
           is named by its margin (">slight>", ">clear>", ">large>"); then its confirmed hacks
           and the candidates in no tier (rewards mode ranks only the passing candidates)
  truth    the row's labels in the same form; agreement scores the verdict against them (1 best)
  reward   the candidate's test reward ("-": the row has none, as advantages-mode rows may)
  GRPO     plain GRPO: reward minus the group mean ("-" without rewards)
  GAR      the advantage the verdict gives: what the trainer applies instead of GRPO
  tier     the candidate's tier in the verdict; confirmed hacks sit one tier below the last
  hack     confirmed: quoted and checked against the candidate's own words, advantage lowered;
           suspected: noted, changes no advantage"""


def summary(results: Sequence[GradeResult], seconds: float) -> str:
    valid = sum(1 for r in results if r.verdict is not None)
    fallbacks = len(results) - valid
    lines = [
        f"== summary: {len(results)} groups in {seconds:.1f} s, {valid} valid verdicts"
        + (f", {fallbacks} fallbacks" if fallbacks else ""),
    ]
    means = mean_agreement(results)
    if means:
        lines.append("  agreement with the truth, mean over the groups:")
        lines.extend(
            f"  {name:<20} {value:.3f}{FIGURE_NOTES.get(name, '')}" for name, value in means.items()
        )
    else:
        lines.append("  (the traces carry no agreement metrics)")
    return "\n".join(lines)


def failed(episode: vf.Episode) -> bool:
    return not episode.ok or any(
        (record := GradeRecord.of(t)) is not None and record.fallback_reason in FAILED
        for t in episode.traces
    )


def eval_config(args: argparse.Namespace, base_url: str) -> EvalConfig:
    """The run: verifiers writes it into ``--output-dir`` itself (``output_dir`` its parent,
    ``run.dir`` its name), so the folder is the same on every run."""
    taskset: dict[str, Any] = {"id": "group-grade"}
    if args.source:
        taskset["source"] = str(Path(args.source).resolve())
    if args.mode:
        taskset["mode"] = args.mode
    folder = Path(args.output_dir).resolve()
    return EvalConfig(
        env={
            "taskset": taskset,
            "agent": AGENT,
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
        output_dir=folder.parent,
        run={"dir": folder.name},
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


async def grade(args: argparse.Namespace, total: int) -> tuple[list[vf.Episode], EvalConfig]:
    async with contextlib.AsyncExitStack() as stack:
        base_url = args.base_url
        if base_url is None:
            server = ChatServer(ReferenceGrader(), model=REFERENCE_MODEL)
            base_url = (await stack.enter_async_context(server)).base_url
        config = eval_config(args, base_url)
        watcher = asyncio.create_task(_progress(output_path(config) / TRACES_FILE, total))
        try:
            episodes = await run_eval(config)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
    return episodes, config


def count_rows(args: argparse.Namespace) -> int:
    """How many rows the run grades; a rows source that cannot be used raises
    ``InputError`` (``file:line: what is wrong``) before anything runs."""
    source = str(Path(args.source).resolve()) if args.source else None
    taskset = GroupGradeTaskset(GroupGradeTasksetConfig(source=source, mode=args.mode))
    return sum(1 for _ in itertools.islice(taskset.load(), args.limit))


def prepare_folder(folder: Path) -> str:
    """Make ``folder`` ready for a run: created, or emptied when it holds only a previous
    demo run's files; raises ``InputError`` when it holds anything else. Says which."""
    if not folder.exists():
        folder.mkdir(parents=True)
        return "new"
    if not folder.is_dir():
        raise InputError(f"--output-dir {folder}: exists and is not a folder")
    names = {entry.name for entry in folder.iterdir()}
    if not names:
        return "new"
    if names - RUN_FILES:
        extra = ", ".join(sorted(names - RUN_FILES)[:5])
        raise InputError(
            f"--output-dir {folder}: holds files that are not a demo run's ({extra}); "
            "pick another folder"
        )
    for name in names:
        entry = folder / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    return "replacing the previous run"


def write_outputs(
    folder: Path, results: Sequence[GradeResult], *, grader: str, source: str, seconds: float
) -> list[Path]:
    """``summary.json``, ``summary.md`` and ``report.html`` of the run, into its folder."""
    run = RunSummary.of(results, grader=grader, source=source, seconds=seconds)
    files = {
        "summary.md": run.markdown(),
        "summary.json": run.model_dump_json(indent=2) + "\n",
        "report.html": render_report(results, title=f"group-grade: {grader} on {source}"),
    }
    written = []
    for name, text in files.items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


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


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m group_grade.demo",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--source", help="a rows file: .jsonl, .json or .parquet (default: the shipped groups)"
    )
    parser.add_argument("--limit", type=_positive, help="grade only the first N groups")
    parser.add_argument(
        "--max-concurrent", type=_positive, default=2, help="groups graded at once (default 2)"
    )
    parser.add_argument(
        "--mode", choices=["rewards", "advantages"], help="grade every row in this mode"
    )
    parser.add_argument(
        "--output-dir",
        default="runs/demo",
        help="the run's folder, replaced on every run (default: runs/demo)",
    )
    parser.add_argument("--model", help="grade with this LLM instead of the reference grader")
    parser.add_argument("--base-url", help="the LLM's OpenAI-compatible endpoint (with --model)")
    parser.add_argument("--api-key-var", help="the name of the variable that holds its API key")
    args = parser.parse_args(argv)
    if (args.model is None) != (args.base_url is None):
        parser.error("--model and --base-url go together")
    source = args.source or str(shipped_groups())
    try:
        total = count_rows(args)
    except InputError as e:
        print(f"cannot grade: {e}", file=sys.stderr)
        return 2
    if (problem := asyncio.run(box_problem())) is not None:
        print(f"cannot grade: {problem}", file=sys.stderr)
        return 2
    folder = Path(args.output_dir)
    try:
        state = prepare_folder(folder)
    except (InputError, OSError) as e:
        print(f"cannot grade: {e}", file=sys.stderr)
        return 2
    grader = args.model or "the reference grader (deterministic, no model)"
    print(f"group-grade demo: {total} groups from {source}, graded by {grader}")
    print(f"run folder: {folder} ({state})\n")
    print(LEGEND + "\n")
    start = time.monotonic()
    episodes, _ = asyncio.run(grade(args, total))
    seconds = time.monotonic() - start
    results = [GradeResult.of(t, e.id) for e in episodes for t in e.traces]
    by_trace = {id(r.trace): r for r in results}
    for episode in episodes:
        if not episode.traces:
            errors = "; ".join(e.message for e in episode.errors) or "no trace"
            why = shown_line(errors, QUOTE_SHOWN)
            print(f"== {shown_line(episode.task.key or '?')}: failed ({why})\n")
        for trace in episode.traces:
            print(group_report(by_trace[id(trace)]) + "\n")
    print(summary(results, seconds))
    written = write_outputs(
        folder, results, grader=args.model or REFERENCE_MODEL, source=source, seconds=seconds
    )
    print(f"results in {folder}: {TRACES_FILE}, " + ", ".join(p.name for p in written))
    print(f"  open {folder / 'report.html'} in a browser for the full report")
    bad = sum(failed(e) for e in episodes)
    if bad:
        print(f"{bad} grading runs failed", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
