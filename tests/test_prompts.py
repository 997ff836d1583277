from __future__ import annotations

import json
import re

from group_grade.data import Candidate, GroupGradeData
from group_grade.prompts import example_verdict, render_prompt
from group_grade.verdict import GroupVerdict


def data(mode):
    return GroupGradeData(
        group_id="g",
        mode=mode,
        task_prompt="Make `add` return the sum.",
        candidates=[
            Candidate(
                label="c01",
                reward=1.0 if mode == "rewards" else None,
                passed=True,
                turns=["a", "b"],
                num_output_tokens=120,
                stop_condition="agent_completed",
                checkpoint="local:/tmp/c01.tgz",
            ),
            Candidate(label="c02", reward=0.0 if mode == "rewards" else None, turns=["a"]),
        ],
    )


def test_rewards_mode_prompt_shows_rewards_and_its_rules():
    text = render_prompt(data("rewards"), grade_root="grade")
    assert "Ranking rules (rewards mode)" in text and "advantages mode" not in text
    assert (
        "- c01: passed (reward 1), 2 turns, 120 output tokens, stop: agent_completed, "
        "has a box" in text
    )
    assert (
        "- c02: failed (reward 0), 1 turns, output tokens not recorded, stop: not recorded, "
        "no box (files only)" in text
    )
    assert "`grade/c01`" not in text and "`grade/<label>/turns/NNN.md`" in text
    assert "Make `add` return the sum." in text
    assert "candidate_shell(label, command)" in text


def test_advantages_mode_prompt_hides_rewards():
    text = render_prompt(data("advantages"), grade_root="/grade")
    assert "Ranking rules (advantages mode)" in text
    assert "reward 1" not in text and "passed (" not in text and "failed (" not in text
    assert "- c01: 2 turns, 120 output tokens" in text
    assert "`/grade/privileged/`" in text


def test_the_example_verdict_is_rendered_from_the_model_and_parses():
    for mode in ("rewards", "advantages"):
        text = render_prompt(data(mode), grade_root="/grade")
        block = re.search(r"```json\n(.*?)\n```", text, re.S).group(1)
        parsed = GroupVerdict.model_validate(json.loads(block))
        assert parsed == example_verdict(mode)
        for field in (
            "candidates",
            "ranking",
            "margins",
            "notes",
            "label",
            "hack",
            "evidence",
            "turn",
            "quote",
        ):
            assert f"- `{field}`:" in text


def test_policy_override_replaces_only_the_policy():
    text = render_prompt(data("rewards"), grade_root="/grade", policy="Be strict.")
    assert text.startswith("Be strict.") and "senior engineer" not in text
    assert "Ranking rules (rewards mode)" in text


def test_no_box_means_no_candidate_shell():
    d = data("rewards")
    d = d.model_copy(
        update={"candidates": [c.model_copy(update={"checkpoint": None}) for c in d.candidates]}
    )
    assert "candidate_shell" not in render_prompt(d, grade_root="/grade")


def flat(text: str) -> str:
    return " ".join(text.split())


def test_the_prompt_states_the_box_facts_and_the_limits():
    d = data("rewards").model_copy(update={"box_workdir": "/src"})
    text = flat(render_prompt(d, grade_root="/grade", command_timeout=45, output_cap=3000))
    for fact in (
        "runs a command with `sh -c` (dash, not bash: `bash -c '...'` for bash syntax)",
        "a snapshot of its working directory (git history only if `.git` was kept)",
        "Changes and its `/tmp` persist; no other box sees them.",
        "The package under test imports from `/src`, where commands start",
        "45 s per command",
        "Read one file per call",
        "(`candidate_shell`'s past 3000 characters)",
        "`/grade/<label>/turns/NNN.md`",
    ):
        assert fact in text, fact
    prime = d.model_copy(
        update={
            "candidates": [c.model_copy(update={"checkpoint": "prime:x"}) for c in d.candidates]
        }
    )
    assert "runs a command with `bash -c`," in flat(render_prompt(prime, grade_root="/grade"))


def test_rewards_mode_says_to_leave_margins_out():
    rewards = flat(render_prompt(data("rewards"), grade_root="/grade"))
    assert "- `margins`: leave it out in rewards mode (`null` or `[]` mean the same)." in rewards
    assert '"margins"' not in rewards and "Leave `margins` out." in rewards
    advantages = flat(render_prompt(data("advantages"), grade_root="/grade"))
    assert (
        "- `margins`: Advantages mode only" in advantages and '"margins": ["clear"]' in advantages
    )
