"""Number provenance: every figure in an answer must come from a tool, a cited passage or the question.

`numbers` extracts figures (zh/en, units, magnitudes) from text; `check` matches them to tool outputs,
passages and the question; `inputs` refuses a tool output computed from a figure the model made up;
`repair` drops what has no source from the answer.
"""
