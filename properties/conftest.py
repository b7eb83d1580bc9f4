"""Hypothesis settings for the property suite: the active profile (Hypothesis loads its
derandomized "ci" profile when CI is set) without per-example deadlines, which measure
import and warm-up time on a shared CPU rather than anything these properties claim."""

from hypothesis import settings

settings.register_profile("specdec", parent=settings(), deadline=None)
settings.load_profile("specdec")
