"""`diagnose`: the setup and what a log shows -> the causes, each with the arithmetic that reproduces the evidence."""
