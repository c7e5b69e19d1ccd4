"""Chat channels: WeCom, Slack and the web widget, each a thin adapter over one delivery core.

`delivery` (the core) verifies nothing itself but does everything after an adapter has verified a
request: de-duplicate by the platform's message id, acknowledge within the platform's deadline,
answer in a bounded background worker through `Advisor.ask`, render the answer for the channel and
deliver it, with an apology in the user's language on failure. Adapters (`wecom/`, `slack`,
`widget`) hold only their platform's protocol: no sizing logic, prompts or catalog lookups here.
"""
