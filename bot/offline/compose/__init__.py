"""One module per kind of answer: each composer calls the tools for its ask and writes the answer from their outputs."""
