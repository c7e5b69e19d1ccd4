"""The question parser is linear in the length of the question (issue 10 / issue 17 item 3): an
adversarial 4,000-character question costs about what an ordinary one of the same length costs, and
four times the text costs about four times the time. Ratios measured in the same run, not absolute times."""

import time

from bot.offline.understand.parse import parse

ADVERSARIAL = {
    "digits": "1234567890" * 400,
    "spaces": "A100" + " " * 3992 + "x",
    "numbers and units": ("8 x 8 卡 a100 1.5万 30-50 到 " * 200)[:4000],
    "dots": "1." * 2000,
}
ORDINARY = ("70B 全参训练 单卡 A100 够吗？ " * 250)[:4000]


def _best(text: str, rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        parse(text)
        best = min(best, time.perf_counter() - t0)
    return best


def test_adversarial_questions_cost_what_ordinary_ones_do():
    parse("warm up: A100")
    ordinary = _best(ORDINARY)
    for name, text in ADVERSARIAL.items():
        assert _best(text) < 10 * ordinary + 0.05, name  # quadratic backtracking was ~100-1000x


def test_four_times_the_text_costs_about_four_times_the_time():
    parse("warm up: A100")
    short, long = _best(ADVERSARIAL["digits"][:1000]), _best(ADVERSARIAL["digits"])
    assert long < 12 * short + 0.02  # linear: ~4x; quadratic: ~16x
