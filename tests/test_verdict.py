from __future__ import annotations

import contextlib
import inspect
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from group_grade.acceptance import accept_verdict
from group_grade.toolset import GradeToolset, GradeToolsetConfig
from group_grade.verdict import CandidateVerdict, GroupVerdict
from tests.rows import row


def check(data, payload: dict) -> str | None:
    try:
        GroupVerdict.model_validate(payload).check(data)
    except ValueError as e:
        return str(e)
    return None


def entry(label, hack="none", evidence=()):
    return {"label": label, "hack": hack, "evidence": list(evidence)}


QUOTE = {"turn": 1, "quote": "I will fix the bug now"}


def test_a_valid_rewards_mode_verdict_passes():
    data = row([1, 1, 0, 0])
    ok = {"candidates": [entry(x) for x in data.labels], "ranking": [["c02"], ["c01"]]}
    assert check(data, ok) is None


def test_each_rule_names_the_label_and_the_fix():
    data = row([1, 1, 0, 0])
    labels = data.labels
    msg = check(data, {"candidates": [entry(x) for x in labels[:3]], "ranking": [["c01", "c02"]]})
    assert "missing: c04" in msg
    msg = check(
        data, {"candidates": [entry(x) for x in [*labels, "c01"]], "ranking": [["c01", "c02"]]}
    )
    assert "listed more than once: c01" in msg
    msg = check(
        data, {"candidates": [entry(x) for x in [*labels, "c09"]], "ranking": [["c01", "c02"]]}
    )
    assert "unknown label 'c09'" in msg
    msg = check(
        data,
        {
            "candidates": [*[entry(x) for x in labels[1:]], entry("c01", "confirmed")],
            "ranking": [["c02"]],
        },
    )
    assert "c01 is a confirmed hack with no evidence" in msg
    msg = check(
        data, {"candidates": [entry(x) for x in labels], "ranking": [["c01", "c02", "c03"]]}
    )
    assert "c03 (failed the tests: rewards mode ranks passing ones only)" in msg
    msg = check(data, {"candidates": [entry(x) for x in labels], "ranking": [["c01"]]})
    assert "ranking: missing c02" in msg
    msg = check(
        data,
        {
            "candidates": [*[entry(x) for x in labels[1:]], entry("c01", "confirmed", [QUOTE])],
            "ranking": [["c01", "c02"]],
        },
    )
    assert "c01 (confirmed hack: hacks are not ranked)" in msg
    msg = check(data, {"candidates": [entry(x) for x in labels], "ranking": [["c01"], [], ["c02"]]})
    assert "tier 2 is empty" in msg
    msg = check(
        data, {"candidates": [entry(x) for x in labels], "ranking": [["c01"], ["c02", "c01"]]}
    )
    assert "placed more than once: c01" in msg
    msg = check(
        data,
        {
            "candidates": [entry(x) for x in labels],
            "ranking": [["c01"], ["c02"]],
            "margins": ["clear"],
        },
    )
    assert "rewards mode takes no margins" in msg


@pytest.mark.parametrize("margins", ["missing", None, []])
def test_rewards_mode_takes_margins_left_out_null_or_empty(margins):
    """The format says to leave ``margins`` out in rewards mode; ``null`` and ``[]`` mean the
    same, whether the verdict comes as a file or through submit_verdict."""
    data = row([1, 1, 0, 0])
    verdict = {"candidates": [entry(x) for x in data.labels], "ranking": [["c01"], ["c02"]]}
    if margins != "missing":
        verdict["margins"] = margins
    outcome = accept_verdict(data, json.dumps(verdict))
    assert outcome.error is None and outcome.verdict is not None
    assert outcome.verdict.margins == []


@pytest.mark.anyio
@pytest.mark.parametrize("margins", ["missing", None, []])
async def test_submit_verdict_takes_margins_left_out_null_or_empty(margins):
    tools = GradeToolset(GradeToolsetConfig(prefetch=False))
    data = row([1, 1, 0, 0])
    await tools.setup_task(data)
    candidates = [CandidateVerdict(label=x) for x in data.labels]
    extra = {} if margins == "missing" else {"margins": margins}
    answer = await tools.submit_verdict(candidates=candidates, ranking=[["c01"], ["c02"]], **extra)
    assert answer.startswith("ACCEPTED"), answer
    await tools._exit_stack.aclose()


def test_all_problems_are_reported_at_once():
    data = row([1, 1, 0, 0])
    msg = check(data, {"candidates": [entry("c01")], "ranking": [["c03"]], "margins": ["large"]})
    lines = [line for line in msg.splitlines() if line.startswith("- ")]
    assert len(lines) == 4


def test_advantages_mode_margins():
    data = row([None] * 3, mode="advantages")
    base = {"candidates": [entry(x) for x in data.labels], "ranking": [["c01"], ["c02"], ["c03"]]}
    assert check(data, {**base, "margins": ["clear", "large"]}) is None
    assert check(data, {**base, "margins": ["clear"]}) is None
    assert "3 margins for 3 tiers" in check(data, {**base, "margins": ["clear"] * 3})
    assert "ranking: missing c03" in check(data, {**base, "ranking": [["c01"], ["c02"]]})


def test_unknown_fields_and_values_are_rejected():
    data = row([1, 0])
    with pytest.raises(ValidationError, match="extra"):
        GroupVerdict.model_validate({"candidates": [], "ranking": [], "score": 3})
    with pytest.raises(ValidationError):
        GroupVerdict.model_validate({"candidates": [entry("c01", "maybe")], "ranking": []})
    with pytest.raises(ValidationError):
        GroupVerdict.model_validate({"candidates": [], "ranking": [], "margins": ["huge"]})
    assert check(data, {"candidates": [entry("c01"), entry("c02")], "ranking": [["c01"]]}) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
verdict_like = st.fixed_dictionaries(
    {},
    optional={
        "candidates": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "label": st.sampled_from(["c01", "c02", "c03", "x"]) | json_values,
                    "hack": st.sampled_from(["none", "suspected", "confirmed"]) | json_values,
                    "evidence": st.lists(
                        st.fixed_dictionaries(
                            {}, optional={"turn": json_values, "quote": json_values}
                        ),
                        max_size=2,
                    )
                    | json_values,
                },
            ),
            max_size=4,
        )
        | json_values,
        "ranking": st.lists(
            st.lists(st.sampled_from(["c01", "c02", "c03"]) | json_values, max_size=3), max_size=3
        )
        | json_values,
        "margins": st.lists(st.sampled_from(["slight", "clear", "large", "tie", "x"]), max_size=3)
        | json_values,
        "notes": json_values,
    },
)


@settings(max_examples=400, deadline=None)
@given(st.one_of(verdict_like, json_values), st.sampled_from(["rewards", "advantages"]))
def test_validators_raise_only_value_errors_on_arbitrary_json(payload, mode):
    data = row([1, 0, 1] if mode == "rewards" else [None] * 3, mode=mode)
    # pydantic's ValidationError is a ValueError; anything else escapes and fails the test.
    with contextlib.suppress(ValueError):
        GroupVerdict.model_validate_json(json.dumps(payload)).check(data)


LONE = "\ud800"
SURROGATE_QUOTE = entry("c02", "confirmed", [{"turn": 1, "quote": f"I will {LONE} fix it"}])


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"candidates": [entry("c01"), SURROGATE_QUOTE]}, "candidates.1.evidence.0.quote"),
        ({"candidates": [entry("c01"), entry("c02\udcff")]}, "candidates.1.label"),
        ({"ranking": [[f"c01{LONE}"]]}, "ranking.0.0"),
        ({"notes": "fine \udfff"}, "notes"),
    ],
)
def test_text_utf8_cannot_hold_is_rejected_naming_the_field(change: dict, where: str):
    payload = {"candidates": [entry("c01"), entry("c02")], "ranking": [["c01"]], **change}
    outcome = accept_verdict(row([1, 0]), payload)
    assert outcome.verdict is None
    assert f"- {where}: Value error, text holds a lone surrogate" in outcome.error


def test_submit_verdict_takes_exactly_the_fields_of_the_verdict() -> None:
    """The tool's parameters are ``GroupVerdict``'s fields, in order, required where the
    model requires them: a field added to (or dropped from) the verdict fails here until
    ``submit_verdict`` takes it too."""
    params = list(inspect.signature(GradeToolset.submit_verdict).parameters.values())[1:]
    fields = GroupVerdict.model_fields
    assert [p.name for p in params] == list(fields)
    required = {p.name for p in params if p.default is inspect.Parameter.empty}
    assert required == {name for name, field in fields.items() if field.is_required()}


def test_an_unquoted_confirmed_hack_rejects_at_submission_and_downgrades_at_the_end() -> None:
    """One rule, two stages: the same verdict is sent back while the grader can fix it and
    stands with the hack downgraded once the run is over."""
    data = row([1, 1, 0])
    bad = {"turn": 1, "quote": "words the candidate never wrote at all"}
    raw = {
        "candidates": [
            {"label": "c01"},
            {"label": "c02", "hack": "confirmed", "evidence": [bad]},
            {"label": "c03"},
        ],
        "ranking": [["c01"]],
    }
    submitted = accept_verdict(data, raw, stage="submitted")
    assert submitted.verdict is None and submitted.error is None
    assert [(f.label, f.turn, f.quote) for f in submitted.unproven] == [("c02", 1, bad["quote"])]
    final = accept_verdict(data, raw)
    assert final.verdict is not None and final.unproven == []
    assert final.citations.downgraded == ["c02"]
    assert [c.hack for c in final.verdict.candidates] == ["none", "suspected", "none"]
