"""Pure checks for what enters at the door (every row, however it arrives, and every
verdict): text UTF-8 can hold, safe labels and paths, finite numbers, environment names.
Each check raises ValueError saying what is wrong; the row and verdict models apply them."""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Annotated, Any

from pydantic import AfterValidator

_SURROGATE = re.compile("[\ud800-\udfff]")
LABEL = re.compile(r"[A-Za-z0-9_.-]{1,64}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
REWARD_BOUND = 1e9
"""Largest reward magnitude accepted: a group's mean of such rewards cannot overflow."""


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (which UTF-8 cannot hold) written as its escape, the
    six characters ``\\ud800``; text without one comes back as it is."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def escape_tree(value: Any) -> Any:
    """``value`` with ``escape_surrogates`` applied to every string in it, dict keys included,
    through dicts, lists and tuples (tuples come back as lists)."""
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, dict):
        return {escape_tree(k): escape_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [escape_tree(v) for v in value]
    return value


def _surrogate_problem(found: re.Match[str]) -> str:
    return (
        f"text holds a lone surrogate (U+{ord(found.group()):04X} at character "
        f"{found.start()}), which UTF-8 cannot hold; write the text without it"
    )


def utf8_text(text: str) -> str:
    """``text`` if UTF-8 can hold it; a lone surrogate raises ValueError."""
    if not text.isascii() and (found := _SURROGATE.search(text)) is not None:
        raise ValueError(_surrogate_problem(found))
    return text


def unencodable(value: Any, where: str = "") -> str | None:
    """Where in ``value`` (through dicts and lists, dotted as pydantic names fields, e.g.
    ``candidates.1.evidence.0.quote``) text holds a lone surrogate, and what is wrong; None
    when UTF-8 can hold all of it."""
    if isinstance(value, str):
        found = None if value.isascii() else _SURROGATE.search(value)
        return None if found is None else f"{where or '(top level)'}: {_surrogate_problem(found)}"
    if isinstance(value, dict):
        children = []
        for key, child in value.items():
            path = f"{where}.{escape_tree(key)}" if where else str(escape_tree(key))
            if (problem := unencodable(key, f"{path} (a name)")) is not None:
                return problem
            children.append((path, child))
    elif isinstance(value, list | tuple):
        children = [(f"{where}.{i}" if where else str(i), v) for i, v in enumerate(value)]
    else:
        return None
    for path, child in children:
        if (problem := unencodable(child, path)) is not None:
            return problem
    return None


Utf8Text = Annotated[str, AfterValidator(utf8_text)]
"""A string that must already be encodable: the grader's own text is rejected, not escaped."""


def safe_label(label: str, reserved: frozenset[str] = frozenset()) -> str:
    """``label`` if it can name a folder: ``LABEL`` characters, not ``.``, no ``..``, not one
    of ``reserved``."""
    if LABEL.fullmatch(label) is None or label == "." or ".." in label:
        raise ValueError(
            f"label {label!r} must match {LABEL.pattern}, be other than '.' and not hold '..'"
        )
    if label in reserved:
        raise ValueError(f"label {label!r} is reserved: the grader box has its own {label}")
    return label


def safe_relative_path(path: str) -> str:
    """``path`` if it is a relative POSIX path that stays inside its folder: not empty or
    absolute, no ``..`` part, no NUL byte, no backslash."""
    if (
        not PurePosixPath(path).parts
        or path.startswith("/")
        or ".." in PurePosixPath(path).parts
        or "\x00" in path
        or "\\" in path
    ):
        raise ValueError(
            f"path {path!r} must be a relative POSIX path inside its folder: not empty, no "
            "leading '/', no '..' part, no NUL byte or backslash"
        )
    return path


def distinct_paths(paths: Iterable[str]) -> None:
    """Raise ValueError when two safe relative paths name one file once normalized (``a/./b``,
    ``a//b``, ``a/b/``), or when one is a folder of another."""
    seen: dict[str, str] = {}
    for path in paths:
        key = PurePosixPath(path).as_posix()
        if key in seen:
            raise ValueError(f"path {path!r} is the same file as {seen[key]!r}")
        seen[key] = path
    for key, path in seen.items():
        for folder in PurePosixPath(key).parents[:-1]:
            if (other := seen.get(folder.as_posix())) is not None:
                raise ValueError(f"path {other!r} is also a folder of {path!r}")


def finite_reward(reward: float, who: str) -> float:
    """``reward`` if it is a finite number of magnitude at most ``REWARD_BOUND``; the error
    names ``who`` (a candidate or a trace)."""
    if not math.isfinite(reward) or abs(reward) > REWARD_BOUND:
        raise ValueError(
            f"{who}: reward must be a finite number with |reward| <= {REWARD_BOUND:g}, "
            f"got {reward!r}"
        )
    return reward


def no_nul(text: str, field: str) -> str:
    if "\x00" in text:
        raise ValueError(f"{field} must not hold a NUL byte: {text!r}")
    return text


def box_workdir(path: str, reserved: str) -> str:
    """``path`` if it is an absolute, normalized POSIX path other than ``/``, outside
    ``reserved`` (and not ``reserved`` itself)."""
    if (
        not path.startswith("/")
        or path.startswith("//")
        or posixpath.normpath(path) != path
        or "\x00" in path
    ):
        raise ValueError(f"box_workdir {path!r} must be an absolute, normalized POSIX path")
    if path == "/" or path == reserved or path.startswith(f"{reserved}/"):
        raise ValueError(f"box_workdir {path!r} must be neither '/' nor {reserved} or below it")
    return path


def box_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` if every name is an environment variable name and no value holds a NUL."""
    for name, value in env.items():
        if ENV_NAME.fullmatch(name) is None:
            raise ValueError(f"box_env name {name!r} must match {ENV_NAME.pattern}")
        no_nul(value, f"box_env {name}")
    return env
