from __future__ import annotations

from pathlib import Path

import pytest
import verifiers.v1.runtimes.subprocess as subprocess_runtime


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def boxes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep subprocess boxes (and anything under HOME) inside the test's tmp dir."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    # Read once at import by verifiers; patch where the subprocess runtime uses it.
    monkeypatch.setattr(subprocess_runtime, "CACHE_DIR", home / ".cache" / "verifiers")
    return home
