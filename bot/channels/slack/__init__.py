"""Slack: the advisor as a Slack app (Bolt for Python), answering in threads, streamed, with feedback.

    settings    SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, SLACK_APP_TOKEN, SLACK_API_URL
    events      which events are questions, and the text, thread and ids they carry (pure)
    blocks      the canonical answer as Block Kit: Markdown body, numbered sources, follow-up and 👍/👎 buttons
    reply       one reply in a thread: chat.startStream/appendStream/stopStream, else post then update
    app         the Bolt AsyncApp and its listeners, on the delivery core (HTTP: POST /slack/events)
    socket      the same app over Socket Mode (`gpu-advisor slack socket`)

Setting up the Slack side (app manifest, scopes, events): docs/slack.md.
"""

from bot.channels.slack.settings import SlackSettings

__all__ = ["SlackSettings"]
