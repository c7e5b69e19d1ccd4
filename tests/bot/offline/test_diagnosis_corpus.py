"""The offline advisor on the diagnose corpus (tests/corpus/diagnose/, issue 24), scored as the bench scores it:
never "it fits" to a reported OOM, and the thread's solution among the first two causes at least as often as
last measured (137 threads: held-out 16 of 23, development 109 of 114; the first 103 threads alone: held-out 11
of 16, development 78 of 87). The issue's target is 80 % on the held-out fifth; these floors keep what is reached
from slipping back, they are not the target."""

import importlib.util
import logging
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "diagnose_corpus_floor", Path(__file__).parents[2] / "corpus" / "diagnose.py"
)
dc = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = dc
_spec.loader.exec_module(dc)


def test_the_diagnosis_meets_its_floors_on_real_threads(advisor, caplog):
    caplog.set_level(logging.ERROR, logger="gpu_advisor.advisor")
    verdicts = [dc.verdict(row, advisor.ask(row.question)) for row in dc.rows()]
    # no sentence of a diagnosis was dropped for a figure without a source (an example figure in a template was)
    assert not [r.getMessage() for r in caplog.records if "ungrounded numbers" in r.getMessage()]
    scored = dc.score(verdicts)
    assert scored["all"]["fits_to_oom"] == 0, [v["id"] for v in verdicts if v["fits_to_oom"]]
    held = [v for v in verdicts if v["split"] == "held-out"]
    dev = [v for v in verdicts if v["split"] == "dev"]
    assert sum(v["top2"] for v in held) >= 16, scored["held-out"]
    assert sum(v["top2"] for v in dev) >= 109, [(v["id"], v["want"], v["got"]) for v in dev if not v["top2"]]
