"""LLM mode: a LangChain agent over any OpenAI-compatible endpoint, given the registry's tools.

`client` builds the chat model for a provider, `tools` turns the tool registry into LangChain tools,
`prompts` renders `prompts/*.md`, and `agent` runs the loop and returns a `PlanResult` like the
offline planner does.
"""
