"""The calculators and the knowledge base over the Model Context Protocol; the HTTP mount is `bot.api.routes.mcp`."""
