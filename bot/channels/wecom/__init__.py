"""WeCom (企业微信): the AI bot (智能机器人) over HTTP callbacks and over the long connection, and the
self-built app (自建应用) XML callback — thin adapters over `bot.channels.delivery`. See docs/wecom.md."""
