"""What the question says about the cards beyond their names."""
