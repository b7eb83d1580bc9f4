"""Hypothesis settings for the property suite: derandomized (every run tests the same examples, as
Hypothesis' own "ci" profile does; no example database), without per-example deadlines, which
measure import and warm-up time on a shared CPU rather than anything these properties claim."""

from hypothesis import settings

settings.register_profile("specdec", parent=settings(), deadline=None, derandomize=True, database=None)
settings.load_profile("specdec")
