"""The door's pure checks, as properties: escaping, labels, paths, rewards."""

from __future__ import annotations

import math
from pathlib import PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from group_grade import validators
from group_grade.data import RESERVED_LABELS, GroupGradeData
from group_grade.layout import VERDICT_FILE
from group_grade.staging import grader_files
from tests.rows import row

any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
"""Every code point, lone surrogates included."""
no_surrogates = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


@given(any_text)
def test_escaped_text_always_encodes_and_escaping_is_idempotent(text: str) -> None:
    escaped = validators.escape_surrogates(text)
    escaped.encode("utf-8")
    assert validators.escape_surrogates(escaped) == escaped
    assert validators.unencodable(escaped) is None
    assert len(escaped) == len(text) + 5 * sum(0xD800 <= ord(c) <= 0xDFFF for c in text)


@given(no_surrogates)
def test_text_without_surrogates_is_unchanged_and_accepted(text: str) -> None:
    assert validators.escape_surrogates(text) is text
    assert validators.utf8_text(text) is text


@given(no_surrogates, st.sampled_from("\ud800\udbff\udc00\udfff"), no_surrogates)
def test_a_lone_surrogate_is_escaped_or_refused(head: str, lone: str, tail: str) -> None:
    text = head + lone + tail
    assert validators.escape_surrogates(text) == head + f"\\u{ord(lone):04x}" + tail
    with pytest.raises(ValueError, match=f"lone surrogate \\(U\\+{ord(lone):04X} at"):
        validators.utf8_text(text)
    assert validators.unencodable({"a": [0, {"b": text}]}).startswith("a.1.b: text holds")


@given(st.recursive(any_text, lambda c: st.lists(c, max_size=3) | st.dictionaries(any_text, c)))
def test_every_string_of_a_tree_is_escaped(tree: object) -> None:
    assert validators.unencodable(validators.escape_tree(tree)) is None


@given(any_text)
def test_a_label_that_passes_is_one_safe_path_component(label: str) -> None:
    try:
        validators.safe_label(label)
    except ValueError:
        return
    assert PurePosixPath(label).parts == (label,) and label not in (".", "..")
    assert ".." not in label and 1 <= len(label) <= 64 and label.isascii()


@given(st.from_regex(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,62}[A-Za-z0-9_-]", fullmatch=True))
def test_labels_of_the_safe_alphabet_pass_unless_they_hold_two_dots(label: str) -> None:
    if ".." in label:
        with pytest.raises(ValueError):
            validators.safe_label(label)
    else:
        assert validators.safe_label(label) == label


@given(st.lists(st.sampled_from(["a", "b", ".", "..", "", "c\\d", "e\x00"]), max_size=5))
def test_a_path_that_passes_stays_inside_its_folder(parts: list[str]) -> None:
    path = "/".join(parts)
    try:
        validators.safe_relative_path(path)
    except ValueError:
        return
    pure = PurePosixPath(path)
    assert not pure.is_absolute() and pure.parts and ".." not in pure.parts
    assert "\\" not in path and "\x00" not in path


@given(st.lists(st.sampled_from(["a", "b", "a/b", "a/./b", "a//b", "b/", "c/d/e"]), max_size=4))
def test_distinct_paths_name_distinct_files_none_a_folder_of_another(paths: list[str]) -> None:
    try:
        validators.distinct_paths(paths)
    except ValueError:
        normalized = [PurePosixPath(p).as_posix() for p in paths]
        clash = len(set(normalized)) < len(normalized) or any(
            b.startswith(f"{a}/") for a in normalized for b in normalized
        )
        assert clash
        return
    normalized = [PurePosixPath(p).as_posix() for p in paths]
    assert len(set(normalized)) == len(normalized)
    assert not any(b.startswith(f"{a}/") for a in normalized for b in normalized)


@settings(max_examples=200)
@given(st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([1e9, -1e9, 1e9 + 1]))
def test_rewards_are_finite_and_bounded(reward: float) -> None:
    ok = math.isfinite(reward) and abs(reward) <= validators.REWARD_BOUND
    if ok:
        assert validators.finite_reward(reward, "candidate c01") == reward
    else:
        with pytest.raises(ValueError, match="candidate c01: reward must be a finite number"):
            validators.finite_reward(reward, "candidate c01")


@given(st.lists(st.floats(-1e9, 1e9), min_size=1, max_size=64))
def test_a_group_of_bounded_rewards_has_a_finite_mean(rewards: list[float]) -> None:
    assert math.isfinite(sum(rewards) / len(rewards))


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("/app", True),
        ("/work/repo", True),
        ("/grader", True),
        ("/", False),
        ("/grade", False),
        ("/grade/sub", False),
        ("app", False),
        ("/app/", False),
        ("/app/../grade", False),
        ("//grade", False),
        ("/app/./x", False),
        ("/a\x00b", False),
    ],
)
def test_box_workdir(path: str, ok: bool) -> None:
    raw = {**row([1, 0]).model_dump(mode="json"), "box_workdir": path}
    if ok:
        assert GroupGradeData.model_validate(raw).box_workdir == path
    else:
        with pytest.raises(ValueError, match=r"box_workdir\n.*box_workdir '"):
            GroupGradeData.model_validate(raw)


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"A=B": "x"}, "box_env name 'A=B' must match"),
        ({"1X": "x"}, "box_env name '1X' must match"),
        ({"": "x"}, "box_env name '' must match"),
        ({"OK": "a\x00b"}, "box_env OK must not hold a NUL byte"),
    ],
)
def test_box_env_names_and_values(env: dict[str, str], problem: str) -> None:
    raw = {**row([1, 0]).model_dump(mode="json"), "box_env": env}
    with pytest.raises(ValueError, match=problem):
        GroupGradeData.model_validate(raw)
    assert GroupGradeData.model_validate({**raw, "box_env": {"_OK9": "a=b"}}).box_env


def test_the_hidden_test_command_holds_no_nul_byte() -> None:
    raw = row([1, 0]).model_dump(mode="json")
    command = "bash run_tests.sh"
    assert GroupGradeData.model_validate({**raw, "hidden_test_command": command})
    with pytest.raises(ValueError, match="hidden_test_command must not hold a NUL byte"):
        GroupGradeData.model_validate({**raw, "hidden_test_command": command + "\x00; rm -rf /"})


def test_no_label_can_take_a_name_the_grader_box_uses() -> None:
    data = row([1, 0]).model_copy(update={"privileged": {"tests/t.py": "x"}})
    top = {path.split("/")[1] for path in grader_files(data, "grade")} - set(data.labels)
    assert top | {VERDICT_FILE} == RESERVED_LABELS
