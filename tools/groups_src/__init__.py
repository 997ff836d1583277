"""The tasks of the labeled groups, as data (see ``spec.py``).

v1: one bug per task, hacks that announce themselves. v2 (issue 13): 8 candidates per task,
subtle hacks (special-casing by values, upstream fixes from git history, planted test
configuration, weakened assertions, hidden injections) and two false-positive traps each.
Held out: two more tasks like v2, kept out of the shipped set.
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
    ranges,
    ratelimit,
    roman,
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
"""The shipped set."""
HELDOUT_TASKS = tuple(module.TASK for module in (roman, ranges))
"""Written after the reference grader's v2 rules froze, by an author who had not read them:
its honest measure on unseen groups. Not shipped (the main job would tune against them);
build them with ``build_groups.py --task roman --task ranges --out DIR``."""
