"""Export the traces of vf-eval runs as a training or SFT dataset, never a grade trace.

    python tools/export_dataset.py runs/*/traces.jsonl -o sft.jsonl
    python tools/export_dataset.py runs/a/traces.jsonl -o sft.parquet

One record per trace: its final branch as OpenAI chat messages, plus ids, reward and stop
condition. Task data and trace.info are never exported. Grade traces are always skipped and
counted: those marked info.kind == "grade" and, marked or not, every trace that is one by
its content (a group-grade task or env, task data shaped like a grading row, the grader's
tools offered or called): they hold privileged material (hidden tests, gold patches) that
must never reach a training set.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.dialects.chat import message_to_wire

from group_grade.grade_record import GradeRecord
from group_grade.grade_traces import is_grade_trace, read_traces


@dataclass
class ExportStats:
    exported: int = 0
    skipped_marked: int = 0
    """Grade traces (``info.kind == "grade"``)."""
    skipped_unmarked: int = 0
    """Unmarked traces that are grade traces by content."""

    @property
    def skipped(self) -> int:
        return self.skipped_marked + self.skipped_unmarked

    def summary(self) -> str:
        return (
            f"exported {self.exported} traces; skipped {self.skipped} grade traces "
            f"({self.skipped_marked} marked, {self.skipped_unmarked} unmarked group-grade rows)"
        )


def trace_record(episode: vf.WireEpisode, trace: vf.Trace) -> dict[str, Any]:
    """A trace as a dataset record: messages of its final branch and a few ids."""
    return {
        "messages": [message_to_wire(message) for message in trace.messages],
        "episode_id": episode.id,
        "trace_id": trace.id,
        "task_key": trace.task.key,
        "agent": trace.agent.name,
        "trainable": trace.agent.trainable,
        "reward": trace.reward,
        "stop_condition": trace.stop_condition,
    }


def export_records(episodes: Iterable[vf.WireEpisode], stats: ExportStats) -> list[dict[str, Any]]:
    """Records of every trace that is not a grade trace; the skipped ones are counted."""
    records = []
    for episode in episodes:
        for trace in episode.traces:
            if GradeRecord.marks(trace):
                stats.skipped_marked += 1
            elif is_grade_trace(trace, episode.env.id):
                stats.skipped_unmarked += 1
            else:
                records.append(trace_record(episode, trace))
    stats.exported += len(records)
    return records


def write_records(records: Sequence[dict[str, Any]], output: str | Path) -> Path:
    """JSONL (one record per line), or parquet through ``datasets`` for a ``.parquet``
    output."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.suffix.lower() == ".parquet":
        import datasets

        datasets.Dataset.from_list(list(records)).to_parquet(str(output))
    else:
        output.write_text("".join(json.dumps(record) + "\n" for record in records))
    return output


def export(paths: Sequence[str | Path], output: str | Path) -> ExportStats:
    stats = ExportStats()
    records: list[dict[str, Any]] = []
    for path in paths:
        records += export_records(read_traces(path), stats)
    write_records(records, output)
    return stats


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="export_dataset.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("traces", nargs="+", help="run folders, or their traces.jsonl files")
    parser.add_argument("-o", "--output", required=True, help="dataset file: .jsonl or .parquet")
    args = parser.parse_args(argv)
    try:
        stats = export(args.traces, args.output)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(stats.summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
