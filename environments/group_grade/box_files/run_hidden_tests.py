"""group-grade's hidden-test runner.

Staged in every candidate box's grading area and run there as
``python -I <grading area>/run_hidden_tests.py`` in the box's working directory. It runs pytest
over ``$GRADE_PRIVILEGED`` ignoring the candidate's test configuration (its ``pytest.ini``,
``tox.ini``, ``setup.cfg``, ``pyproject.toml`` and ``conftest.py`` files, ``addopts``,
installed plugins) with pytest and its built-in plugins imported before the candidate's tree
is on ``sys.path``. The result is ``$GRADE_RESULTS/junit.xml`` together with the exit code,
never printed text; the process ends with ``os._exit`` as soon as pytest returns, so no exit
hook of the code under test runs after pytest has reported.

Runs on any Python 3 a box may have: standard library and pytest only.
"""

import contextlib
import importlib
import os
import sys


def main():
    privileged = os.environ["GRADE_PRIVILEGED"]
    junit = os.path.join(os.environ["GRADE_RESULTS"], "junit.xml")
    if os.path.lexists(junit):
        os.remove(junit)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    for name in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS"):
        os.environ.pop(name, None)
    import pytest
    from _pytest.config import default_plugins

    for name in default_plugins:
        with contextlib.suppress(ImportError):
            importlib.import_module("_pytest." + name)
    importlib.import_module("xml.etree.ElementTree")
    sys.path.insert(0, os.getcwd())
    ini = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytest.ini")
    code = pytest.main(
        [
            "-c", ini,
            "--rootdir", privileged,
            "-o", "addopts=",
            "--noconftest",
            "-p", "no:cacheprovider",
            "-q",
            "--junitxml", junit,
            privileged,
        ]
    )  # fmt: skip
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(code))


if __name__ == "__main__":
    main()
