"""The Slack app: a Bolt `AsyncApp` with the advisor's listeners, over HTTP (`POST /slack/events`) or Socket Mode.

    channel = SlackChannel(settings, advisor, delivery)   # at start-up; nothing is sent to Slack yet
    await channel.handle(request)                          # the FastAPI route (Bolt's async FastAPI handler)

Bolt verifies every HTTP request (HMAC-SHA256 of `v0:<timestamp>:<raw body>` with the signing secret, the
timestamp within 5 minutes) before anything here runs, answers Slack's url_verification and ssl_check, and
acknowledges events at once; the listeners below are lazy (they run after the acknowledgement), so Slack's
3-second deadline holds however long an answer takes.

Listeners:
    app_mention, message (DMs)         a question -> the delivery core (de-duplicated by event id, answered
                                       in its worker pool, apology on failure) -> one reply in the thread
    assistant_thread_started           the agent DM's suggested prompts, in the user's locale (users.info)
    follow_up_* buttons                ask that follow-up in the same thread
    feedback buttons (👍/👎)           a rating of that turn in the feedback store
A repeated event id (Slack's retries, X-Slack-Retry-Num 1-3) is acknowledged like the first and then dropped;
the message itself (channel + ts) is the delivery core's de-duplication key on top of that.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from slack_bolt.adapter.fastapi.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import AsyncConnectionErrorRetryHandler, AsyncServerErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient
from starlette.responses import JSONResponse, Response

from bot.answer.advisor import Advisor
from bot.channels.delivery import Delivery, Inbound
from bot.channels.render import Answer, phrase
from bot.channels.slack import events as ev
from bot.channels.slack import intake
from bot.channels.slack.blocks import FEEDBACK_ACTION, FOLLOW_UP_ACTION, HEADING_QUESTION_MAX, clip, parse_feedback
from bot.channels.slack.phrases import say
from bot.channels.slack.reply import SlackReply, Target
from bot.channels.slack.settings import SlackSettings
from bot.core.language import detect_language

log = logging.getLogger("gpu_advisor.channels.slack")

SINK_CALL_TIMEOUT_S = 60.0  # one Web API call made on behalf of a worker thread


class SlackChannel:
    """The Bolt app, its HTTP handler, and the bridge from the delivery core's workers back to Slack."""

    def __init__(self, settings: SlackSettings, advisor: Advisor, delivery: Delivery):
        if settings.bot_token is None:
            raise ValueError("SLACK_BOT_TOKEN is not set")
        self.settings = settings
        self.advisor = advisor
        self.delivery = delivery
        self._token = settings.bot_token.get_secret_value()
        self._signing_secret = settings.signing_secret.get_secret_value() if settings.signing_secret else ""
        self._locales: dict[str, str] = {}
        bolt_log = logging.getLogger("gpu_advisor.channels.slack.bolt")
        if _not_the_token_notice not in bolt_log.filters:  # one logger for every app built in this process
            bolt_log.addFilter(_not_the_token_notice)
        self.bolt = AsyncApp(
            name="gpu-advisor",
            logger=bolt_log,
            signing_secret=settings.signing_secret.get_secret_value() if settings.signing_secret else None,
            request_verification_enabled=settings.signing_secret is not None,
            client=web_client(settings.api_url),
            authorize=self._authorizer(),
            process_before_response=False,
        )
        self.handler = AsyncSlackRequestHandler(self.bolt)
        self._register()

    # ---- HTTP ------------------------------------------------------------------------------------
    async def handle(self, request) -> Any:
        """POST /slack/events: Bolt's FastAPI handler, after the checks Bolt itself skips (intake.py: a body
        it cannot parse is a 401 unsigned and a 400 signed, never a 500; an unsigned one is never parsed). `X-Slack-No-Retry: 1` goes with
        every answer a retry cannot change: a 404 (an event with no listener) and a 400 (a malformed request)."""
        raw = await request.body()  # Starlette keeps it: Bolt's handler reads the same bytes
        if not intake.signed(raw, request.headers, self._signing_secret):  # before a byte of it is parsed
            return JSONResponse({"error": "invalid request"}, status_code=401)
        problem = intake.malformed(raw, request.headers.get("content-type"))
        if problem is None and not intake.timestamp_readable(request.headers):
            problem = "X-Slack-Request-Timestamp is not a number"
        if problem is not None:
            log.warning("slack request refused: %s", problem)
            return _no_retry(JSONResponse({"error": f"malformed Slack request: {problem}"}, status_code=400))
        response = await self.handler.handle(request)
        if response.status_code >= 500:  # Bolt could not read a signed request's fields (logged by Bolt)
            return _no_retry(JSONResponse({"error": "malformed Slack request: unexpected fields"}, status_code=400))
        if response.status_code == 404:
            _no_retry(response)
        return response

    def recovery_sink(self, reply_to: dict, lang: str, loop: asyncio.AbstractEventLoop) -> _Sink:
        """A sink for a message an earlier process left unanswered (`Delivery.recover`): a new reply in its thread."""
        target = Target(
            channel=str(reply_to["channel"]),
            thread_ts=str(reply_to["thread_ts"]),
            team=str(reply_to.get("team") or ""),
            user=str(reply_to.get("user") or ""),
            lang=lang,
            heading=str(reply_to.get("heading") or ""),
        )
        client = web_client(self.settings.api_url, token=self._token)
        return _Sink(SlackReply(client=client, target=target), self.advisor, loop)

    # ---- Bolt wiring -----------------------------------------------------------------------------
    def _authorizer(self):
        token = self._token

        async def authorize(enterprise_id: str | None, team_id: str | None, user_id: str | None) -> AuthorizeResult:
            """One workspace, one bot token, and no auth.test call: events from bots are filtered by their
            `bot_id`/`subtype` (events.answerable), and the bot's own user id is read from each envelope."""
            return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, user_id=user_id, bot_token=token)

        return authorize

    def _register(self) -> None:
        app = self.bolt

        # Bolt passes arguments by parameter name, so the lazy listeners are plain functions, not bound methods
        async def answer_message(body, client, request):
            if self._from_listed_team(body) and await self._first_delivery(body, request):
                await self._on_message(body, client)

        async def suggest_prompts(body, client, request):
            if self._from_listed_team(body) and await self._first_delivery(body, request):
                await self._on_thread_started(body, client)

        async def ask_follow_up(body, client):
            if self._from_listed_team(body):
                await self._on_follow_up(body, client)

        async def store_feedback(body, client):
            if self._from_listed_team(body):
                await self._on_feedback(body, client)

        app.event("app_mention")(ack=_ack, lazy=[answer_message])
        app.event("message")(ack=_ack, lazy=[answer_message])
        app.event("assistant_thread_started")(ack=_ack, lazy=[suggest_prompts])
        app.event("assistant_thread_context_changed")(ack=_ack, lazy=[])
        app.action(re.compile(rf"^{FOLLOW_UP_ACTION}_\d+$"))(ack=_ack, lazy=[ask_follow_up])
        app.action(FEEDBACK_ACTION)(ack=_ack, lazy=[store_feedback])

    # ---- listeners (lazy: after the acknowledgement) ----------------------------------------------
    def _from_listed_team(self, body: dict) -> bool:
        """SLACK_TEAM_IDS: an event or click from a workspace not on it is dropped (already acknowledged)."""
        team = body.get("team_id") or (body.get("team") or {}).get("id") or (body.get("user") or {}).get("team_id")
        if self.settings.team_allowed(team):
            return True
        log.info("slack event from workspace %s ignored: not in SLACK_TEAM_IDS", team)
        return False

    async def _first_delivery(self, body: dict, request) -> bool:
        """Slack redelivers an event it thinks was not acknowledged in time (X-Slack-Retry-Num 1, 2, 3, or a
        Socket Mode envelope again): an event id this process saw within the TTL is dropped here; a retry
        that reaches another process is settled by the message's lease in the delivery core."""
        event_id = body.get("event_id")
        if not event_id:
            return True
        key = f"slack:event:{body.get('team_id', '')}:{event_id}"
        if self.delivery.first_here(key):  # memory only: a retry that reaches a restarted process goes on to the
            return True  # delivery core's lease, which answers it unless the message was already delivered
        log.info("slack event %s repeated (retry %d): dropped", event_id, ev.retry_number(request.headers))
        return False

    async def _on_message(self, body: dict, client: AsyncWebClient) -> None:
        question = ev.question_from(body, ev.bot_user_of(body))
        if question is None:
            return
        await self._ask(
            client,
            question.team,
            question.channel,
            question.thread_ts,
            question.user,
            question.text,
            message_id=question.message_id,
            user_team=question.user_team,
        )

    async def _on_follow_up(self, body: dict, client: AsyncWebClient) -> None:
        action = (body.get("actions") or [{}])[0]
        where = _interaction_thread(body)
        text = (action.get("value") or "").strip()
        if where is None or not text:
            return
        team, channel, thread = where
        user = (body.get("user") or {}).get("id", "")
        lang = detect_language(text)
        await self._ask(
            client,
            team,
            channel,
            thread,
            user,
            text,
            user_team=(body.get("user") or {}).get("team_id") or team,
            message_id=f"action:{channel}:{action.get('action_ts', '')}:{user}",
            heading=say("asked", lang, user=user, question=clip(text, HEADING_QUESTION_MAX)),
        )

    async def _ask(
        self,
        client: AsyncWebClient,
        team: str,
        channel: str,
        thread: str,
        user: str,
        text: str,
        message_id: str,
        heading: str = "",
        user_team: str = "",
    ) -> None:
        msg = Inbound(
            channel="slack", tenant=team, chat=channel, thread=thread, message_id=message_id, text=text, user=user
        )
        target = Target(
            channel=channel, thread_ts=thread, team=user_team or team, user=user, lang=msg.language, heading=heading
        )
        sink = _Sink(SlackReply(client=client, target=target), self.advisor, asyncio.get_running_loop())
        reply_to = {"channel": channel, "thread_ts": thread, "team": target.team, "user": user, "heading": heading}
        ticket = await asyncio.to_thread(self.delivery.accept, msg, sink, "slack", reply_to)
        if ticket.status == "busy" and ticket.reply:
            await sink.reply.fail(ticket.reply)

    async def _on_thread_started(self, body: dict, client: AsyncWebClient) -> None:
        thread = (body.get("event") or {}).get("assistant_thread") or {}
        channel, ts, user = thread.get("channel_id"), thread.get("thread_ts"), thread.get("user_id")
        if not (channel and ts):
            return
        lang = await self._locale(client, user)
        prompts = [{"title": q, "message": q} for q in phrase("welcome_questions", lang)]
        try:
            await client.assistant_threads_setSuggestedPrompts(
                channel_id=channel, thread_ts=ts, prompts=prompts, title=say("prompts_title", lang)
            )
        except (SlackApiError, SlackClientError) as err:
            log.warning("could not set suggested prompts: %s", getattr(err, "response", {}).get("error", err))

    async def _on_feedback(self, body: dict, client: AsyncWebClient) -> None:
        action = (body.get("actions") or [{}])[0]
        parsed = parse_feedback(action.get("value", ""))
        where = _interaction_thread(body)
        if parsed is None or where is None:
            return
        turn, rating = parsed
        cid = Inbound(
            channel="slack", tenant=where[0], chat=where[1], thread=where[2], message_id="", text=""
        ).conversation_id
        try:
            await asyncio.to_thread(self.advisor.store.add_feedback, cid, turn, rating)
        except LookupError:
            log.info("feedback for an unknown turn %s#%d ignored", cid, turn)
            return
        user = (body.get("user") or {}).get("id", "")
        lang = await self._locale(client, user)
        try:
            await client.chat_postEphemeral(
                channel=where[1], user=user, thread_ts=where[2], text=phrase("feedback_thanks", lang)
            )
        except (SlackApiError, SlackClientError):
            pass  # the rating is stored; the thank-you is a courtesy

    async def _locale(self, client: AsyncWebClient, user: str | None) -> str:
        """zh or en from the user's Slack locale (users.info with include_locale), cached per user."""
        if not user:
            return "en"
        if user not in self._locales:
            try:
                info = await client.users_info(user=user, include_locale=True)
                locale = str((info.get("user") or {}).get("locale") or "")
            except (SlackApiError, SlackClientError):
                locale = ""
            self._locales[user] = "zh" if locale.lower().startswith("zh") else "en"
        return self._locales[user]


def web_client(api_url: str, token: str | None = None) -> AsyncWebClient:
    """Slack's Web API client: a dropped connection, and an HTTP 500 or 503 (Slack's side failing before it
    did anything), are tried again up to 3 times after 0.5, 1 and 2 s, so a short outage delays a reply
    instead of losing it (Bolt's per-request clients copy these handlers)."""
    retry = [AsyncConnectionErrorRetryHandler(), AsyncServerErrorRetryHandler(max_retry_count=3)]
    return AsyncWebClient(base_url=api_url, token=token, timeout=15, retry_handlers=retry)


def _no_retry(response: Response) -> Response:
    response.headers["X-Slack-No-Retry"] = "1"
    return response


def _not_the_token_notice(record: logging.LogRecord) -> bool:
    """Bolt reads SLACK_BOT_TOKEN from the environment itself and warns that it goes unused next to our client;
    the token is used (by `authorize`), so that warning would only mislead an operator."""
    return "`token` will be unused" not in record.getMessage()


async def _ack(ack) -> None:
    await ack()


def _interaction_thread(body: dict) -> tuple[str, str, str] | None:
    """(team, channel, thread ts) of the message whose button was clicked."""
    team = (body.get("team") or {}).get("id") or (body.get("user") or {}).get("team_id")
    container = body.get("container") or {}
    message = body.get("message") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id")
    thread = container.get("thread_ts") or message.get("thread_ts") or container.get("message_ts") or message.get("ts")
    return (team, channel, thread) if team and channel and thread else None


class _Sink:
    """The delivery core's sink (called from a worker thread): each call runs on the server's event loop."""

    def __init__(self, reply: SlackReply, advisor: Advisor, loop: asyncio.AbstractEventLoop):
        self.reply = reply
        self.advisor = advisor
        self.loop = loop

    def _run(self, coro) -> None:
        asyncio.run_coroutine_threadsafe(coro, self.loop).result(SINK_CALL_TIMEOUT_S)

    def progress(self, text: str) -> None:
        self._run(self.reply.progress(text))

    def answer(self, answer: Answer) -> None:
        self._run(self.reply.finish(answer, self._turn(answer)))

    def apology(self, text: str) -> None:
        self._run(self.reply.fail(text))

    def _turn(self, answer: Answer) -> int | None:
        """The index of the turn just answered (what the feedback buttons rate): the latest answered turn
        whose answer starts with this verdict, so a second question racing in the same thread is not mixed up."""
        if not answer.conversation_id:
            return None
        answered = [t for t in self.advisor.store.turns(answer.conversation_id) if t.status == "answered"]
        mine = [t.idx for t in answered if answer.verdict and (t.answer or "").lstrip().startswith(answer.verdict)]
        return (mine or [t.idx for t in answered] or [None])[-1]
