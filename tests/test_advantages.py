from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from group_grade.advantages import GarKnobs, gar_records, tier_scores, win_rates
from group_grade.verdict import CandidateVerdict, Evidence, GroupVerdict
from tests.rows import row

QUOTE = Evidence(turn=1, quote="I will fix the bug now")


def verdict(ranking, confirmed=(), margins=(), labels=None) -> GroupVerdict:
    labels = labels or sorted({x for tier in ranking for x in tier} | set(confirmed))
    return GroupVerdict(
        candidates=[
            CandidateVerdict(label=x, hack="confirmed", evidence=[QUOTE])
            if x in confirmed
            else CandidateVerdict(label=x)
            for x in labels
        ],
        ranking=[list(t) for t in ranking],
        margins=list(margins),
    )


def by_label(records):
    return {r.label: r for r in records}


def test_advantages_mode_worked_example():
    data = row([None] * 4, mode="advantages")
    v = verdict([["c02"], ["c01", "c04"], ["c03"]], margins=["slight", "large"])
    v.check(data)
    got = by_label(gar_records(data, v))
    assert got["c02"].advantage == pytest.approx(0.4375, abs=1e-12)
    assert got["c01"].advantage == pytest.approx(0.1875, abs=1e-12)
    assert got["c04"].advantage == pytest.approx(0.1875, abs=1e-12)
    assert got["c03"].advantage == pytest.approx(-0.8125, abs=1e-12)
    assert [got[x].tier for x in ("c02", "c01", "c04", "c03")] == [1, 2, 2, 3]
    assert tier_scores(3, ["slight", "large"]) == [1.25, 1.0, 0.0]


def test_two_tiers_with_large_gap_reproduce_grpo():
    data = row([None, None], mode="advantages")
    got = by_label(gar_records(data, verdict([["c01"], ["c02"]], margins=["large"])))
    assert got["c01"].advantage == pytest.approx(0.5)
    assert got["c02"].advantage == pytest.approx(-0.5)


def test_rewards_mode_hack_worked_example():
    # rewards [1, 1, 1, 1, 0, 0]; the fourth is a confirmed hack; ranking [[a], [b, c]].
    data = row([1, 1, 1, 1, 0, 0])
    v = verdict([["c01"], ["c02", "c03"]], confirmed={"c04"}, labels=data.labels)
    v.check(data)
    got = by_label(gar_records(data, v))
    assert got["c01"].advantage == pytest.approx(2 / 3, abs=1e-9)
    assert got["c02"].advantage == pytest.approx(5 / 12, abs=1e-9)
    assert got["c03"].advantage == pytest.approx(5 / 12, abs=1e-9)
    for hack_or_fail in ("c04", "c05", "c06"):
        assert got[hack_or_fail].advantage == pytest.approx(-0.5, abs=1e-9)
    assert [got[x].w for x in ("c01", "c02", "c03")] == [1.0, 0.25, 0.25]
    assert [got[x].f for x in ("c01", "c02", "c03")] == [1.0, 0.625, 0.625]
    assert got["c01"].lambda_ == pytest.approx(4 / 3)
    assert got["c04"].hack == "confirmed" and got["c04"].tier == 3
    assert got["c04"].model_dump()["lambda"] == pytest.approx(4 / 3)


def test_lambda_cap_then_recentering():
    # Two passers, one far better: lambda would be 1/0.75 = 1.333 with f_min 0.5; cap at 1.1.
    data = row([1, 1, 0, 0])
    got = by_label(gar_records(data, verdict([["c01"], ["c02"]]), knobs=GarKnobs(lambda_max=1.1)))
    assert got["c01"].lambda_ == pytest.approx(1.1)
    assert sum(r.advantage for r in got.values()) == pytest.approx(0.0, abs=1e-12)
    # A' = 1.1 * [0.5, 0.25] and -0.5 twice: sum -0.175, shift -0.04375.
    assert got["c01"].advantage == pytest.approx(0.55 + 0.04375)
    assert got["c03"].advantage == pytest.approx(-0.5 + 0.04375)


def test_unranked_member_of_p_gets_half_win_rate():
    # c02 passed but its confirmed hack was downgraded by the citation check: it is in P,
    # not ranked, so w = 0.5.
    data = row([1, 1, 1, 0])
    v = GroupVerdict(
        candidates=[CandidateVerdict(label=x) for x in ("c01", "c03", "c04")]
        + [CandidateVerdict(label="c02", hack="suspected", evidence=[QUOTE])],
        ranking=[["c01"], ["c03"]],
    )
    got = by_label(gar_records(data, v))
    assert got["c02"].w == 0.5 and got["c02"].f == 0.75 and got["c02"].tier is None
    assert got["c01"].f == 1.0 and got["c03"].f == 0.5
    # sum_P A = 0.75, sum_P f A = 0.25 * (1 + 0.75 + 0.5) = 0.5625 -> lambda 4/3 (no cap).
    assert got["c01"].lambda_ == pytest.approx(4 / 3)
    assert got["c02"].advantage == pytest.approx(4 / 3 * 0.75 * 0.25)


def test_lone_ranked_candidate_gets_f_one():
    data = row([1, 0, 0])
    got = by_label(gar_records(data, verdict([["c01"]], labels=data.labels)))
    assert got["c01"].f == 1.0 and got["c01"].lambda_ == 1.0
    assert got["c01"].advantage == pytest.approx(2 / 3)


def test_single_tier_and_unranked_in_advantages_mode():
    data = row([None] * 3, mode="advantages")
    same = by_label(gar_records(data, verdict([["c01", "c02", "c03"]])))
    assert [r.advantage for r in same.values()] == [0.0, 0.0, 0.0]
    # c03 is a hack whose citation failed: neither ranked nor in the hack tier.
    v = GroupVerdict(
        candidates=[
            CandidateVerdict(label="c01"),
            CandidateVerdict(label="c02"),
            CandidateVerdict(label="c03", hack="suspected"),
        ],
        ranking=[["c01"], ["c02"]],
        margins=["clear"],
    )
    got = by_label(gar_records(data, v))
    assert got["c03"].advantage == 0.0 and got["c03"].tier is None
    assert got["c01"].advantage == pytest.approx(0.25) and got["c02"].advantage == pytest.approx(
        -0.25
    )


def test_hack_tier_in_advantages_mode_is_a_large_gap_down():
    data = row([None] * 3, mode="advantages")
    got = by_label(
        gar_records(data, verdict([["c01"], ["c02"]], confirmed={"c03"}, margins=["clear"]))
    )
    # scores 1.5 / 1 / 0, mean 5/6
    assert got["c01"].advantage == pytest.approx(1.5 - 5 / 6)
    assert got["c03"].advantage == pytest.approx(-5 / 6)
    assert got["c03"].tier == 3 and got["c03"].win_rate == 0.0 and got["c01"].win_rate == 1.0


def test_fallback_is_grpo_in_rewards_mode_and_zero_in_advantages_mode():
    grpo = gar_records(row([1, 0, 0, 1]), None, fallback_reason="timeout")
    assert [r.advantage for r in grpo] == [0.5, -0.5, -0.5, 0.5]
    assert {r.fallback_reason for r in grpo} == {"timeout"}
    zeros = gar_records(row([None] * 3, mode="advantages"), None, fallback_reason="invalid")
    assert [r.advantage for r in zeros] == [0.0] * 3
    assert {r.fallback_reason for r in zeros} == {"invalid"}


def test_bad_knobs_are_refused():
    with pytest.raises(ValueError, match="f_min"):
        GarKnobs(f_min=1.5)
    with pytest.raises(ValueError, match="lambda_max"):
        GarKnobs(lambda_max=0.5)


def test_win_rate():
    tiers = [["a"], ["b", "c"], ["d"]]
    assert win_rates(tiers) == {"a": 1.0, "b": 0.5, "c": 0.5, "d": 0.0}
    assert win_rates([["a"]]) == {}


# ---- properties -------------------------------------------------------------------------


@st.composite
def graded_groups(draw, mode: str):
    n = draw(st.integers(2, 10))
    labels = [f"c{i:02d}" for i in range(1, n + 1)]
    if mode == "rewards":
        rewards = draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=n, max_size=n))
        if len(set(rewards)) == 1:
            rewards[0] = 1.0 - rewards[0]
        data = row(rewards)
    else:
        data = row([None] * n, mode="advantages")
    hack_level = st.sampled_from(["none", "none", "suspected", "confirmed"])
    levels = {label: draw(hack_level) for label in labels}
    confirmed = {x for x, lvl in levels.items() if lvl == "confirmed"}
    rankable = data.rankable(confirmed)
    order = draw(st.permutations(rankable))
    tiers: list[list[str]] = []
    for label in order:
        if tiers and draw(st.booleans()):
            tiers[-1].append(label)
        else:
            tiers.append([label])
    margins = (
        draw(
            st.lists(
                st.sampled_from(["tie", "slight", "clear", "large"]),
                max_size=max(0, len(tiers) - 1),
            )
        )
        if mode == "advantages"
        else []
    )
    v = GroupVerdict(
        candidates=[
            CandidateVerdict(
                label=x, hack=levels[x], evidence=[QUOTE] if levels[x] != "none" else []
            )
            for x in labels
        ],
        ranking=tiers,
        margins=margins,
    )
    v.check(data)
    f_min = draw(st.floats(0.0, 1.0))
    lambda_max = draw(st.floats(1.0, 3.0))
    return data, v, f_min, lambda_max


modes = st.sampled_from(["rewards", "advantages"])


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_properties_of_the_mapping(draw):
    mode = draw.draw(modes)
    data, v, f_min, lambda_max = draw.draw(graded_groups(mode))
    records = gar_records(data, v, knobs=GarKnobs(f_min=f_min, lambda_max=lambda_max))
    adv = {r.label: r.advantage for r in records}
    assert all(math.isfinite(a) for a in adv.values())
    if mode == "rewards" or any(r.tier is not None for r in records):
        in_mean = [r.advantage for r in records if mode == "rewards" or r.tier is not None]
        assert abs(sum(in_mean)) < 1e-9
    for r in records:
        if r.lambda_ is not None:
            assert r.lambda_ <= lambda_max + 1e-12
    # A better tier never gets a lower advantage than a worse one among passing candidates.
    tier_of = {x: k for k, tier in enumerate(v.ranking) for x in tier}
    for a in tier_of:
        for b in tier_of:
            if tier_of[a] < tier_of[b]:
                assert adv[a] >= adv[b] - 1e-12
    # A confirmed hack never ends above an honest candidate.
    honest = [x for x in data.labels if x not in v.confirmed]
    for hack in v.confirmed:
        for x in honest:
            assert adv[hack] <= adv[x] + 1e-12


@settings(max_examples=200, deadline=None)
@given(graded_groups("rewards"))
def test_failing_candidates_keep_grpo_advantage_up_to_a_shift(group):
    data, v, f_min, lambda_max = group
    records = gar_records(data, v, knobs=GarKnobs(f_min=f_min, lambda_max=lambda_max))
    rewards = [
        min(data.rewards) if x in v.confirmed else r
        for x, r in zip(data.labels, data.rewards, strict=True)
    ]
    mean = sum(rewards) / len(rewards)
    shifts = {
        round(r.advantage - (reward - mean), 9)
        for r, reward in zip(records, rewards, strict=True)
        if reward - mean <= 0
    }
    assert len(shifts) <= 1


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-5, 5, allow_nan=False), min_size=2, max_size=8).filter(
        lambda rs: len(set(rs)) > 1
    )
)
def test_real_valued_rewards_sum_to_zero_and_respect_the_cap(rewards):
    data = row(rewards)
    passing = data.rankable(set())
    v = verdict([[x] for x in passing], labels=data.labels)
    records = gar_records(data, v)
    assert abs(sum(r.advantage for r in records)) < 1e-9
    assert all(r.lambda_ <= 1.5 for r in records)


@pytest.mark.parametrize(
    "knobs",
    [{"lambda_max": math.nan}, {"lambda_max": math.inf}, {"f_min": math.nan}],
)
def test_attack_8_non_finite_knobs_are_refused(knobs: dict) -> None:
    (name,) = knobs
    with pytest.raises(ValueError, match=f"{name}\n  Input should be a finite number"):
        GarKnobs(**knobs)
