"""Where things live: the grader box's layout under its grade root and a candidate box's
grading area. Plain constants, so the pure core (rows, prompts, staging) names these places
without importing the box package."""

from __future__ import annotations

# -- the grader box, under its grade root ----------------------------------------------------

TASK_FILE = "task.md"
"""The task the candidates were given."""
PRIVILEGED_DIR = "privileged"
"""The privileged materials (hidden tests, gold patch)."""
VERDICT_FILE = "verdict.json"
"""The verdict, as ``submit_verdict`` accepted it or as the grader wrote it."""
MANIFEST_FILE = "group.json"
"""The group's facts for a grader program (``manifest.GroupManifest``)."""
RESERVED_NAMES = frozenset({TASK_FILE, MANIFEST_FILE, PRIVILEGED_DIR, VERDICT_FILE})
"""What the grader box holds beside the candidate folders: no label may be one of these."""

# -- a candidate box ---------------------------------------------------------------------------

GRADE_MOUNT = "/grade"
"""Where a local box's grading area is mounted; no box workdir may lie there."""
PRIVILEGED_SUBDIR = "privileged"
"""The hidden tests and other privileged materials, in a box's grading area."""
RESULTS_SUBDIR = "results"
"""Where a hidden-test run writes its result (``junit.xml``), in a box's grading area."""
DEFAULT_WORKDIR = "/app"
"""Where a box's commands run when the row names no ``box_workdir``."""
DEFAULT_COMMAND_TIMEOUT = 120.0
"""Seconds a ``candidate_shell`` command may run, unless configured otherwise."""
DEFAULT_OUTPUT_CAP = 12_000
"""Characters of a ``candidate_shell`` answer's output, unless configured otherwise."""
