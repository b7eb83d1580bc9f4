"""The law ONNX Runtime GenAI samples a token from, given the raw logits row: its CPU sampler, in numpy.

One function per step of onnxruntime-genai's CPU path (read in microsoft/onnxruntime-genai at commit a0c04eb13,
2026-08-22, version 0.16.0-dev, ``src/sampling_distribution.h``: the 0.18.0 wheel's own sources were not at hand, so
``peers/test_ortgenai_law.py`` checks this reading against the 0.18.0 wheel's samples), the same in plain and
speculative decoding (``ComputeTargetTokenSelection``, ``src/speculative_sampling.h``, calls them for every row it
verifies):

1. ``LogitsPenaltyProcessor::Apply``: the repetition penalty over every distinct id of the sequence so far (prompt and
   answer; a logit < 0 multiplied by the penalty, else divided), in float32;
2. greedy (``do_sample`` false, ``top_k == 1`` or ``temperature == 0``): the first largest logit (``std::max_element``);
3. ``ComputeSampledCategorical``: with ``top_k > 1`` the k largest logits, ``exp((s - max) / T)`` normalized, then the
   top-p cut within them (the first j whose cumulative probability reaches p), renormalized; otherwise the nucleus of
   ``FindNucleus`` over the whole vocabulary, ``exp((s - max) / T)`` over it, normalized - **also at top_p = 1**.

``FindNucleus`` does not compute the exact nucleus: it walks the sorted logits and stops at the first position i where
``prefix >= p * (prefix + (V - i - 1) * e_i)`` (``e_i`` the unnormalized weight of position i, ``prefix`` the sum up to
it): a lower bound on the cumulative probability reaching p.  For a 49,152-token vocabulary the bound is loose, and the
kept set is far larger than the exact top-p nucleus (every token down to a weight of about
``prefix * (1 - p) / (p V)``): ONNX Runtime GenAI's top-p is not transformers' (nor the record's "smallest set of mass
p").  At top_p = 1 it drops the tail whose bound rounds below one float32 ulp of the prefix (a mass below about 1e-7).
This module reproduces the walk in float32, so the oracle's law is the engine's own; the
difference from the exact nucleus is measured in ``peers/test_ortgenai_law.py``.  Ties between equal logits are
ordered by id here (``std::partial_sort`` leaves them unspecified).
"""

from __future__ import annotations

import numpy as np

from ...sampling_settings import SamplingSettings


def penalized(logits: np.ndarray, history, repetition_penalty: float) -> np.ndarray:
    """Step 1: ``logits`` (V,) float32 with the repetition penalty over the distinct ids of ``history``."""
    out = np.array(logits, dtype=np.float32)
    if repetition_penalty == 1.0 or len(history) == 0:
        return out
    ids = np.unique(np.asarray(history, dtype=np.int64))
    ids = ids[(ids >= 0) & (ids < out.size)]
    penalty = np.float32(repetition_penalty)
    scores = out[ids]
    out[ids] = np.where(scores < 0, scores * penalty, scores / penalty)
    return out


def nucleus_size(sorted_scores: np.ndarray, p: float, inv_temp: np.float32) -> int:
    """``FindNucleus``' cutoff on scores sorted in descending order (module docstring), in float32."""
    vocab = sorted_scores.size
    weights = np.exp((sorted_scores - sorted_scores[0]) * inv_temp).astype(np.float32)  # e_i
    prefix = np.cumsum(weights, dtype=np.float32)
    tail = (np.arange(vocab - 1, -1, -1, dtype=np.float32) * weights).astype(np.float32)  # (V - i - 1) * e_i
    reached = prefix >= np.float32(p) * (prefix + tail)
    hits = np.flatnonzero(reached)
    return int(hits[0]) + 1 if hits.size else vocab


def engine_law(logits, history, settings: SamplingSettings) -> np.ndarray:
    """The law (V,) float64 the engine samples the next token from, given its raw ``logits`` row and the sequence so
    far ``history`` (prompt and answer), under ``settings`` (mapped as :mod:`.search_options` maps them)."""
    scores = penalized(logits, history, float(settings.repetition_penalty))
    vocab = scores.size
    law = np.zeros(vocab, dtype=np.float64)
    top_k = int(settings.top_k or 0)
    if settings.greedy or top_k == 1:
        law[int(np.argmax(scores))] = 1.0
        return law
    inv_temp = np.float32(1.0) / np.float32(settings.temperature)
    order = np.argsort(-scores, kind="stable")
    top_p = float(settings.top_p) if settings.top_p is not None else 1.0
    if top_k > 1:
        kept = order[:min(top_k, vocab)]
        weights = np.exp((scores[kept] - scores[kept[0]]) * inv_temp).astype(np.float32)
        probs = weights / weights.sum(dtype=np.float32)
        if 0.0 < top_p < 1.0:
            hits = np.flatnonzero(np.cumsum(probs, dtype=np.float32) >= np.float32(top_p))
            keep = int(hits[0]) + 1 if hits.size else kept.size
            kept, probs = kept[:keep], probs[:keep]
    else:
        kept = order[:nucleus_size(scores[order], top_p, inv_temp)]
        probs = np.exp((scores[kept] - scores[kept[0]]) * inv_temp).astype(np.float32)
    law[kept] = probs.astype(np.float64)
    return law / law.sum()


def exact_top_p_size(sorted_probs: np.ndarray, top_p: float) -> int:
    """The exact nucleus' size (the smallest prefix of the sorted law whose mass reaches ``top_p``): for comparison."""
    hits = np.flatnonzero(np.cumsum(sorted_probs) >= top_p - 1e-12)
    return int(hits[0]) + 1 if hits.size else sorted_probs.size
