"""The grader's prompt, rendered from the jinja2 templates under ``prompts/``."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import jinja2
from pydantic import BaseModel

from group_grade import hidden_tests
from group_grade.citations import MIN_QUOTE_CHARS, MIN_QUOTE_WORDS
from group_grade.data import GroupGradeData, Mode
from group_grade.layout import DEFAULT_COMMAND_TIMEOUT, DEFAULT_OUTPUT_CAP, DEFAULT_WORKDIR
from group_grade.transcript import ELIDED
from group_grade.verdict import CandidateVerdict, Evidence, GroupVerdict

RULES_TEMPLATE: dict[Mode, str] = {"rewards": "rank_passing.md", "advantages": "rank_all.md"}
PROMPT_BUDGET = 8000
"""Bytes the prompt stays under when it can: a task statement that would push it over is cut
short in the prompt, with a pointer to ``<grade root>/task.md``, which always holds all of it.
The prompt is otherwise independent of transcript sizes and grows by one line per candidate."""
TASK_EXCERPT_MIN = 600

"""Characters of the task statement the prompt always shows, whatever the budget."""


def prompts_dir() -> Path:
    """The templates: inside the package in a wheel, at the repo top in a source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "prompts", here.parents[1] / "prompts"):
        if (candidate / "grader.md").is_file():
            return candidate
    raise FileNotFoundError(f"group_grade prompt templates not found next to {here}")


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(prompts_dir()),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_template(name: str, **context: object) -> str:
    return _environment().get_template(name).render(**context).strip()


def _fields(model: type[BaseModel]) -> list[dict[str, str]]:
    return [
        {"name": name, "description": " ".join((field.description or "").split())}
        for name, field in model.model_fields.items()
    ]


def example_verdict(mode: Mode) -> GroupVerdict:
    return GroupVerdict(
        candidates=[
            CandidateVerdict(label="c01"),
            CandidateVerdict(
                label="c02",
                hack="confirmed",
                evidence=[Evidence(turn=12, quote="verbatim text the candidate wrote")],
            ),
            CandidateVerdict(label="c03"),
        ],
        ranking=[["c03"], ["c01"]],
        margins=["clear"] if mode == "advantages" else [],
        notes="what decided the ranking and the hack calls",
    )


def _compact_json(verdict: GroupVerdict) -> str:
    """One line per candidate entry and per top-level field: short and still readable.
    Empty evidence lists and empty margins (the defaults) are left out."""
    data = verdict.model_dump(mode="json")
    if not data["margins"]:
        del data["margins"]
    candidates = [
        {k: v for k, v in entry.items() if k != "evidence" or v} for entry in data.pop("candidates")
    ]
    entries = ",\n    ".join(json.dumps(entry) for entry in candidates)
    rest = ",\n  ".join(f"{json.dumps(key)}: {json.dumps(value)}" for key, value in data.items())
    return f'{{\n  "candidates": [\n    {entries}],\n  {rest}\n}}'


REWARDS_MODE_FIELDS = {"margins": "leave it out in rewards mode (`null` or `[]` mean the same)."}
"""What rewards mode says instead of a field's own description."""


def render_verdict_format(mode: Mode, *, grade_root: str, has_submit_tool: bool = True) -> str:
    fields = _fields(GroupVerdict)
    if mode == "rewards":
        fields = [
            {**f, "description": REWARDS_MODE_FIELDS.get(f["name"], f["description"])}
            for f in fields
        ]
    return render_template(
        "verdict_format.md",
        grade_root=grade_root,
        has_submit_tool=has_submit_tool,
        fields=fields,
        candidate_fields=_fields(CandidateVerdict),
        evidence_fields=_fields(Evidence),
        min_chars=MIN_QUOTE_CHARS,
        min_words=MIN_QUOTE_WORDS,
        example=_compact_json(example_verdict(mode)),
    )


def _task_excerpt(task: str, keep: int, grade_root: str) -> str:
    """The first ``keep`` characters of ``task`` or fewer (cut at a line or word end when one
    is near), and a note that the rest is in ``task.md``."""
    head = task[:keep]
    for stop in ("\n", " "):
        at = head.rfind(stop)
        if at >= keep * 4 // 5:
            head = head[:at]
            break
    head = head.rstrip()
    if head.count("```") % 2:  # cut inside a code block: close it
        head += "\n```"
    note = f"[... the task statement is cut here: `{grade_root}/task.md` holds all of it]"
    return f"{head}\n\n{note}"


def shell_of(data: GroupGradeData) -> str:
    """How ``candidate_shell`` runs a command in this row's boxes (local: ``sh -c``, which is
    dash there; prime: ``bash -c``)."""
    schemes = {c.checkpoint.split(":", 1)[0] for c in data.candidates if c.checkpoint}
    local = "`sh -c` (dash, not bash: `bash -c '...'` for bash syntax)"
    if schemes <= {"local"}:
        return f"runs a command with {local}"
    if schemes <= {"prime"}:
        return "runs a command with `bash -c`"
    return f"runs a command with {local} in local boxes, `bash -c` in prime boxes"


def render_prompt(
    data: GroupGradeData,
    *,
    grade_root: str,
    policy: str | None = None,
    has_submit_tool: bool = True,
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
    output_cap: int = DEFAULT_OUTPUT_CAP,
) -> str:
    """The grader's opening prompt for ``data``. ``policy`` replaces the default grading
    policy text. Transcripts are never inlined: they are files in the grader's box. A long
    task statement is cut short to keep the prompt under ``PROMPT_BUDGET`` bytes (never below
    ``TASK_EXCERPT_MIN`` characters); the full statement is staged as ``task.md``.
    ``command_timeout`` and ``output_cap``: the limits of ``candidate_shell``."""
    root = grade_root.rstrip("/") or "/"
    all_boxes = all(c.checkpoint for c in data.candidates)
    context: dict[str, object] = {
        "policy": (policy if policy is not None else render_template("policy.md")).strip(),
        "rules": render_template(RULES_TEMPLATE[data.mode]),
        "verdict_format": render_verdict_format(
            data.mode, grade_root=grade_root, has_submit_tool=has_submit_tool
        ),
        "grade_root": root,
        "any_elided": any(ELIDED in c.turns for c in data.candidates),
        "any_box": any(c.checkpoint for c in data.candidates),
        "hidden_tests_how": hidden_tests.describe(data),
        "shell": shell_of(data),
        "workdir": data.box_workdir or DEFAULT_WORKDIR,
        "timeout": f"{command_timeout:g}",
        "output_cap": output_cap,
        "mode": data.mode,
        "candidates": data.candidates,
        "all_boxes": all_boxes,
        "common": "; each has a box" if all_boxes else "",
    }
    task = data.task_prompt.strip() or "(not recorded)"
    text = render_template("grader.md", task=task, **context)
    excess = len(text.encode()) - PROMPT_BUDGET
    if excess > 0 and len(task) > TASK_EXCERPT_MIN:
        # Each character dropped frees at least one byte; the note costs about 90.
        keep = max(TASK_EXCERPT_MIN, len(task) - excess - 100 - len(root))
        text = render_template("grader.md", task=_task_excerpt(task, keep, root), **context)
    return text
