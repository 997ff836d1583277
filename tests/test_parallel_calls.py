"""Many parallel `candidate_shell` calls through the real tool server and default harness."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from group_grade.boxes.local import make_local_checkpoint
from group_grade.chat_server import ChatServer, Reply
from group_grade.data import Candidate, GroupGradeData
from tests.grading import grade, submit, write_rows
from tests.scripted_model import tool_results

LABELS = [f"c{i:02d}" for i in range(1, 9)]
CALLS = 100
"""Per bound: 200 calls in all."""


async def labeled_rows(tmp_path: Path) -> Path:
    """One group of 8 candidates, each box holding a file that names its own label."""
    candidates = []
    for label in LABELS:
        tree = tmp_path / "trees" / label
        tree.mkdir(parents=True)
        (tree / "label.txt").write_text(f"box of {label}\n")
        checkpoint = await make_local_checkpoint(
            tree, tmp_path / "checkpoints", name=f"{label}.tar.gz"
        )
        reward = 1.0 if label == "c01" else 0.0
        candidates.append(
            Candidate(
                label=label, reward=reward, passed=reward > 0, checkpoint=checkpoint, turns=["x"]
            )
        )
    return write_rows(tmp_path / "rows.jsonl", GroupGradeData(group_id="g", candidates=candidates))


def responses(bound: int, seed: int) -> list[list[str]]:
    """The labels of each response's calls: first the prefetched labels (so that every
    restore of the run has a call waiting for it), then 4 to 8 calls over labels drawn at
    random (repeats included: calls of one label share its restore), ``CALLS`` in all."""
    rng = random.Random(seed)
    first = (LABELS[:bound] * 4)[:4]
    rng.shuffle(first)
    script = [first]
    left = CALLS - len(first)
    while left:
        size = left if left <= 8 else rng.randint(4, min(8, left - 4))
        script.append(rng.choices(LABELS, k=size))
        left -= size
    return script


@pytest.mark.anyio
@pytest.mark.parametrize("bound", [2, 4])
async def test_parallel_calls_over_more_labels_than_the_bound(
    boxes: Path, tmp_path: Path, bound: int
) -> None:
    """Every answer names its own label and holds its own box's output; between responses
    (every call of the last one answered) exactly ``bound`` boxes exist on disk; none is
    left when the run ends."""
    rows = await labeled_rows(tmp_path)
    parent = tmp_path / "open-boxes"
    script = responses(bound, seed=15 + bound)
    calls = [(n, label) for n, label in enumerate(label for labels in script for label in labels)]
    replies: list[Reply] = []
    start = 0
    for labels in script:
        batch = calls[start : start + len(labels)]
        start += len(labels)
        replies.append(
            Reply(
                tool_calls=[
                    (
                        "candidate_shell",
                        {"label": label, "command": f"echo call-{n}; cat label.txt"},
                    )
                    for n, label in batch
                ]
            )
        )
    verdict = {"candidates": [{"label": x} for x in LABELS], "ranking": [["c01"]]}
    open_between: list[int] = []

    def model(body: dict[str, Any]) -> Reply:
        turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        if turn:
            open_between.append(len(list(parent.iterdir())))
        return replies[turn] if turn < len(replies) else submit(verdict)

    tools = {
        "max_open_boxes": bound,
        "prefetch": True,
        "box_parent": str(parent),
    }
    async with ChatServer(model) as server:
        episode = await grade(
            server,
            rows,
            tmp_path / "out",
            task={"tools": tools},
            max_turns=len(replies) + 2,
        )
    (trace,) = episode.traces
    assert episode.ok, (trace.stop_condition, trace.errors)
    assert trace.stop_condition == "verdict_submitted"
    answers = tool_results(server.requests[-1])
    expected = [f"[{label}] exit code 0\ncall-{n}\nbox of {label}\n" for n, label in calls]
    assert answers == expected
    assert open_between == [bound] * len(replies)
    assert list(parent.iterdir()) == []
