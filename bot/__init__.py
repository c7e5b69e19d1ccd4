"""Everything conversational, in wings that depend one way (see docs/architecture.md):

    cli -> api -> channels | mcp -> answer -> (offline | llm) -> core -> (knowledge, grounding) -> tools

The core every wing shares is `bot.core` (trace, store, settings, language, toolbox, planner); the
facade is `bot.answer.advisor`. The public entry point is `from bot import Advisor`; it is loaded
on first use so that importing a wing does not pull in the whole advisor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.answer.advisor import Advisor
    from bot.core.trace import AnswerTrace

__all__ = ["Advisor", "AnswerTrace"]


def __getattr__(name: str) -> Any:
    if name == "Advisor":
        from bot.answer.advisor import Advisor

        return Advisor
    if name == "AnswerTrace":
        from bot.core.trace import AnswerTrace

        return AnswerTrace
    raise AttributeError(f"module 'bot' has no attribute {name!r}")
