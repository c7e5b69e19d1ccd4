"""`recommend_gpus`: GPU type and count options ranked, with the words that explain each."""
