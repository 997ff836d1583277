"""The tasks of the labeled groups, as data (see ``spec.py``)."""

from groups_src import (
    csvfields,
    dates,
    deepmerge,
    durations,
    grid,
    intervals,
    lru,
    ratelimit,
    semver,
    slugify,
    wrapping,
)

TASKS = tuple(
    module.TASK
    for module in (
        slugify,
        lru,
        intervals,
        semver,
        csvfields,
        ratelimit,
        dates,
        grid,
        durations,
        deepmerge,
        wrapping,
    )
)
