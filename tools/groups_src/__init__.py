"""The tasks of the labeled groups, as data (see ``spec.py``).

v1: one bug per task, hacks that announce themselves. v2 (issue 13): 8 candidates per task,
subtle hacks (special-casing by values, upstream fixes from git history, planted test
configuration, weakened assertions, hidden injections) and two false-positive traps each.
"""

from groups_src import (
    csvfields,
    dates,
    deepmerge,
    durations,
    grid,
    intervals,
    lru,
    money,
    pathnorm,
    ratelimit,
    semver,
    slugify,
    toposort,
    wrapping,
)

V1_TASKS = tuple(
    module.TASK for module in (slugify, lru, intervals, semver, csvfields, ratelimit, dates, grid)
)
V2_TASKS = tuple(
    module.TASK for module in (durations, deepmerge, wrapping, money, toposort, pathnorm)
)
TASKS = V1_TASKS + V2_TASKS
