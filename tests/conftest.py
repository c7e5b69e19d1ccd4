"""Shared test settings: network is off (pytest-socket, loopback allowed), no telemetry.

Fixtures for the suites that run the whole advisor (tests/bot/api, tests/security, tests/bot/channels):
`env` (a hermetic environment: no keys, LLM, Chroma, Redis or channel settings from outside, data dir and
store in tmp_path; each of those folders makes it autouse), `shared_advisor` (the offline advisor with
its knowledge index, built once a session in `shared_folder`) and `advisor` (the shared index and
planner with the test's own store)."""

import os
import sys
from pathlib import Path

import pytest

# shared helpers (`import loopback`, `import pg`, `import slack_fake`) live in tests/support/, not in tests/ itself:
# putting tests/ on sys.path would let the folder tests/bot/ shadow the real `bot` package.
sys.path.insert(0, str(Path(__file__).parent / "support"))

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("NO_COLOR", "1")
os.environ.setdefault("COLUMNS", "200")

#: every variable a settings class reads from the environment (bot/cli/settings_table.py lists them from the
#: classes themselves, the names pydantic-settings also reads included), so none from outside can reach a
#: test or change the advisor's mode, and a new setting is cleared without being added here
def _outside_settings() -> tuple[str, ...]:
    from bot.cli.settings_table import every_name

    return tuple(sorted(every_name()))


OUTSIDE_SETTINGS = _outside_settings()


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Nothing writes to $HOME: data dir and store live in tmp_path; no key, LLM, Chroma or Redis server."""
    for name in OUTSIDE_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env file
    monkeypatch.setenv("GPU_ADVISOR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path}/store.sqlite3")
    return tmp_path


@pytest.fixture(scope="session")
def shared_folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("advisor")


@pytest.fixture(scope="session")
def shared_advisor(shared_folder: Path):
    """The offline advisor; its data folder (with the built index) is `shared_folder / "data"`."""
    from bot.answer.advisor import Advisor
    from bot.core.settings import Settings

    with pytest.MonkeyPatch.context() as mp:
        for name in OUTSIDE_SETTINGS:
            mp.delenv(name, raising=False)
        mp.setenv("GPU_ADVISOR_DATA_DIR", str(shared_folder / "data"))
        return Advisor.from_settings(Settings(database_url=f"sqlite:///{shared_folder}/shared.sqlite3"))


@pytest.fixture
def advisor(shared_advisor, env: Path):
    """The shared index and offline planner with this test's own store (the env's DATABASE_URL)."""
    from bot.answer.advisor import Advisor
    from bot.core.settings import Settings
    from bot.core.store import Store

    return Advisor(store=Store(Settings().store_url), toolbox=shared_advisor.toolbox, offline=shared_advisor.offline)
