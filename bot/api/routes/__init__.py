"""The HTTP routes, one module per group: ask and stream, conversations and feedback, tools and catalogs, the OpenAI-compatible endpoint, MCP, docs pages, operations."""
