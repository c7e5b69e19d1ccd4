"""Speed: `training_time`, `inference_speed` and `precision_speedup`, with model FLOPs and communication time."""
