"""The offline planner: answers with no language model, from the same tools as the LLM agent.

`parse` reads a question into slots (`names` finds GPU and model names in it), `rules` picks the
intent and runs `answers` (one composer per intent), which fill the zh/en templates of `phrases`
(`templates/answers.yaml`) and format figures and tables with `render`. `lexicon` holds the words.
"""
