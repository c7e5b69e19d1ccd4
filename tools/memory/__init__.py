"""GPU memory: `fit_training`, `fit_inference` and `model_memory`, with the training breakdown, ZeRO sharding, advice and the shared verdict."""
