"""Row loading: grading rows from a rows file or dataset, their ``local:`` checkpoints
resolved and confined, and where the labeled groups shipped with the package live."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from group_grade.data import GroupGradeData, Mode
from group_grade.sources import InputError, describe_validation_error, read_records, record_kind


def _drop_nulls(value: Any) -> Any:
    """Arrow unifies the keys of a mapping column across rows and fills the missing ones
    with null; a null value in a row's mapping means the key is absent."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def resolve_checkpoint(
    checkpoint: str | None, label: str, base_dir: Path | None, roots: Sequence[Path] = ()
) -> str | None:
    """A ``local:`` checkpoint a rows file names, as an absolute path with every symlink
    resolved: a relative path is relative to the rows file's folder ``base_dir``, and the
    result must lie below that folder or below one of ``roots``. Other schemes are kept."""
    if checkpoint is None or not checkpoint.startswith("local:"):
        return checkpoint
    where = f"candidate {label}: checkpoint {checkpoint!r}"
    path = Path(checkpoint.removeprefix("local:"))
    if "\x00" in str(path):
        raise ValueError(f"{where} holds a NUL byte")
    if not path.is_absolute():
        if base_dir is None:
            raise ValueError(f"{where} is relative, and the rows come from no folder")
        path = base_dir / path
    resolved = path.resolve()
    folders = [folder.resolve() for folder in (*([base_dir] if base_dir else []), *roots)]
    if not any(resolved != f and resolved.is_relative_to(f) for f in folders):
        raise ValueError(
            f"{where} is {resolved}, outside the rows file's folder and every checkpoint root "
            f"({', '.join(map(str, folders)) or 'none'}); add its folder to the taskset's "
            "checkpoint_roots to allow it"
        )
    return f"local:{resolved}"


def row_from_record(
    record: dict[str, Any],
    mode: Mode | None = None,
    base_dir: Path | None = None,
    roots: Sequence[Path] = (),
) -> GroupGradeData:
    """A dataset record as a row: a ``row`` column holding the row's JSON, or the row's
    fields as columns. Its ``local:`` checkpoints are resolved (``resolve_checkpoint``)."""
    raw = json.loads(record["row"]) if isinstance(record.get("row"), str) else record
    data = _drop_nulls(raw)
    if mode is not None:
        data["mode"] = mode
    row = GroupGradeData.model_validate(data)
    candidates = [
        c.model_copy(
            update={"checkpoint": resolve_checkpoint(c.checkpoint, c.label, base_dir, roots)}
        )
        for c in row.candidates
    ]
    return row.model_copy(update={"candidates": candidates})


def shipped_groups() -> Path:
    return Path(__file__).resolve().parent / "groups" / "groups.jsonl"


def load_rows(
    source: str,
    split: str = "train",
    mode: Mode | None = None,
    roots: Sequence[Path] = (),
) -> Iterator[GroupGradeData]:
    """The rows of ``source`` (``sources.read_records``), each validated; a record that is
    no grading row raises ``InputError`` naming its file and line (or row) and what is
    wrong with it."""
    base_dir = Path(source).parent if Path(source).is_file() else None
    for where, record in read_records(source, split):
        if (kind := record_kind(record)) is not None:
            raise InputError(f"{where}: a row is a JSON object, this is {kind}")
        try:
            yield row_from_record(record, mode, base_dir, roots)
        except ValidationError as e:
            raise InputError(
                f"{where}: not a grading row: {describe_validation_error(e)}"
            ) from None
        except json.JSONDecodeError as e:
            raise InputError(f"{where}: its `row` column is not valid JSON: {e.msg}") from None
        except (ValueError, TypeError) as e:
            raise InputError(f"{where}: {e}") from None
