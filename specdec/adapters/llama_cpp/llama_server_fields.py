"""A :class:`specdec.SamplingSettings` as the JSON fields of llama.cpp's native ``POST /completion`` (issue 30).

Read in the llama.cpp sources that llama-cpp-python 0.3.36's sdist vendors (llama.cpp 0.5.0-dev, commit 0c1e570;
``tools/server/server-schema.cpp``, ``make_llama_cmpl_schema``): ``temperature``, ``top_k`` (0: off), ``top_p``,
``min_p``, ``typical_p``, ``repeat_penalty`` over the last ``repeat_last_n`` tokens, ``presence_penalty``,
``frequency_penalty``, ``logit_bias`` (``[[id, bias], ...]``), ``seed`` (an unsigned 32-bit number; -1, its
``LLAMA_DEFAULT_SEED``, draws one at random), ``n_cmpl`` (completions per request, the k-th child seeded with
``seed + k``) and ``samplers`` (the chain, by name).  Every sampler is sent, "off" included, because the server's
command-line defaults are not neutral (top-k 40, min-p 0.05); the chain is named explicitly (penalties, top-k,
typical, top-p, min-p, temperature: llama.cpp's default order without DRY, top-n-sigma and XTC), so no sampler the
record does not name can act.

Refused by name: ``min_new_tokens`` (the server has no minimum length), ``bad_words`` of more than one token and
``allowed_token_ids`` (no such fields; a one-token bad word is a ban, ``logit_bias`` ``false``), ``stop_token_ids``
(its ``stop`` takes strings, and cuts them from the answer) and a ``logits_processor`` (a server takes none).
"""

from __future__ import annotations

from ...sampling_settings import SamplingSettings, UnsupportedSetting, refuse_unsupported

__all__ = ["CHAIN", "ENGINE", "REPEAT_LAST_N", "completion_fields", "server_seed"]

ENGINE = "llama.cpp's llama-server (/completion)"
CHAIN = ["penalties", "top_k", "typ_p", "top_p", "min_p", "temperature"]
REPEAT_LAST_N = 64  # llama.cpp's default window of the penalties, sent so that the server's flag cannot change it
SEED_LIMIT = 2**32 - 1  # seeds are uint32; 2**32 - 1 is LLAMA_DEFAULT_SEED ("random")
_REFUSED = {
    "min_new_tokens": "llama-server has no minimum number of new tokens",
    "allowed_token_ids": "llama-server has no allowed-token list (only logit_bias and grammars)",
    "stop_token_ids": "llama-server's stop takes strings, and cuts them from the answer",
    "logits_processor": "a server takes no Python logits processor",
}


def completion_fields(settings: SamplingSettings) -> dict:
    """The sampling fields of one ``/completion`` body for ``settings`` (no ``seed`` and no ``n_cmpl``: the client
    sets those per request)."""
    refuse_unsupported(settings, ENGINE, _REFUSED)
    longer = [list(word) for word in settings.bad_words if len(word) > 1]
    if longer:
        raise UnsupportedSetting(ENGINE, "bad_words", settings.bad_words,
                                 f"llama-server bans single tokens only (logit_bias false), not the sequences {longer}")
    bias = [[int(token), float(value)] for token, value in settings.logit_bias]
    bias += [[int(word[0]), False] for word in settings.bad_words]
    return {
        "temperature": float(settings.temperature),
        "top_k": int(settings.top_k or 0),
        "top_p": float(settings.top_p or 1.0),
        "min_p": float(settings.min_p or 0.0),
        "typical_p": 1.0,
        "repeat_penalty": float(settings.repetition_penalty),
        "repeat_last_n": REPEAT_LAST_N,
        "presence_penalty": float(settings.presence_penalty),
        "frequency_penalty": float(settings.frequency_penalty),
        "logit_bias": bias,
        "samplers": list(CHAIN),
        "mirostat": 0,
        "dry_multiplier": 0.0,
        "xtc_probability": 0.0,
        "dynatemp_range": 0.0,
    }


def server_seed(seed: int) -> int:
    """A request seed as the server's uint32 (never its "random" value)."""
    return int(seed) % SEED_LIMIT
