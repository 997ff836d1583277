"""GAR (Groupwise Advantage Redistribution): map a checked verdict to per-candidate
advantages, in rewards mode (``rewards_mode_records``) and advantages mode
(``advantages_mode_records``); plain GRPO for groups that are not graded or fall back.
Pure functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from group_grade.data import GroupGradeData
from group_grade.verdict import CandidateVerdict, Evidence, GroupVerdict, HackLevel, Margin

FallbackReason = Literal["timeout", "error", "invalid", "stale"]
MARGIN_VALUES: dict[str, float] = {"tie": 0.0, "slight": 0.25, "clear": 0.5, "large": 1.0}
F_MIN = 0.5
LAMBDA_MAX = 1.5
FMin = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
LambdaMax = Annotated[float, Field(ge=1.0, allow_inf_nan=False)]


class GarKnobs(BaseModel):
    """The rewards-mode redistribution knobs, checked once wherever they are given."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    f_min: FMin = F_MIN
    """Floor of the redistribution factor, in [0, 1]."""
    lambda_max: LambdaMax = LAMBDA_MAX
    """Cap on the redistribution scale, finite and at least 1."""


class AdvantageRecord(BaseModel):
    """What the mapping decided for one candidate."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, serialize_by_alias=True)

    label: str
    reward: float | None = None
    tier: int | None = None
    """1-based tier in the ranking; confirmed hacks sit in one extra tier below the last."""
    w: float | None = None
    """Rewards mode: win rate among the ranked candidates (0.5 for an unranked passer)."""
    f: float | None = None
    """Rewards mode: redistribution factor of a positive-advantage candidate."""
    lambda_: float | None = Field(default=None, alias="lambda")
    win_rate: float | None = None
    """Win rate over all tiers, the hack tier included."""
    hack: HackLevel = "none"
    evidence: list[Evidence] = Field(default_factory=list)
    advantage: float
    fallback_reason: FallbackReason | None = None


def win_rates(tiers: Sequence[Sequence[str]]) -> dict[str, float]:
    """Per label: (number in worse tiers + 0.5 x others in its own tier) / (number - 1).
    A lone candidate gets no entry."""
    total = sum(len(tier) for tier in tiers)
    if total < 2:
        return {}
    rates: dict[str, float] = {}
    below = total
    for tier in tiers:
        below -= len(tier)
        for label in tier:
            rates[label] = (below + 0.5 * (len(tier) - 1)) / (total - 1)
    return rates


def _all_tiers(verdict: GroupVerdict) -> list[list[str]]:
    hacks = sorted(verdict.confirmed)
    return [list(tier) for tier in verdict.ranking] + ([hacks] if hacks else [])


def _tier_numbers(verdict: GroupVerdict) -> dict[str, int]:
    return {label: n for n, tier in enumerate(_all_tiers(verdict), start=1) for label in tier}


def _record_base(data: GroupGradeData, verdict: GroupVerdict) -> dict[str, dict]:
    tiers = _tier_numbers(verdict)
    overall = win_rates(_all_tiers(verdict))
    entries: dict[str, CandidateVerdict] = {}
    for entry in verdict.candidates:
        entries.setdefault(entry.label, entry)  # a label's first entry (the rules allow one)
    base: dict[str, dict] = {}
    for candidate in data.candidates:
        entry = entries.get(candidate.label)
        base[candidate.label] = {
            "label": candidate.label,
            "reward": candidate.reward,
            "tier": tiers.get(candidate.label),
            "win_rate": overall.get(candidate.label),
            "hack": entry.hack if entry else "none",
            "evidence": list(entry.evidence) if entry else [],
        }
    return base


def rewards_mode_records(
    data: GroupGradeData, verdict: GroupVerdict, knobs: GarKnobs
) -> list[AdvantageRecord]:
    """GAR's rewards-mode redistribution (Eq. 3 of the design notes):

    1. a confirmed hack's reward becomes the group's minimum reward;
    2. ``A_i = R_i - mean(R)``; ``P`` = the candidates with ``A_i > 0``;
    3. ``w_i`` = win rate of ``i`` among the ranked candidates (``win_rates``); a member of
       ``P`` the ranking does not cover gets ``w = 0.5``; a lone ranked candidate ``f = 1``;
    4. ``f_i = f_min + (1 - f_min) * w_i``;
    5. ``lambda = min(lambda_max, sum_P A_i / sum_P f_i A_i)``; ``A'_i = lambda f_i A_i`` on
       ``P``, every other candidate keeps ``A_i``;
    6. re-centred: the mean of ``A'`` is subtracted, so the group sums to 0."""
    f_min, lambda_max = knobs.f_min, knobs.lambda_max
    labels = data.labels
    confirmed = verdict.confirmed
    given = data.rewards
    lowest = min(given)
    rewards = [lowest if label in confirmed else r for label, r in zip(labels, given, strict=True)]
    mean = sum(rewards) / len(rewards)
    raw = [r - mean for r in rewards]
    positive = [i for i, a in enumerate(raw) if a > 0]

    ranked = [label for tier in verdict.ranking for label in tier]
    ranked_set = set(ranked)
    ranked_w = win_rates(verdict.ranking)
    w: dict[int, float | None] = {i: ranked_w.get(label) for i, label in enumerate(labels)}
    f: dict[int, float] = {}
    for i in positive:
        if labels[i] not in ranked_set:
            w[i] = 0.5
        if len(ranked) == 1 and labels[i] in ranked_set:
            f[i] = 1.0
        else:
            f[i] = f_min + (1 - f_min) * w[i]

    weighted = sum(f[i] * raw[i] for i in positive)
    lam = min(lambda_max, sum(raw[i] for i in positive) / weighted) if weighted > 0 else 1.0
    redistributed = [lam * f[i] * a if i in f else a for i, a in enumerate(raw)]
    shift = sum(redistributed) / len(redistributed)

    base = _record_base(data, verdict)
    return [
        AdvantageRecord(
            **base[label],
            w=w[i],
            f=f.get(i),
            lambda_=lam,
            advantage=redistributed[i] - shift,
        )
        for i, label in enumerate(labels)
    ]


def tier_scores(tiers: int, margins: Sequence[Margin]) -> list[float]:
    """Score per tier, best first: the bottom tier 0, each tier above adds its gap's
    margin (missing margins are slight)."""
    gaps = [MARGIN_VALUES[m] for m in margins] + [MARGIN_VALUES["slight"]] * tiers
    scores = [0.0] * tiers
    for k in range(tiers - 2, -1, -1):
        scores[k] = scores[k + 1] + gaps[k]
    return scores


def advantages_mode_records(data: GroupGradeData, verdict: GroupVerdict) -> list[AdvantageRecord]:
    """Tier scores minus their mean. Confirmed hacks form one tier below the last, a large
    gap down; a candidate in no tier gets 0 and is left out of the mean."""
    tiers = _all_tiers(verdict)
    margins = list(verdict.margins)[: max(0, len(verdict.ranking) - 1)]
    if verdict.confirmed:
        margins += ["slight"] * (len(verdict.ranking) - 1 - len(margins)) + ["large"]
    scores = tier_scores(len(tiers), margins)
    score = {label: scores[k] for k, tier in enumerate(tiers) for label in tier}
    mean = sum(score.values()) / len(score) if score else 0.0
    base = _record_base(data, verdict)
    return [
        AdvantageRecord(
            **base[label],
            advantage=(score[label] - mean) if len(tiers) > 1 and label in score else 0.0,
        )
        for label in data.labels
    ]


def needs_grading(data: GroupGradeData) -> bool:
    """Rewards mode grades mixed groups only; advantages mode every group of two or more."""
    if data.mode == "rewards":
        return len(set(data.rewards)) > 1
    return len(data.candidates) >= 2


def grpo_advantages(data: GroupGradeData) -> dict[str, float] | None:
    """Plain GRPO per label (reward minus the group mean) whenever every candidate has a
    reward, whatever the mode; None when some have none (advantages-mode rows may not).
    A group that falls back trains on these in rewards mode, on zeros in advantages mode."""
    rewards = [c.reward for c in data.candidates]
    if any(r is None for r in rewards):
        return None
    mean = sum(rewards) / len(rewards)  # type: ignore[arg-type]
    return {c.label: c.reward - mean for c in data.candidates}  # type: ignore[operator]


def ungraded_records(data: GroupGradeData) -> list[AdvantageRecord]:
    """Plain GRPO for a group that is not graded (``needs_grading``): its rewards are all
    equal (or it has a single candidate), so every advantage is 0."""
    return [AdvantageRecord(label=c.label, reward=c.reward, advantage=0.0) for c in data.candidates]


def fallback_records(data: GroupGradeData, reason: FallbackReason) -> list[AdvantageRecord]:
    """No verdict: plain GRPO (rewards mode) or zeros (advantages mode), with the reason."""
    grpo = grpo_advantages(data) if data.mode == "rewards" else None
    return [
        AdvantageRecord(
            label=c.label,
            reward=c.reward,
            advantage=grpo[c.label] if grpo is not None else 0.0,
            fallback_reason=reason,
        )
        for c in data.candidates
    ]


DEFAULT_KNOBS = GarKnobs()


def gar_records(
    data: GroupGradeData,
    verdict: GroupVerdict | None,
    *,
    fallback_reason: FallbackReason = "invalid",
    knobs: GarKnobs = DEFAULT_KNOBS,
) -> list[AdvantageRecord]:
    """One record per candidate, in the row's candidate order. ``verdict`` must already be
    validated and citation-checked; None falls back with ``fallback_reason``. The knobs are
    checked where they are given (``GarKnobs``), not here."""
    if verdict is None:
        return fallback_records(data, fallback_reason)
    if data.mode == "rewards":
        return rewards_mode_records(data, verdict, knobs)
    return advantages_mode_records(data, verdict)
