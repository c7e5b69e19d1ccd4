"""Number provenance: every figure in an answer must come from a tool, a cited passage or the question.

`numbers` extracts figures (zh/en, units, magnitudes) from text; `check` matches them to tool outputs,
passages and the question, and drops or reports what has no source.
"""
