"""group-grade: grade a whole group of policy attempts and turn the verdict into advantages."""

from group_grade.harness import GraderHarness
from group_grade.taskset import GroupGradeEnv, GroupGradeTaskset

__all__ = ["GraderHarness", "GroupGradeEnv", "GroupGradeTaskset"]
