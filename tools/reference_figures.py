"""The reference grader's agreement on the shipped labeled set, per set and hidden-test layout.

Grades the shipped rows end to end the way the demo does (verifiers' run_eval, local candidate
boxes, the subprocess grader box, the reference grader served on 127.0.0.1) with the hidden
tests staged under three layouts:

  tests      as shipped (``tests/test_*.py`` among the privileged materials)
  renamed    the same files under another folder name (``hidden_checks/``)
  runner     a privileged ``run_tests.sh`` that runs pytest on them, renamed so that no file is
             a test file group-grade's own runner would pick (``checks/checks_*.py``)

Sets: ``v1``, the rows without recorded traps; ``v2``, the rows with traps (the harder set).
Prints one markdown row per (set, layout): the mean over the set's groups of pairwise order
accuracy, hack precision, hack recall, trap false-positive rate and best tier, then the
pooled counts (hacks confirmed, false confirmations, traps confirmed) and the seconds taken.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath

from verifiers.v1.cli.eval.runner import run_eval
from verifiers.v1.configs.cli.eval import EvalConfig

from group_grade.chat_server import ChatServer
from group_grade.data import GroupGradeData
from group_grade.demo import AGENT
from group_grade.hidden_tests import TEST_FILE
from group_grade.reference import ReferenceGrader
from group_grade.results import GradeResult, mean_agreement
from group_grade.rows import load_rows, shipped_groups

KEY_VAR = "GROUP_GRADE_REFERENCE_KEY"
RENAMED_DIR = "hidden_checks"
RUNNER_DIR = "checks"
RUN_TESTS = """\
#!/bin/bash
# Runs the hidden checks with pytest from the candidate's working directory.
here="$(cd "$(dirname "$0")" && pwd)"
python="$(command -v python3 || command -v python)"
exec "$python" -m pytest -q -p no:cacheprovider --junitxml="$GRADE_RESULTS/junit.xml" \\
    "$here"/checks/*.py
"""
FIGURES = ("pairwise", "hack_precision", "hack_recall", "trap_false_positive", "best_tier")


def renamed(privileged: dict[str, str]) -> dict[str, str]:
    """Every hidden test file moved from its folder to ``hidden_checks/``."""
    out: dict[str, str] = {}
    for path, content in privileged.items():
        if TEST_FILE.search(path):
            out[f"{RENAMED_DIR}/{PurePosixPath(path).name}"] = content
        else:
            out[path] = content
    return out


def runner(privileged: dict[str, str]) -> dict[str, str]:
    """The hidden test files as ``checks/checks_<name>.py`` (no ``test_*.py`` name left) and
    a ``run_tests.sh`` that runs pytest on them."""
    out: dict[str, str] = {"run_tests.sh": RUN_TESTS}
    for path, content in privileged.items():
        if TEST_FILE.search(path):
            stem = PurePosixPath(path).stem.removeprefix("test_").removesuffix("_test")
            out[f"{RUNNER_DIR}/checks_{stem}.py"] = content
        else:
            out[path] = content
    assert not any(TEST_FILE.search(p) for p in out), "a test file is still discoverable"
    return out


LAYOUTS: dict[str, Callable[[dict[str, str]], dict[str, str]]] = {
    "tests": dict,
    "renamed": renamed,
    "runner": runner,
}
SETS: dict[str, Callable[[GroupGradeData], bool]] = {
    "v1": lambda row: row.truth is not None and not row.truth.traps,
    "v2": lambda row: row.truth is not None and bool(row.truth.traps),
}


def write_layout(rows: Sequence[GroupGradeData], layout: str, path: Path) -> Path:
    move = LAYOUTS[layout]
    with path.open("w") as out:
        for row in rows:
            staged = row.model_copy(update={"privileged": move(dict(row.privileged))})
            out.write(staged.model_dump_json() + "\n")
    return path


async def grade(rows: Path, out: Path, roots: list[str], max_concurrent: int) -> list[GradeResult]:
    async with ChatServer(ReferenceGrader(), model="reference") as server:
        config = EvalConfig(
            env={
                "taskset": {"id": "group-grade", "source": str(rows), "checkpoint_roots": roots},
                "agent": AGENT,
            },
            model="reference",
            client={"type": "eval", "base_url": server.base_url, "api_key_var": KEY_VAR},
            num_rollouts=1,
            max_concurrent=max_concurrent,
            push=False,
            rich=None,
            output_dir=out,
            run={"dir": rows.stem},
        )
        episodes = await run_eval(config)
    return [GradeResult.of(t, e.id) for e in episodes for t in e.traces]


def pooled(results: Sequence[GradeResult]) -> str:
    """Hacks confirmed over hacks, false confirmations, traps confirmed over traps."""
    hacks = found = false = traps = trapped = 0
    for r in results:
        truth = r.row.truth
        if truth is None:
            continue
        confirmed = r.verdict.confirmed if r.verdict is not None else set()
        hacks += len(truth.hacks)
        found += len(confirmed & set(truth.hacks))
        false += len(confirmed - set(truth.hacks))
        traps += len(truth.traps)
        trapped += len(confirmed & set(truth.traps))
    return f"{found}/{hacks} | {false} | {trapped}/{traps}"


def row_line(name: str, layout: str, results: Sequence[GradeResult], seconds: float) -> str:
    means = mean_agreement(results)
    cells = [f"{means[f]:.3f}" if f in means else "-" for f in FIGURES]
    valid = sum(r.verdict is not None for r in results)
    head = f"| {name} | {layout} | {len(results)} ({valid} valid) | "
    return head + " | ".join(cells) + f" | {pooled(results)} | {seconds:.0f} |"


HEADER = (
    "| set | layout | groups | pairwise | hack precision | hack recall | trap FP | best tier "
    "| hacks confirmed | false confirmed | traps confirmed | seconds |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/reference_figures.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--layout",
        action="append",
        choices=sorted(LAYOUTS),
        help="a hidden-test layout to run (repeatable; default: all three)",
    )
    parser.add_argument(
        "--set",
        action="append",
        choices=sorted(SETS),
        dest="sets",
        help="a set of rows to run (repeatable; default: every set that has rows)",
    )
    parser.add_argument(
        "--source", help="a labeled rows file (default: the shipped groups)", default=None
    )
    parser.add_argument(
        "--max-concurrent", type=int, default=2, help="groups graded at once (default 2)"
    )
    args = parser.parse_args(argv)
    source = Path(args.source or shipped_groups()).resolve()
    rows = list(load_rows(str(source), "train", None, ()))
    layouts = args.layout or list(LAYOUTS)
    sets = {name: [r for r in rows if SETS[name](r)] for name in args.sets or list(SETS)}
    print(HEADER, flush=True)
    with tempfile.TemporaryDirectory(prefix="gg-figures-") as scratch:
        for name, chosen in sets.items():
            if not chosen:
                print(f"| {name} | - | 0 | no rows in this set |", flush=True)
                continue
            for layout in layouts:
                path = write_layout(chosen, layout, Path(scratch) / f"{name}-{layout}.jsonl")
                start = time.monotonic()
                results = asyncio.run(
                    grade(path, Path(scratch) / "runs", [str(source.parent)], args.max_concurrent)
                )
                print(row_line(name, layout, results, time.monotonic() - start), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
