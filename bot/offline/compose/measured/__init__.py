"""What the user measured, set against what the hardware explains (a gap between two named cards)."""
