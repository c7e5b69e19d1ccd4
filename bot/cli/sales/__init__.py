"""What a sales team runs: its own price book (`gpu-advisor prices …`)."""
