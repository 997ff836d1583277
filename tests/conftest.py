from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import verifiers.v1.runtimes.subprocess as subprocess_runtime

from tests.fake_prime_api import FakePrimeAPI
from tests.grading import KEY_VAR


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def scripted_model_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripted model takes any key; the variable only has to exist."""
    monkeypatch.setenv(KEY_VAR, "unused")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME inside the test's tmp dir (no real ~/.prime or caches are read)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def boxes(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep subprocess boxes (and anything under HOME) inside the test's tmp dir."""
    # Read once at import by verifiers; patch where the subprocess runtime uses it.
    monkeypatch.setattr(subprocess_runtime, "CACHE_DIR", home / ".cache" / "verifiers")
    return home


@pytest.fixture
def fake(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakePrimeAPI]:
    for var in (
        "PRIME_BASE_URL",
        "PRIME_TEAM_ID",
        "PRIME_USER_ID",
        "PRIME_CONTEXT",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(var, raising=False)
    with FakePrimeAPI(tmp_path / "fake", api_key="test-key") as api:
        monkeypatch.setenv("PRIME_API_BASE_URL", api.base_url)
        monkeypatch.setenv("PRIME_API_KEY", "test-key")
        yield api
