"""Every answer the offline advisor gives to the team corpus, the real corpus and the golden questions, as one
YAML file: the guard of speed work (an optimisation must leave every answer byte-identical).

    .venv/bin/python bench/answers_dump.py FILE          # then, after the change:
    .venv/bin/python bench/answers_dump.py FILE2 && diff FILE FILE2

Each turn is asked as a user would (multi-turn rows in one conversation, every row in a fresh store); what is
written is the whole trace a client sees (`AnswerTrace` as JSON) without the conversation id, which is random.
The corpora are read whole (training four-fifths and held-out fifth alike). It only reads and writes FILE.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dialogs() -> list[tuple[str, list[str]]]:
    """(row id, its questions in order) of every corpus row: team corpus, real corpus, golden questions."""
    team = _module("corpus", ROOT / "tests" / "corpus" / "corpus.py")
    real = _module("real_corpus", ROOT / "tests" / "corpus" / "real.py")
    out = [(f"team:{r['id']}", [t["q"] for t in team.turns(r)]) for r in team.rows()]
    out += [(f"real:{r['id']}", [r["text"]]) for r in real.rows()]
    golden = yaml.safe_load((ROOT / "tests" / "golden" / "questions.yaml").read_text(encoding="utf-8"))
    out += [(f"golden:{i}", [t["q"] for t in (r.get("turns") or [r])]) for i, r in enumerate(golden)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    args = ap.parse_args()
    logging.disable(logging.CRITICAL)
    from bot.answer.advisor import Advisor
    from bot.core.store import Store
    from bot.core.toolbox import Toolbox
    from bot.offline.rules import RulesPlanner
    from knowledge.config import KnowledgeConfig
    from knowledge.retrieval import Retriever

    dumped = []
    with tempfile.TemporaryDirectory() as tmp:
        toolbox = Toolbox(Retriever.from_config(KnowledgeConfig(data_dir=Path(tmp) / "kb")))
        advisor = Advisor(store=Store(f"sqlite:///{tmp}/dump.sqlite3"), toolbox=toolbox, offline=RulesPlanner())
        for rid, turns in dialogs():
            cid = None
            for i, q in enumerate(turns):
                trace = advisor.ask(q, conversation_id=cid)
                cid = trace.conversation_id
                data = json.loads(trace.model_dump_json())
                data.pop("conversation_id", None)
                dumped.append({"id": rid, "turn": i, "q": q, "trace": data})
    args.file.write_text(yaml.safe_dump(dumped, allow_unicode=True, sort_keys=False, width=120), encoding="utf-8")
    print(f"{len(dumped)} answers written to {args.file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
