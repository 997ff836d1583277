"""Traces -> grading rows: group the episodes of vf-eval runs and mint one row per group.

    python tools/traces_to_rows.py runs/*/traces.jsonl -o rows.jsonl
    python tools/traces_to_rows.py runs/a/traces.jsonl -o rows.parquet --mode advantages \\
        --privileged hidden/

Episodes are grouped by ``episode.group.id`` when the consumer set one, else by run and task
key (``vf-eval -r N`` gives N episodes with the same task key). Within an episode the
candidates are its trainable traces; grade traces are never candidates. Groups that would
not be graded (rewards mode: all rewards equal; fewer than two candidates) and rewards-mode
groups with an unscored trace are skipped. Rows are written as JSONL (one row per line) or,
for ``.parquet``, as a single ``row`` column holding each row's JSON (the form
``group_grade.taskset.row_from_record`` reads; Arrow cannot store the rows' empty mapping
columns natively).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import verifiers.v1 as vf

from group_grade.data import GroupGradeData, Mode
from group_grade.grade_traces import is_grade_record, read_traces
from group_grade.trainer import needs_grading


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


def group_traces(
    episodes: Iterable[vf.WireEpisode],
    stats: RowStats,
    scope: str = "",
    seen: set[str] | None = None,
) -> dict[str, list[vf.Trace]]:
    """Group id -> candidate traces, in file order; trace ids in ``seen`` are skipped (and
    added to it)."""
    seen = set() if seen is None else seen
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
                groups.setdefault(group_key(episode, trace, scope), []).append(trace)
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
        row, _ = GroupGradeData.from_traces(
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
    for path in paths:
        episodes = read_traces(path)
        for key, traces in group_traces(episodes, stats, str(path), seen).items():
            groups.setdefault(key, []).extend(traces)
    return build_rows(groups, stats, mode=mode, privileged=privileged), stats


def read_privileged(directory: str | Path) -> dict[str, str]:
    """Every file under ``directory`` as relative POSIX path -> text."""
    root = Path(directory)
    if not root.is_dir():
        raise NotADirectoryError(f"--privileged {root}: not a directory")
    return {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", help="traces.jsonl files (or run directories)")
    parser.add_argument("-o", "--output", required=True, help="rows file: .jsonl or .parquet")
    parser.add_argument("--mode", choices=["rewards", "advantages"], default="rewards")
    parser.add_argument(
        "--privileged", metavar="DIR", help="files given to every group's grader (hidden tests)"
    )
    args = parser.parse_args(argv)
    try:
        privileged = read_privileged(args.privileged) if args.privileged else None
        rows, stats = rows_from_traces(args.traces, mode=args.mode, privileged=privileged)
    except (OSError, ValueError) as e:
        parser.error(str(e))
    print(stats.summary())
    print(f"wrote {len(rows)} rows to {write_rows(rows, args.output)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
