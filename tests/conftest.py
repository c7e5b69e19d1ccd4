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


#: modules the fast lane (`pytest -m "not slow"`, README "Tests") leaves out: each starts a server, a browser or
#: a process per case, drives the API or a channel end to end, fuzzes, or waits out real deadlines, and costs
#: two seconds or more on the 2-core CI machine (`pytest --durations`). The full suite and `.ci/run` run them:
#: the marker only labels them. Tests marked `slow` on their own (a server process) are left out as well.
SLOW_MODULES = {
    "tests/bot/api/test_app.py": "the API end to end, 30 cases",
    "tests/bot/test_real_corpus.py": "every real question and every corpus turn answered, about 11 s",
    "tests/bot/offline/test_diagnosis_corpus.py": "the hundred diagnose-corpus threads answered",
    "tests/bot/api/test_json_types.py": "every route's body fields through the API",
    "tests/bot/api/test_mcp_http.py": "MCP sessions over HTTP",
    "tests/bot/api/test_schema.py": "schemathesis over the OpenAPI schema",
    "tests/bot/api/test_security.py": "keys and limits end to end",
    "tests/bot/api/test_server.py": "uvicorn on loopback, the openai SDK",
    "tests/bot/api/test_widget_keys.py": "widget keys end to end",
    "tests/bot/channels/slack/test_delivery_paths.py": "Slack against a fake, Socket Mode",
    "tests/bot/channels/slack/test_api_outage.py": "Slack through the server, its API failing",
    "tests/bot/channels/slack/test_events_http.py": "Slack events through the server",
    "tests/bot/channels/slack/test_malformed_requests.py": "Slack events through the server",
    "tests/bot/channels/slack/test_setup.py": "the Slack app through the server",
    "tests/bot/channels/test_delivery.py": "racing workers on SQLite and PostgreSQL",
    "tests/bot/channels/test_allow_lists.py": "the server against a fake Slack and a fake WeCom",
    "tests/bot/channels/test_kill_mid_answer.py": "servers killed with SIGKILL and started again",
    "tests/bot/channels/test_faults.py": "the store, Redis and WeCom's API failing under a served app",
    "tests/bot/channels/test_outbound.py": "the server against a fake WeCom",
    "tests/bot/channels/test_wecom_rejections.py": "the server against a fake WeCom",
    "tests/bot/channels/test_wecom_aibot.py": "the server against a fake WeCom",
    "tests/bot/channels/test_wecom_app.py": "the server against a fake WeCom",
    "tests/bot/channels/test_wecom_ws.py": "the long connection against a fake WeCom",
    "tests/bot/channels/widget/test_browser.py": "Chromium",
    "tests/bot/llm/test_agent.py": "the LLM agent against fake endpoints",
    "tests/bot/llm/test_deadline.py": "waits out real deadlines",
    "tests/bot/offline/test_corpus.py": "every question of the corpus",
    "tests/bot/test_advisor_fuzz.py": "property test over the whole advisor",
    "tests/bot/test_mcp.py": "an MCP server process",
    "tests/deploy/test_dockerfile.py": "builds and serves the wheel",
    "tests/deploy/test_nginx.py": "nginx",
    "tests/deploy/test_scale_out.py": "two workers, Chroma, PostgreSQL, Redis",
    "tests/knowledge/test_index.py": "builds indexes, the CLI in processes",
    "tests/knowledge/test_lexicon.py": "cuts every text with the whole dictionary",
    "tests/knowledge/test_search.py": "builds indexes, the CLI in processes",
    "tests/knowledge/test_server.py": "a Chroma server process",
    "tests/security/test_indexing.py": "the server re-indexing hostile folders",
    "tests/security/test_inputs.py": "the server under hostile inputs",
    "tests/security/test_llm_injections.py": "the advisor against injected notes",
    "tests/security/test_stalls.py": "slow clients against the real server",
    "tests/security/test_tenancy.py": "the server with many callers",
    "tests/tools/test_calculator_fuzz.py": "property tests over every calculator",
}
_ROOT = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = sorted(p for p in SLOW_MODULES if not (_ROOT / p).is_file())
    if missing:
        raise pytest.UsageError(f"tests/conftest.py SLOW_MODULES names files that do not exist: {missing}")
    for item in items:
        if item.path.resolve().relative_to(_ROOT).as_posix() in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
