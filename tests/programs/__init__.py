"""A corpus of programs run through every transformation (see corpus.py)."""
