"""Statistics of the conformance engine (docs/reference.md §7): power planning
(F32-F34), goodness of fit (F29-F31), Holm's procedure, F36 localisation; two samples (H1-H3)."""

from .gof import GofResult, goodness_of_fit, monte_carlo_gof, pool_bins
from .localize import Localization, prefix_decomposition
from .multiplicity import holm
from .two_sample import homogeneity_test, two_sample_detectable_tv, two_sample_prefix_decomposition, two_sample_size_for_alternative
from .power import detectable_tv, required_noncentrality, required_sample_size, sample_size_for_alternative

__all__ = [
    "GofResult",
    "Localization",
    "detectable_tv",
    "goodness_of_fit",
    "holm",
    "homogeneity_test",
    "monte_carlo_gof",
    "pool_bins",
    "prefix_decomposition",
    "required_noncentrality",
    "required_sample_size",
    "sample_size_for_alternative",
    "two_sample_detectable_tv",
    "two_sample_prefix_decomposition",
    "two_sample_size_for_alternative",
]
