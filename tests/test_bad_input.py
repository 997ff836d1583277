"""Every user mistake gives the file, the line and what is wrong, never a traceback: rows
loading (also under the real ``vf-eval``), the demo, and the tools."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
import verifiers.v1 as vf
from verifiers.v1.utils.trace_store import write_episode

from group_grade import demo, report
from group_grade.sources import InputError
from group_grade.taskset import OPEN_NETWORK, GroupGradeTaskset, GroupGradeTasksetConfig
from tests.rows import row
from tests.traces import Turn, make_trace
from tools import export_dataset, inspect_grade, traces_to_rows

ROOT = Path(__file__).resolve().parents[1]
GOOD = row([1, 0], group_id="good").model_dump_json()

BAD_ROWS: dict[str, tuple[str | bytes | None, str]] = {
    # name: (file content, None: no file; the message after the file's path)
    "missing": (None, ": no such file"),
    "empty": ("", ": the file is empty (no rows)"),
    "blank lines only": ("\n  \n", ": the file is empty (no rows)"),
    "malformed line": (
        GOOD + '\n{"group_id": "g", "candidates": [\n',
        ":2: not valid JSON: Expecting value (column 34); a JSON Lines file holds one whole "
        "row per line",
    ),
    "object that is not a row": (
        GOOD + '\n\n{"name": "a row?"}\n',
        ":3: not a grading row: group_id: Field required; candidates: Field required",
    ),
    "not an object": ("[1, 2]\n", ":1: a row is a JSON object, this is a list"),
    "bad value": (
        json.dumps({"group_id": "g", "candidates": [{"label": "c01", "reward": "high"}]}),
        ":1: not a grading row: candidates.0.reward: Input should be a valid number, unable "
        "to parse string as a number (got 'high')",
    ),
    "bad label": (
        json.dumps({"group_id": "g", "candidates": [{"label": "../x", "reward": 1}]}),
        ":1: not a grading row: candidates.0.label: ",
    ),
    "no candidates": (
        json.dumps({"group_id": "g", "candidates": []}),
        ":1: not a grading row: a group needs at least one candidate",
    ),
    "not UTF-8": (GOOD.encode() + b"\n\xff\xfe\n", ":2: not UTF-8 text (byte 1 of the line)"),
}
CLI_CASES = ["missing", "malformed line", "object that is not a row", "empty"]


def write(tmp_path: Path, name: str, suffix: str = ".jsonl") -> tuple[Path, str]:
    content, message = BAD_ROWS[name]
    path = tmp_path / f"rows{suffix}"
    if isinstance(content, str):
        path.write_text(content)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    return path, f"{path}{message}"


def load(source: Path | str) -> list:
    return list(GroupGradeTaskset(GroupGradeTasksetConfig(source=str(source))))


@pytest.mark.parametrize("name", sorted(BAD_ROWS))
def test_a_bad_rows_file_says_where_and_what(tmp_path: Path, name: str) -> None:
    path, message = write(tmp_path, name)
    with pytest.raises(InputError) as raised:
        load(path)
    assert str(raised.value).startswith(message), str(raised.value)
    assert "\n" not in str(raised.value) and "errors.pydantic.dev" not in str(raised.value)
    assert isinstance(raised.value, ValueError)  # callers catch it as a ValueError


def test_a_json_array_of_rows_names_the_line_of_the_bad_row(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    good = json.loads(GOOD)
    path.write_text(json.dumps([good, {"group_id": "x"}], indent=2))
    starts = [n for n, text in enumerate(path.read_text().splitlines(), 1) if text == "  {"]
    line = starts[1]
    with pytest.raises(InputError, match=rf"^{path}:{line}: not a grading row: candidates: "):
        load(path)
    path.write_text(json.dumps(good, indent=2))  # one row, pretty-printed
    (task,) = load(path)
    assert task.data.group_id == "good"


def test_other_sources_say_what_is_wrong(tmp_path: Path) -> None:
    csv = tmp_path / "rows.csv"
    csv.write_text("a,b\n")
    with pytest.raises(InputError, match=r"unknown kind of rows file '.csv'; a rows file is"):
        load(csv)
    with pytest.raises(InputError, match=r"^\./nowhere/rows: no such file$"):
        load("./nowhere/rows")
    broken = tmp_path / "rows.parquet"
    broken.write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match=rf"^{broken}: cannot be read as a parquet file: "):
        load(broken)
    table = tmp_path / "table.parquet"
    bad = json.dumps({"group_id": "g", "candidates": [{"label": "c01", "reward": "x"}]})
    datasets.Dataset.from_dict({"row": [GOOD, bad]}).to_parquet(str(table))
    with pytest.raises(InputError, match=rf"^{table}: row 2: not a grading row: candidates.0"):
        load(table)
    outside = tmp_path / "outside.jsonl"
    escaped = row([1, 0]).candidates[0].model_copy(update={"checkpoint": "local:/etc"})
    outside.write_text(
        row([1, 0]).model_copy(update={"candidates": [escaped]}).model_dump_json() + "\n"
    )
    with pytest.raises(InputError, match=rf"^{outside}:1: candidate c01: checkpoint 'local:/etc'"):
        load(outside)


def test_an_uncaught_input_error_ends_a_program_with_its_message_alone(tmp_path: Path) -> None:
    path, message = write(tmp_path, "malformed line")
    code = "from group_grade.rows import load_rows\nlist(load_rows(__import__('sys').argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout, done.stderr) == (1, "", message + "\n")


@pytest.mark.parametrize("name", CLI_CASES)
def test_the_demo_refuses_a_bad_rows_file_with_exit_code_2(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path, message = write(tmp_path, name)
    folder = tmp_path / "runs" / "demo"
    assert demo.main(["--source", str(path), "--output-dir", str(folder)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"cannot grade: {message}\n" and captured.out == ""
    assert not folder.exists()


def test_the_demo_command_line_prints_no_traceback(tmp_path: Path) -> None:
    path, message = write(tmp_path, "object that is not a row")
    done = subprocess.run(
        [sys.executable, "-m", "group_grade.demo", "--source", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"cannot grade: {message}\n")
    assert not (tmp_path / "runs").exists()
    done = subprocess.run(
        [sys.executable, "-m", "group_grade.demo", "--limit", "0"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and "--limit: must be at least 1, not 0" in done.stderr


@pytest.mark.parametrize("name", CLI_CASES)
def test_vf_eval_shows_the_message_not_a_traceback(tmp_path: Path, name: str) -> None:
    path, message = write(tmp_path, name)
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "vf-eval"),
            "group-grade",
            *("-m", "reference", "--env.taskset.source", str(path)),
            *("--env.agent.runtime.type", "subprocess", "--no-push", "-o", str(tmp_path / "out")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output  # verifiers' exit code for a usage error
    assert message in output and "Traceback" not in output, output
    # The env is built before the rows are read: the open-network warning shows, too.
    assert OPEN_NETWORK in done.stderr


# -- the tools ---------------------------------------------------------------------------


TOOLS = {
    "inspect_grade": lambda path, out: inspect_grade.main([str(path)]),
    "report": lambda path, out: report.main([str(path), "-o", str(out / "report.html")]),
    "export_dataset": lambda path, out: export_dataset.main(
        [str(path), "-o", str(out / "x.jsonl")]
    ),
    "traces_to_rows": lambda path, out: traces_to_rows.main(
        [str(path), "-o", str(out / "r.jsonl")]
    ),
}


def bad_traces(tmp_path: Path, name: str) -> tuple[Path, str]:
    run = tmp_path / "run"
    run.mkdir()
    traces = run / "traces.jsonl"
    if name == "missing file":
        return (
            tmp_path / "gone" / "traces.jsonl",
            f"{tmp_path / 'gone' / 'traces.jsonl'}: no such file or folder",
        )
    if name == "not a run folder":
        return run, f"{run}: no traces.jsonl in this folder (not a run directory)"
    if name == "malformed line":
        trace = make_trace([Turn("I fixed it.")], reward=1.0)
        write_episode(run, vf.Episode(task=trace.task, traces=[trace], ok=True))
        with traces.open("a") as f:
            f.write('{"id": \n')
        return traces, f"{traces}:2: not valid JSON: "
    traces.write_text('{"id": "e1", "traces": [{"nodes": 3}]}\n')
    return traces, f"{traces}:1: not an episode: "


@pytest.mark.parametrize("tool", sorted(TOOLS))
@pytest.mark.parametrize(
    "name", ["missing file", "not a run folder", "malformed line", "bad episode"]
)
def test_the_tools_refuse_a_bad_traces_file_with_exit_code_2(
    tmp_path: Path, tool: str, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path, message = bad_traces(tmp_path, name)
    assert TOOLS[tool](path, tmp_path) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: {message}"), captured.err
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert not (tmp_path / "report.html").exists() and not (tmp_path / "r.jsonl").exists()


def test_traces_to_rows_writes_nothing_and_says_why_when_no_group_qualifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for reward in (1.0, 1.0):  # one task, equal rewards: not due in rewards mode
        trace = make_trace([Turn("I fixed it.")], reward=reward)
        write_episode(run, vf.Episode(task=trace.task, traces=[trace], ok=True))
    output = tmp_path / "rows.jsonl"
    assert traces_to_rows.main([str(run), "-o", str(output)]) == 1
    captured = capsys.readouterr()
    assert "wrote no rows: 1 groups not due for grading (rewards mode grades only groups " in (
        captured.err
    )
    assert "--mode advantages grades every group of two or more" in captured.err
    assert not output.exists()
    assert traces_to_rows.main([str(run), "-o", str(output), "--mode", "advantages"]) == 0
    (minted,) = output.read_text().splitlines()
    assert json.loads(minted)["group_id"] == "run/k"  # the run's folder, the task's key


def test_inspect_grade_names_a_group_that_is_not_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    trace = make_trace([Turn("I fixed it.")], reward=1.0)
    write_episode(run, vf.Episode(task=trace.task, traces=[trace], ok=True))
    assert inspect_grade.main([str(run), "--group", "nope"]) == 2
    assert capsys.readouterr().err == f"error: {run}: no grade trace of group 'nope' found\n"
    assert inspect_grade.main([str(run), "--list"]) == 2
    assert capsys.readouterr().err == f"error: {run}: no grade trace found\n"
    assert report.main([str(run)]) == 2
    assert capsys.readouterr().err == f"error: {run}: holds no grade traces\n"


@pytest.mark.parametrize(
    "main",
    [demo.main, report.main, inspect_grade.main, traces_to_rows.main, export_dataset.main],
    ids=["demo", "report", "inspect_grade", "traces_to_rows", "export_dataset"],
)
def test_help_texts_are_plain_text(main, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "``" not in text and ":class:" not in text and "::" not in text, text
    # every option says what it is for
    undocumented = re.findall(r"^  (--[\w-]+(?: [A-Z_{},a-z]+)?)\n(?!  {10})", text, re.M)
    assert not undocumented, undocumented
