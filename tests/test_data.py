from __future__ import annotations

import re

import pytest
from verifiers.v1.trace import ModelCall
from verifiers.v1.types import Usage

from group_grade.data import GroupGradeData
from group_grade.transcript import ELIDED, TOOL_RESULT_CAP
from tests.traces import Call, Turn, make_trace, simple_trace


def group(rewards, n_turns=3):
    return [simple_trace(n_turns, reward=r, tag=f"t{i}") for i, r in enumerate(rewards)]


def test_same_group_same_labels_and_different_groups_differ():
    traces = group([1, 0, 1, 0, 1, 0, 0, 1])
    data1 = GroupGradeData.from_traces(traces, group_id="task-7/step-3")
    labels1 = data1.trace_ids
    data2 = GroupGradeData.from_traces(traces, group_id="task-7/step-3")
    labels2 = data2.trace_ids
    assert labels1 == labels2 and data1 == data2
    assert list(labels1) == [f"c0{i}" for i in range(1, 9)]
    assert sorted(labels1.values()) == sorted(t.id for t in traces)
    orders = {
        tuple(GroupGradeData.from_traces(traces, group_id=f"group-{k}").trace_ids.values())
        for k in range(8)
    }
    assert len(orders) > 1


def test_pass_flags_rewards_and_fields_from_trace_info():
    traces = group([1.0, 0.0, 0.5])
    traces[0].info.update(
        patch="diff --git a/x b/x", test_output="1 passed", checkpoint="local:/tmp/x.tgz"
    )
    data = GroupGradeData.from_traces(traces, group_id="g")
    labels = data.trace_ids
    by_id = {labels[c.label]: c for c in data.candidates}
    first, second, third = (by_id[t.id] for t in traces)
    assert (first.passed, second.passed, third.passed) == (True, False, False)  # mean is 0.5
    assert first.reward == 1.0 and first.patch == "diff --git a/x b/x"
    assert first.test_output == "1 passed" and first.checkpoint == "local:/tmp/x.tgz"
    assert second.patch is None and second.checkpoint is None
    assert first.stop_condition == "agent_completed"
    assert data.task_prompt == "Fix the bug in calc.py so that the tests pass."
    assert data.inner["prompt"] == data.task_prompt
    assert data.network_allow == []
    explicit = GroupGradeData.from_traces(traces, group_id="g", passed=[False, True, True])
    assert [explicit.candidate(label).passed for label in labels] == [
        {traces[0].id: False, traces[1].id: True, traces[2].id: True}[labels[label]]
        for label in labels
    ]


def test_output_tokens_are_recorded_only_when_the_trace_has_a_count():
    """A trace whose model calls reported no usage says 0 output tokens: not a count. The row
    says None (shown as "not recorded"); a row that carries 0 stays valid."""
    counted, unknown = group([1.0, 0.0])
    counted.calls.append(ModelCall(node=1, usage=Usage(prompt_tokens=10, completion_tokens=7)))
    assert unknown.num_output_tokens == 0 and unknown.usage is None
    data = GroupGradeData.from_traces([counted, unknown], group_id="g")
    labels = data.trace_ids
    tokens = {labels[c.label]: c.num_output_tokens for c in data.candidates}
    assert tokens == {counted.id: 7, unknown.id: None}
    wire = data.model_dump(mode="json")
    wire["candidates"][0]["num_output_tokens"] = 0
    assert GroupGradeData.model_validate(wire).candidates[0].num_output_tokens == 0


def test_unranked_candidates_are_elided_with_turn_numbers_kept():
    traces = group([1, 0], n_turns=30)
    data = GroupGradeData.from_traces(traces, group_id="g")
    passing = next(c for c in data.candidates if c.passed)
    failing = next(c for c in data.candidates if not c.passed)
    assert len(passing.turns) == len(failing.turns) == 30
    assert ELIDED not in passing.turns
    assert failing.turns[10:20] == [ELIDED] * 10
    assert failing.turns[20].startswith("t1 step 21:") and failing.turns[9].startswith(
        "t1 step 10:"
    )
    everyone = GroupGradeData.from_traces(traces, group_id="g", mode="advantages")
    assert all(ELIDED not in c.turns for c in everyone.candidates)


def test_tool_results_are_capped_with_a_marker():
    huge = "x" * 10_000
    trace = make_trace([Turn("go", [Call("bash", {"command": "cat big"}, huge)])], reward=1)
    data = GroupGradeData.from_traces([trace, simple_trace(1, reward=0)], group_id="g")
    turn = next(c for c in data.candidates if c.passed).turns[0]
    assert f"[... {10_000 - TOOL_RESULT_CAP} characters cut ...]" in turn
    assert len(turn) < TOOL_RESULT_CAP + 200


def test_rewards_mode_needs_rewards_and_advantages_mode_does_not():
    traces = [simple_trace(2, reward=None), simple_trace(2, reward=None)]
    with pytest.raises(ValueError, match="rewards mode needs a reward"):
        GroupGradeData.from_traces(traces, group_id="g")
    data = GroupGradeData.from_traces(traces, group_id="g", mode="advantages")
    assert [c.reward for c in data.candidates] == [None, None]


def test_row_round_trips_over_the_wire_format():
    data = GroupGradeData.from_traces(group([1, 0, 0]), group_id="g")
    again = GroupGradeData.model_validate(data.model_dump(mode="json"))
    assert again == data


def test_row_validation_names_the_problem():
    data = GroupGradeData.from_traces(group([1, 0]), group_id="g")
    raw = data.model_dump(mode="json")
    with pytest.raises(ValueError, match="not unique"):
        GroupGradeData.model_validate({**raw, "candidates": [raw["candidates"][0]] * 2})
    with pytest.raises(ValueError, match="truth names unknown labels"):
        GroupGradeData.model_validate({**raw, "truth": {"tiers": [["c09"]]}})


@pytest.mark.parametrize(
    ("labels", "problem"),
    [
        (["c01", "../../x"], "label '../../x' must"),
        (["c01", "c01/"], "label 'c01/' must"),
        (["c01", ".."], "label '..' must"),
        (["c01", "a..b"], "label 'a..b' must"),
        (["c01", "/abs"], "label '/abs' must"),
        (["c01", ""], "label '' must"),
        (["c01", "c" * 65], "must match"),
        (["c01", "verdict.json"], "label 'verdict.json' is reserved"),
    ],
)
def test_attack_6_labels_are_safe_path_components(labels: list[str], problem: str) -> None:
    data = GroupGradeData.from_traces(group([1, 0]), group_id="g")
    raw = data.model_dump(mode="json")
    raw["trace_ids"] = {}
    for candidate, label in zip(raw["candidates"], labels, strict=True):
        candidate["label"] = label
    with pytest.raises(ValueError, match=re.escape(problem)) as refused:
        GroupGradeData.model_validate(raw)
    assert "candidates.1.label" in str(refused.value)


@pytest.mark.parametrize(
    ("field", "paths", "problem"),
    [
        ("privileged", ["../../etc/cron.d/x"], "'../../etc/cron.d/x' must"),
        ("privileged", ["/etc/passwd"], "'/etc/passwd' must"),
        ("privileged", ["a\\..\\..\\x"], "must"),
        ("privileged", ["tests/\x00x"], "must"),
        ("privileged", [""], "'' must"),
        ("privileged", ["t.py", "./t.py"], "'./t.py' is the same file as 't.py'"),
        ("privileged", ["tests", "tests/t.py"], "'tests' is also a folder of 'tests/t.py'"),
        ("files", ["x/../../../y"], "'x/../../../y' must"),
        ("files", ["a//b", "a/b"], "'a/b' is the same file as 'a//b'"),
    ],
)
def test_attack_6_file_paths_stay_inside_their_folder(
    field: str, paths: list[str], problem: str
) -> None:
    data = GroupGradeData.from_traces(group([1, 0]), group_id="g")
    raw = data.model_dump(mode="json")
    tree = {path: "x" for path in paths}
    if field == "files":
        raw["candidates"][0]["files"] = tree
    else:
        raw["privileged"] = tree
    with pytest.raises(ValueError, match=re.escape(problem)):
        GroupGradeData.model_validate(raw)
