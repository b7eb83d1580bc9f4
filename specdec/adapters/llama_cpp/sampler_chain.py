"""llama.cpp's sampler chain, as llama-cpp-python 0.3.36 builds it for ``Llama.generate``, as a law (numpy).

The order (``Llama._init_sampler``): a logits processor, penalties, top-k, typical (off at 1), top-p, min-p,
temperature, then the draw.  Truncation therefore works on the *untempered* law (transformers, and specdec's
warpers, apply the temperature first, E6).  Exactly, on float32 logits z (llama.cpp's own arithmetic):

* penalties over the window W of the last ``last_n`` tokens the chain accepted: those *generated in this call*
  (prompt tokens are never accepted by ``generate``; llama-server accepts them first): for each t seen c_t > 0
  times, z_t = z_t * repeat if z_t <= 0 else z_t / repeat, then z_t -= c_t * frequency + presence;
* top-k (k > 0): the k largest z (llama.cpp breaks ties arbitrarily; here by the lower id);
* top-p (p < 1): the softmax of the survivors in float32, normalised by their sequential float32 sum in the order
  they stand (id order; by logit after top-k), as ``llama_sampler_softmax_impl`` sums; then, by logit, the shortest
  prefix whose sequential float32 cumulative sum reaches p (the crossing token kept); all of them if it never does.
  Only the ``PARTIAL`` most likely are sorted first, the rest only if their sum falls short
  (``llama_sampler_top_p_apply``'s adaptive sort, ``src/llama-sampler.cpp``): the same prefix a full sort gives;
* min-p (m > 0): the survivors with z >= max z + log(m);
* temperature T > 0: softmax of z / T over the survivors; T == 0 is the greedy argmax (the lowest id of the ties).

Checked against llama.cpp's own C samplers through llama-cpp-python's bindings
(``peers/test_llama_cpp_tokens.py``: the same support and probabilities within 1e-6 on random logits and histories,
and on SmolLM2's own rows over its 49,152 tokens, where a nucleus of thousands of tokens ends on a float32 rounding:
there the earlier normaliser - numpy's pairwise sum in sorted order, numpy's float32 exp - kept one token more or
less than llama.cpp in 65 of 288 cases, 2026-11-28).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PARTIAL = 256  # top-p sorts the most likely this many first (llama.cpp's own first guess), all only if they fall short

__all__ = ["PARTIAL", "ChainSettings", "chain_law"]


@dataclass(frozen=True)
class ChainSettings:
    """The samplers of one request (llama-cpp-python's ``generate`` keywords)."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    repeat_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    last_n: int = 64  # Llama(last_n_tokens_size=64)

    @property
    def penalises(self) -> bool:
        """Whether the penalties change any logit (a window, and a penalty off its neutral value)."""
        return self.last_n > 0 and (self.repeat_penalty, self.frequency_penalty, self.presence_penalty) != (1.0, 0.0, 0.0)

    @classmethod
    def from_settings(cls, settings) -> "ChainSettings":
        """From a :class:`specdec.SamplingSettings`: its samplers and penalties (the Python stages are
        :func:`specdec.adapters.llama_cpp.sampling_map.processors`)."""
        return cls(float(settings.temperature), int(settings.top_k or 0), float(settings.top_p or 1.0), float(settings.min_p or 0.0),
                   float(settings.repetition_penalty), float(settings.frequency_penalty), float(settings.presence_penalty))

    @classmethod
    def from_sampling(cls, sampling) -> "ChainSettings":
        """From a :class:`specdec.SamplingConfig` (temperature, top-k, top-p, min-p; every other sampler neutral)."""
        return cls(float(sampling.temperature), int(sampling.top_k or 0), float(sampling.top_p or 1.0), float(sampling.min_p or 0.0))


def _penalised(z: np.ndarray, history, s: ChainSettings) -> np.ndarray:
    if not s.penalises:
        return z
    window = list(history)[-s.last_n:]
    z = z.copy()
    for token in set(window):
        count = window.count(token)
        z[token] = z[token] * np.float32(s.repeat_penalty) if z[token] <= 0 else z[token] / np.float32(s.repeat_penalty)
        z[token] -= np.float32(count * s.frequency_penalty + s.presence_penalty)
    return z


def _by_logit(z: np.ndarray, ids: np.ndarray, first: int | None = None) -> np.ndarray:
    """``ids`` by descending ``z``, ties by the lower id; only the ``first`` of that order when given (a partition
    first: every id tied with the last one kept is sorted too, so they are the full sort's first ``first``)."""
    if first is not None and first < ids.shape[0]:
        values = z[ids]
        cut = np.partition(values, values.shape[0] - first)[values.shape[0] - first]  # the first-th largest logit
        ids = ids[values >= cut]
    ranked = ids[np.lexsort((ids, -z[ids]))]
    return ranked if first is None else ranked[:first]


def chain_law(logits, history, settings: ChainSettings) -> np.ndarray:
    """The law (V,) float64 of the next token llama.cpp draws from raw ``logits`` (V,) after ``history`` (the
    tokens the chain has accepted so far: those generated in the request, after the prompt where the engine accepts
    the prompt too, as llama-server does; :class:`specdec.adapters.llama_cpp.oracle.LlamaCppOracle`)."""
    z = _penalised(np.asarray(logits, dtype=np.float32), history, settings)
    out = np.zeros(z.shape[0], dtype=np.float64)
    if settings.temperature == 0:
        out[int(np.argmax(z))] = 1.0  # first maximum: the lowest id wins ties
        return out
    ids, by_logit = np.arange(z.shape[0]), False
    if settings.top_k > 0:
        ids, by_logit = _by_logit(z, ids, settings.top_k), True
    if settings.top_p < 1.0:
        # expf(z - max): the float32 difference's exp in double, rounded to float32 - numpy's float32 exp can be an
        # ulp off glibc's expf, which moved the nucleus' last token on real rows; this agreed on every row tried
        p = np.exp((z[ids] - z[ids].max()).astype(np.float64)).astype(np.float32)
        p /= np.cumsum(p, dtype=np.float32)[-1]  # the sequential float32 sum, in the order the survivors stand
        # by logit, the sequential cumulative sums reaching p; unsorted, ids is the identity and p is indexed by id
        reaching = lambda ranked: np.cumsum(p if by_logit else p[ranked], dtype=np.float32) >= np.float32(settings.top_p)  # noqa: E731
        ranked = ids if by_logit else _by_logit(z, ids, PARTIAL)
        reached = reaching(ranked)
        if not reached.any() and ranked.shape[0] < ids.shape[0]:  # the PARTIAL most likely fell short: every survivor
            ranked = _by_logit(z, ids)
            reached = reaching(ranked)
        ids = ranked[: int(np.argmax(reached)) + 1] if reached.any() else ranked
    if settings.min_p > 0:
        ids = ids[z[ids] >= z[ids].max() + np.log(np.float32(settings.min_p))]
    scaled = z[ids].astype(np.float64) / settings.temperature
    weights = np.exp(scaled - scaled.max())
    out[ids] = weights / weights.sum()
    return out
