"""The shared core of the bot: the answer trace, the planner interface, the tool registry the bot uses, language, settings, the store and Redis."""
