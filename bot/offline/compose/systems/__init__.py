"""Answers about systems rather than cards: serving capacity from traffic (capacity), machines for a budget or a
deadline (system), rent or buy as the hardware will be used (usage)."""
