"""The HTTP API (FastAPI): `app.create_app` builds it; `openai_compat` holds the OpenAI-compatible
routes; `security` and `keys` the bearer keys, body limits and rate limits; `errors` the one error
shape; `sse` server-sent events; `metrics` Prometheus metrics and request logs; `settings` the API's
own settings.
"""
