"""Turn the traces of vf-eval runs into grading rows, one row per group of attempts.

    python tools/traces_to_rows.py runs/*/traces.jsonl -o rows.jsonl
    python tools/traces_to_rows.py runs/a/traces.jsonl -o rows.parquet --mode advantages \\
        --privileged hidden/

A group is the episodes sharing the group id their consumer set, else the episodes of one
run with the same task (vf-eval -r N gives N of them). Its candidates are the episodes'
trainable traces; grade traces never are. Its row's group id reads <run>/<task>: the run's
short id and the task's key (task-<first 10 hex digits> for a content hash). Skipped: groups
that would not be graded (rewards mode grades mixed groups only; fewer than two candidates)
and rewards-mode groups with an unscored trace. Rows are written as JSON Lines, or for a
.parquet output as one `row` column holding each row's JSON (what the taskset reads back).
Exits 1, writing nothing, when no group gives a row.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import verifiers.v1 as vf

from group_grade.advantages import needs_grading
from group_grade.data import GroupGradeData, Mode
from group_grade.grade_traces import is_grade_record, read_traces


@dataclass
class RowStats:
    episodes: int = 0
    groups: int = 0
    rows: int = 0
    not_due: int = 0
    """Groups that would not be graded (uniform rewards in rewards mode, or fewer than 2)."""
    unscored: int = 0
    """Rewards-mode groups with a trace that has no reward (e.g. a failed rollout)."""
    grade_traces: int = 0
    untrainable: int = 0
    duplicates: int = 0
    """Traces read more than once (the same file given twice)."""

    def summary(self) -> str:
        return (
            f"{self.episodes} episodes, {self.groups} groups -> {self.rows} rows; skipped "
            f"{self.not_due} groups not due for grading, {self.unscored} groups with unscored "
            f"traces, {self.grade_traces} grade traces, {self.untrainable} untrainable traces, "
            f"{self.duplicates} duplicate traces"
        )


def group_key(episode: vf.WireEpisode, trace: vf.Trace, scope: str) -> str:
    """The group a trace belongs to: the consumer's group id, else run (or ``scope``) and
    task key; agents other than the default one are grouped apart."""
    if episode.group is not None:
        base = episode.group.id
    else:
        run = episode.run.id if episode.run is not None else scope
        base = f"{run}/{episode.task.key or episode.task.hash or episode.id}"
    return base if trace.agent.name == "agent" else f"{base}/{trace.agent.name}"


HASH = re.compile(r"[0-9a-f]{32,}")
SHORT = 10


def group_name(episode: vf.WireEpisode, trace: vf.Trace, scope: str) -> str:
    """A readable id for the group of ``group_key``: the consumer's group id as it is,
    else ``<run>/<task>``, the run's short id (the last part of its name) and the task key
    (``task-<10 hex digits>`` for a content hash)."""
    if episode.group is not None:
        base = episode.group.id
    else:
        run = episode.run
        if run is not None and run.name:
            tag = run.name.rsplit("--", 1)[-1]
        elif run is not None:
            tag = run.id.rsplit("-", 1)[-1][:SHORT]
        else:
            folder = Path(scope) if Path(scope).is_dir() else Path(scope).parent
            tag = folder.name or scope
        key = episode.task.key or episode.task.hash or episode.id
        task = f"task-{key[:SHORT]}" if HASH.fullmatch(key) else key
        base = f"{tag}/{task}"
    return base if trace.agent.name == "agent" else f"{base}/{trace.agent.name}"


def readable(groups: dict[str, list[vf.Trace]], names: dict[str, str]) -> dict[str, list]:
    """``groups`` keyed by their readable names; groups whose names collide keep their
    full keys."""
    taken = Counter(names.get(key, key) for key in groups)
    return {
        name if taken[name := names.get(key, key)] == 1 else key: traces
        for key, traces in groups.items()
    }


def group_traces(
    episodes: Iterable[vf.WireEpisode],
    stats: RowStats,
    scope: str = "",
    seen: set[str] | None = None,
    names: dict[str, str] | None = None,
) -> dict[str, list[vf.Trace]]:
    """Group key -> candidate traces, in file order; trace ids in ``seen`` are skipped (and
    added to it); ``names`` gets each group's readable name."""
    seen = set() if seen is None else seen
    names = {} if names is None else names
    groups: dict[str, list[vf.Trace]] = {}
    for episode in episodes:
        stats.episodes += 1
        for trace in episode.traces:
            if trace.id in seen:
                stats.duplicates += 1
                continue
            seen.add(trace.id)
            if is_grade_record(trace, episode.env.id):  # by record: a policy cannot forge it
                stats.grade_traces += 1
            elif not trace.agent.trainable:
                stats.untrainable += 1
            else:
                key = group_key(episode, trace, scope)
                groups.setdefault(key, []).append(trace)
                names.setdefault(key, group_name(episode, trace, scope))
    return groups


def build_rows(
    groups: dict[str, list[vf.Trace]],
    stats: RowStats,
    *,
    mode: Mode = "rewards",
    privileged: dict[str, str] | None = None,
) -> list[GroupGradeData]:
    """One row per group that would be graded, minted with ``from_traces``."""
    rows: list[GroupGradeData] = []
    for group_id, traces in groups.items():
        stats.groups += 1
        if mode == "rewards" and any(not trace.rewards for trace in traces):
            stats.unscored += 1
            continue
        row = GroupGradeData.from_traces(
            traces, group_id=group_id, mode=mode, privileged=privileged
        )
        if not needs_grading(row):
            stats.not_due += 1
            continue
        rows.append(row)
    stats.rows += len(rows)
    return rows


def rows_from_traces(
    paths: Sequence[str | Path],
    *,
    mode: Mode = "rewards",
    privileged: dict[str, str] | None = None,
) -> tuple[list[GroupGradeData], RowStats]:
    """The rows of every group in these ``traces.jsonl`` files (or run directories)."""
    stats = RowStats()
    groups: dict[str, list[vf.Trace]] = {}
    seen: set[str] = set()
    names: dict[str, str] = {}
    for path in paths:
        episodes = read_traces(path)
        for key, traces in group_traces(episodes, stats, str(path), seen, names).items():
            groups.setdefault(key, []).extend(traces)
    named = readable(groups, names)
    return build_rows(named, stats, mode=mode, privileged=privileged), stats


def read_privileged(directory: str | Path) -> dict[str, str]:
    """Every file under ``directory`` as relative POSIX path -> text."""
    root = Path(directory)
    if not root.is_dir():
        raise NotADirectoryError(f"--privileged {root}: not a directory")
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            try:
                files[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"--privileged {path}: not UTF-8 text") from None
    return files


def write_rows(rows: Sequence[GroupGradeData], output: str | Path) -> Path:
    """JSONL (one ``model_dump_json`` per line), or parquet with a single ``row`` column
    for a ``.parquet`` output."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.suffix.lower() == ".parquet":
        import datasets

        dataset = datasets.Dataset.from_dict({"row": [row.model_dump_json() for row in rows]})
        dataset.to_parquet(str(output))
    else:
        output.write_text("".join(row.model_dump_json() + "\n" for row in rows))
    return output


def no_rows_reason(stats: RowStats, mode: Mode) -> str:
    """Why no group gave a row, from what was skipped."""
    if not stats.episodes:
        return "the traces hold no episodes"
    if not stats.groups:
        return (
            "no trace can be a candidate (grade traces and untrainable traces never are: "
            f"{stats.grade_traces} and {stats.untrainable} here)"
        )
    reasons = []
    if stats.not_due:
        why = (
            "rewards mode grades only groups whose rewards differ, of two or more; "
            "--mode advantages grades every group of two or more"
            if mode == "rewards"
            else "advantages mode needs two or more candidates"
        )
        reasons.append(f"{stats.not_due} groups not due for grading ({why})")
    if stats.unscored:
        reasons.append(f"{stats.unscored} groups with a trace that has no reward")
    return "; ".join(reasons) or "no group qualified"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="traces_to_rows.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("traces", nargs="+", help="run folders, or their traces.jsonl files")
    parser.add_argument("-o", "--output", required=True, help="rows file: .jsonl or .parquet")
    parser.add_argument(
        "--mode",
        choices=["rewards", "advantages"],
        default="rewards",
        help="the rows' grading mode (default: rewards)",
    )
    parser.add_argument(
        "--privileged",
        metavar="DIR",
        help="a folder whose files every group's grader gets (hidden tests, gold patch)",
    )
    args = parser.parse_args(argv)
    try:
        privileged = read_privileged(args.privileged) if args.privileged else None
        rows, stats = rows_from_traces(args.traces, mode=args.mode, privileged=privileged)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(stats.summary())
    if not rows:
        print(f"wrote no rows: {no_rows_reason(stats, args.mode)}", file=sys.stderr)
        return 1
    print(f"wrote {len(rows)} rows to {write_rows(rows, args.output)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
