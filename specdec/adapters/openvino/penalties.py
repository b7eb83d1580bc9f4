"""OpenVINO GenAI's repetition, presence and frequency penalties, restated in numpy for the law oracle
(:class:`.ir_oracle.OpenVINOOracle`).

Source: openvino.genai at commit da1db86 (after tag 2026.3.0.0; the installed 2026.4.1.0 is not in the snapshot read:
the control, the engine without speculation against the oracle, judges the restatement):

* ``src/cpp/src/sampling/logit_processor.hpp``, ``LogitProcessor``'s constructor: for a multinomial or greedy request
  the penalties are pushed in this order - ``RepetitionPenaltyTransform`` (when ``repetition_penalty != 1``),
  ``PresencePenaltyTransform`` (``presence_penalty != 0``), ``FrequencyPenaltyTransform`` (``frequency_penalty != 0``)
  - before top-k, temperature, min-p and top-p, each reading the row the one before wrote.  The history: the *set* of
  the request's prompt ids (``m_unique_prompt_token_ids``, from ``sequence_group->get_prompt_ids()``) and a map
  generated id -> count (``m_unique_generated_token_ids``, ``register_new_generated_token``);
* ``src/cpp/src/sampling/logit_transformers.hpp``:

  - ``RepetitionPenaltyTransform::apply``: every id of the prompt set, then every generated id not in it (so each id
    of prompt u generated once): ``val >= 0 ? val / penalty : val * penalty``;
  - ``PresencePenaltyTransform::apply``: every generated id (not the prompt's), once:
    ``val >= 0 ? val - penalty : val + penalty`` - a negative logit is moved *up*, towards 0 (OpenAI's presence
    penalty subtracts in both cases);
  - ``FrequencyPenaltyTransform::apply``: every generated id, by its count c: ``val >= 0 ? val - penalty * c :
    val + penalty * c`` (the same sign rule);

  ``val`` is the float32 logit, ``m_penalty`` a double made from ``GenerationConfig``'s float field: each step is
  rounded as C++ rounds ``float op= double`` (computed in double, stored as float), as here.

What the pipeline's sampler counts as generated (``src/cpp/src/sampling/sampler.cpp``,
``Sampler::sample_from_sequence_group`` and ``register_new_token``): each token it draws and keeps - without
speculation every emitted token; under prompt lookup the accepted candidates and the replacing or bonus draw, one at a
time as the K + 1 rows are walked, so the row of a verified position is penalised with the true prefix before it (the
candidates are appended to the sequence by ``ContinuousBatchingForPromptLookupImpl::generate_candidates_for_prompt_lookup``
without touching the logit processor).  The oracle therefore penalises position t with prompt + continuation[:t].
"""

from __future__ import annotations

import numpy as np

from ...sampling_settings import SamplingSettings

PENALTIES = ("repetition_penalty", "presence_penalty", "frequency_penalty")


def _ids(name: str, ids, vocab_size: int) -> np.ndarray:
    out = np.asarray(ids, dtype=np.int64).reshape(-1)
    if out.size and (out.min() < 0 or out.max() >= vocab_size):
        bad = int(out[(out < 0) | (out >= vocab_size)][0])
        raise ValueError(f"{name} must be token ids in [0, {vocab_size}) (OpenVINO asserts 'input_ids token out of bounds'), got {bad}")
    return out


def _away_from(vals: np.ndarray, down, up) -> np.ndarray:
    """float32 ``vals``: ``down(v)`` where v >= 0, ``up(v)`` elsewhere, computed in float64, stored as float32."""
    wide = vals.astype(np.float64)
    return np.where(wide >= 0, down(wide), up(wide)).astype(np.float32)


def openvino_penalised(logits: np.ndarray, prompt_ids, generated_ids, settings: SamplingSettings) -> np.ndarray:
    """A float32 copy of one row of ``logits`` (V,) after OpenVINO GenAI's penalties (module docstring), for a
    request of ``prompt_ids`` that has generated ``generated_ids`` so far, under ``settings``' penalties."""
    if not isinstance(settings, SamplingSettings):
        raise TypeError(f"settings must be a specdec.SamplingSettings, got {type(settings).__name__}")
    row = np.array(logits, dtype=np.float32)  # (V,), a copy
    if row.ndim != 1:
        raise ValueError(f"logits must be one row (V,), got shape {row.shape}")
    prompt = _ids("prompt_ids", prompt_ids, row.size)
    generated = _ids("generated_ids", generated_ids, row.size)
    gen_ids, counts = np.unique(generated, return_counts=True)  # the map generated id -> count
    # GenerationConfig's fields are float32; m_penalty is the double made from them.
    repetition = float(np.float32(settings.repetition_penalty))
    presence = float(np.float32(settings.presence_penalty))
    frequency = float(np.float32(settings.frequency_penalty))
    if repetition != 1.0:
        seen = np.union1d(prompt, gen_ids)  # each id once: the prompt set, then generated ids not in it
        row[seen] = _away_from(row[seen], lambda v: v / repetition, lambda v: v * repetition)
    if presence != 0.0:
        row[gen_ids] = _away_from(row[gen_ids], lambda v: v - presence, lambda v: v + presence)
    if frequency != 0.0:
        row[gen_ids] = _away_from(row[gen_ids], lambda v: v - frequency * counts, lambda v: v + frequency * counts)
    return row


def has_penalties(settings: SamplingSettings) -> bool:
    """Whether ``settings`` asks for any of OpenVINO's three penalties (as ``LogitProcessor`` tests them, in float32)."""
    return (np.float32(settings.repetition_penalty) != 1 or np.float32(settings.presence_penalty) != 0
            or np.float32(settings.frequency_penalty) != 0)


__all__ = ["PENALTIES", "has_penalties", "openvino_penalised"]
