"""The request: what a message says (mentions, with their roles) and what it asks (a set), read once."""
