"""The tasks of the labeled groups, as data (see ``spec.py``)."""

from groups_src import (
    csvfields,
    dates,
    grid,
    intervals,
    lru,
    money,
    pathnorm,
    ratelimit,
    semver,
    slugify,
    toposort,
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
        money,
        toposort,
        pathnorm,
    )
)
