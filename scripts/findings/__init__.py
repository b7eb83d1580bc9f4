"""Minimal reproducers of the findings against real engines (docs/reference.md §8), one module each."""
