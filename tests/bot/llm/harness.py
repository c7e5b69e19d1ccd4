"""What the LLM tests share: settings for a scripted endpoint, an Advisor wired to it, one fixed passage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scripted_openai import ScriptedOpenAI, tool_results

from bot.answer.advisor import Advisor
from bot.core.settings import Settings
from bot.core.store import Store
from bot.core.toolbox import Toolbox
from bot.llm.agent import AgentPlanner
from bot.offline.rules import RulesPlanner
from knowledge.retrieval import Passage

BASE_URL = "http://llm.test/v1"
PASSAGE = Passage(
    id="kb:interconnect#1",
    doc_id="kb:interconnect",
    title="H800 与 A100 的互联",
    text="H800 保留了 H100 的算力，NVLink 带宽降到 400 GB/s。",
    source="https://example.org/h800",
    score=1.0,
)


class StubRetriever:
    """Fixed passages for every query (the real retriever is tested in tests/knowledge)."""

    def __init__(self, passages: list[Passage] | None = None):
        self.passages = [PASSAGE] if passages is None else passages

    def search(self, query: str, k: int = 5, lang: str | None = None, topics: list[str] | None = None) -> list[Passage]:
        return list(self.passages)


def settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "llm_base_url": BASE_URL,
        "llm_model": "scripted-model",
        "llm_api_key": "sk-test",
        "llm_max_retries": 0,
        "llm_timeout_s": 5,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


def advisor(tmp_path: Path, endpoint: ScriptedOpenAI, retriever: Any = None, **overrides: Any) -> Advisor:
    llm = AgentPlanner.from_settings(settings(**overrides), http_client=endpoint.client())
    return Advisor(
        store=Store(f"sqlite:///{tmp_path}/advisor.sqlite3"),
        toolbox=Toolbox(retriever=retriever or StubRetriever()),
        offline=RulesPlanner(),
        llm=llm,
    )


def results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The calculator results (parsed JSON) the model was sent in a request, in order."""
    return [json.loads(r) for r in tool_results(body) if not r.startswith("ERROR")]
