"""Everything conversational: the advisor facade, planners, grounding, store, API and CLI."""
