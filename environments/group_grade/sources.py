"""Reading a rows source (``--env.taskset.source``) record by record, with errors that say
where and what: ``rows.jsonl:3: not valid JSON: ...``.

JSON Lines and JSON files are read here, line by line with ``json``, so an error names its
line; parquet files and Hugging Face datasets go through ``datasets``, and an error names the
row's number.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

JSON_SUFFIXES = (".jsonl", ".json")
PARQUET_SUFFIXES = (".parquet",)
MAX_PROBLEMS = 5
"""Validation errors listed per row; the rest are counted."""


class InputError(ValueError, SystemExit):
    """An input that cannot be used (a rows source, a traces file); the message names the
    file, the line (or row) and what is wrong.

    It is a ``ValueError``: catch it as one. Left uncaught (``vf-eval``, which loads the
    rows before it runs anything, catches nothing), it ends the program like a command-line
    usage error, with its message and no traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.code = message


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return type(value).__name__


def _shown(value: object, cap: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= cap else text[: cap - 3] + "..."


def describe_validation_error(error: ValidationError) -> str:
    """A pydantic error as ``field.path: what`` items, one line, without pydantic's links."""
    items = []
    problems = error.errors(include_url=False)
    for problem in problems[:MAX_PROBLEMS]:
        where = ".".join(str(part) for part in problem["loc"])
        message = problem["msg"].removeprefix("Value error, ")
        value = problem.get("input")
        if problem["type"] != "missing" and isinstance(value, str | int | float | bool):
            message += f" (got {_shown(value)})"
        items.append(f"{where}: {message}" if where else message)
    if len(problems) > MAX_PROBLEMS:
        items.append(f"and {len(problems) - MAX_PROBLEMS} more problems")
    return "; ".join(items)


def _decoded(path: Path, number: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"{path}:{number}: not UTF-8 text (byte {e.start + 1} of the line)"
        ) from None


def _json_lines(path: Path, data: bytes) -> Iterator[tuple[str, Any]]:
    for number, raw in enumerate(data.splitlines(), start=1):
        text = _decoded(path, number, raw)
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(
                f"{path}:{number}: not valid JSON: {e.msg} (column {e.colno}); a JSON Lines "
                "file holds one whole row per line"
            ) from None
        yield f"{path}:{number}", value


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _json_array(path: Path, text: str) -> Iterator[tuple[str, Any]]:
    """The items of a JSON array that is known to parse, each located by its first line."""
    decoder = json.JSONDecoder()
    at = _skip_space(text, text.index("[") + 1)
    line, counted = 1, 0
    while at < len(text) and text[at] != "]":
        line += text.count("\n", counted, at)
        counted = at
        value, at = decoder.raw_decode(text, at)
        yield f"{path}:{line}", value
        at = _skip_space(text, at)
        if at < len(text) and text[at] == ",":
            at = _skip_space(text, at + 1)


def _json_file(path: Path) -> Iterator[tuple[str, Any]]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: a directory, not a rows file") from None
    except OSError as e:
        raise InputError(f"{path}: cannot be read: {e.strerror or e}") from None
    if not data.strip():
        raise InputError(f"{path}: the file is empty (no rows)")
    if path.suffix.lower() == ".json":
        text = _decoded(path, 1, data)
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None  # not one JSON document: JSON Lines, as `datasets` reads it too
        if isinstance(whole, list):
            yield from _json_array(path, text)
            return
        if isinstance(whole, dict):
            yield f"{path}:1", whole
            return
    yield from _json_lines(path, data)


def _root_cause(error: BaseException) -> str:
    while error.__cause__ is not None or error.__context__ is not None:
        error = error.__cause__ or error.__context__  # type: ignore[assignment]
    return f"{type(error).__name__}: {error}".strip()


def _dataset(source: str, split: str) -> Iterator[tuple[str, Any]]:
    import datasets

    path = Path(source)
    suffix = path.suffix.lower()
    try:
        if suffix in PARQUET_SUFFIXES:
            what = "a parquet file"
            dataset = datasets.load_dataset("parquet", data_files=source, split="train")
        else:
            what = "a Hugging Face dataset"
            dataset = datasets.load_dataset(source, split=split)
    except Exception as e:
        raise InputError(f"{source}: cannot be read as {what}: {_root_cause(e)}") from None
    for number, record in enumerate(dataset, start=1):
        yield f"{source}: row {number}", record


def _dataset_name(source: str) -> bool:
    """Whether a source that names no local file reads as a Hugging Face dataset path
    (``org/name``: no suffix, not a local-looking path)."""
    return not Path(source).suffix and not source.startswith(("/", ".", "~"))


def _missing(source: str) -> Iterator[tuple[str, Any]]:
    raise InputError(f"{source}: no such file")
    yield  # a generator, like the other readers


def read_records(source: str, split: str = "train") -> Iterator[tuple[str, Any]]:
    """``(where, record)`` for every record of ``source``: a ``.jsonl``/``.json`` file (a
    JSON array of rows, one row object, or JSON Lines), a ``.parquet`` file, or a Hugging
    Face dataset path. ``where`` is ``file:line`` (JSON) or ``source: row N``. Raises
    ``InputError`` for a source that cannot be read or holds no records."""
    path = Path(source)
    suffix = path.suffix.lower()
    if suffix in JSON_SUFFIXES:
        records = _json_file(path)
    elif path.is_dir() or (not path.exists() and _dataset_name(source)):
        records = _dataset(source, split)
    elif suffix in PARQUET_SUFFIXES or not path.exists():
        records = _dataset(source, split) if path.is_file() else _missing(source)
    else:
        raise InputError(
            f"{source}: unknown kind of rows file {suffix or '(no suffix)'!r}; a rows file is "
            ".jsonl, .json or .parquet"
        )
    empty = True
    for where, record in records:
        empty = False
        yield where, record
    if empty:
        raise InputError(f"{source}: holds no rows")


def record_kind(record: object) -> str | None:
    """None for a JSON object; else what the record is instead (for the error message)."""
    return None if isinstance(record, dict) else _kind(record)
