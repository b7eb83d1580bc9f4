"""mlx-lm 0.32.2 as a ``specdec bench run`` subject: ``specdec.adapters.mlx.bench_mlx:draft_model``.

A factory of ``num_draft_tokens`` (:mod:`specdec.bench.pairs`, form 2): K >= 1 gives
:class:`.mlx_decoder.MlxDecoder` with ``speculative_generate_step`` and the target's own weights as the draft (draft =
target: the row shows the most such a draft can be kept, and its cost - each draft token is a full target forward -
not a realistic speed-up); K = 0 the twin, ``generate_step`` without a draft.  Greedy by default (both sides decode the
same law at any temperature without penalties: the adapter's docstring), EOS an ordinary token (both sides emit exactly
``--new-tokens``), one row at a time (mlx-lm speculates one sequence at a time).  The prompt's prefill is reused across
rows and rounds on both sides alike (``reuse_prefill``).
"""

from __future__ import annotations

from ..._validation import as_int
from ...sampling_settings import SamplingSettings
from .mlx_decoder import MlxDecoder

GREEDY = SamplingSettings(temperature=0.0)
DRAFT_NAME = "mlx-lm draft model (= target)"

__all__ = ["DRAFT_NAME", "draft_model"]


def draft_model(num_draft_tokens: int, *, settings: SamplingSettings = GREEDY, model_dir=None) -> MlxDecoder:
    """mlx-lm with the target's weights drafting ``num_draft_tokens`` tokens, or at K = 0 the twin."""
    k = as_int("num_draft_tokens", num_draft_tokens, minimum=0)
    if k == 0:
        return MlxDecoder(model_dir, settings=settings, name="mlx-lm, no draft model")
    return MlxDecoder(model_dir, settings=settings, speculation="draft_model", num_draft_tokens=k, name=DRAFT_NAME)


draft_model.name = DRAFT_NAME  # the subject's name in the rows (resolve_subject reads it)
