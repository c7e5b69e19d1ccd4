"""The knowledge base: notes in `knowledge/docs`, a Chroma index and hybrid retrieval."""
