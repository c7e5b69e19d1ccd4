"""The web chat widget: one `<script src=".../widget.js" data-key="pk_…" defer>` on any page.

- `/widget.js` (static/loader.js) adds a launcher button and, on first open, an iframe panel;
- `/widget` is that panel, served from the API's own origin with a CSP whose `frame-ancestors` lists the
  publishable key's origins; `/chat` is the same chat as a full page for internal users;
- `/widget/config` answers the loader (CORS, checked on `Origin`) so a page on an origin the key does
  not list gets a clear refusal; `/widget/assets/…` serves the panel's JS and CSS (no CDN, no build step).
The panel talks to `/v1/ask/stream` and `/v1/feedback` with the publishable key; what such a key may do
is decided in `bot/api/widget_auth.py`. Key lookups arrive through `app.state.widget_access`.
"""
