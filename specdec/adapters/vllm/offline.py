"""vLLM's in-process engine (``vllm.LLM``) behind the Decoder Protocol: the whole serving stack as a subject.

``VLLMDecoder(model, sampling=..., speculative_config=...)`` builds a ``vllm.LLM`` on its first call
(importing vLLM takes about 12 s and starting the engine 10-30 s on a CPU) and answers
``decoder(prompts, max_new_tokens, seed)`` with one list of new token ids per prompt:

* prompts are token ids (``{"prompt_token_ids": ...}``), so no tokenizer stands between the check
  and the engine;
* every request gets its own seed, derived from the call's seed (``numpy.random.SeedSequence``), so
  rows are independent draws and a call is reproducible;
* ``sampling`` (a :class:`specdec.SamplingConfig`: temperature, top-k, top-p) becomes vLLM's
  ``SamplingParams``, the same warpers the reference law uses (E6); or ``settings`` (a
  :class:`specdec.SamplingSettings`: penalties, logit bias, minimum tokens, bad words, allowed and stop
  ids, unseeded requests), mapped by :mod:`.sampling_params`, which refuses by name what the engine
  cannot take; a setting the engine itself refuses when asked (``ValueError`` or vLLM's ``VLLMClientError``, which
  its server answers with a 4xx) raises
  :class:`specdec.errors.EngineRefusal`; ``ignore_eos=True`` by default (EOS an ordinary token; pass
  ``eos_token_id`` to the check otherwise);
* :meth:`speculation_counts` reads vLLM's own counters (drafts, draft tokens, accepted tokens), so a
  check can say how much speculation it exercised.

The engine runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), which is what lets a test
patch a kernel of the running engine (``setup=``, called with the ``vllm.LLM`` once it is built).
vLLM allows one engine per process: build one ``VLLMDecoder`` per process.  Supported versions:
:data:`specdec.adapters.vllm.SUPPORTED_VLLM`, checked before vLLM is imported.
"""

from __future__ import annotations

import os
from typing import Callable, Sequence

from ...errors import EngineRefusal
from ...sampling_settings import SamplingSettings, settings_from
from ...warpers import SamplingConfig
from .._common import installed_version, request_seeds, require_version
from .sampling_params import sampling_params_kwargs
from .verifier import DISTRIBUTIONS, SUPPORTED_VLLM

_COUNTERS = {
    "vllm:spec_decode_num_drafts": "drafts",
    "vllm:spec_decode_num_draft_tokens": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens": "accepted_tokens",
}


class VLLMDecoder:
    """A ``vllm.LLM`` as a :class:`specdec.protocols.Decoder` (see the module docstring).

    ``model``: a model directory (config, safetensors, tokenizer).  ``speculative_config``: vLLM's
    dict (None: no speculation, the control).  ``engine_args``: more ``vllm.LLM`` keyword arguments
    (defaults: float32, eager, max_model_len 512, statistics on, engine seed 0).  ``setup``: callables
    run on the built ``vllm.LLM`` before the first request (e.g. a test's patch of a kernel).
    """

    def __init__(self, model: str | os.PathLike, *, sampling: SamplingConfig | None = None, settings: SamplingSettings | None = None,
                 speculative_config: dict | None = None, engine_args: dict | None = None,
                 setup: Callable | Sequence[Callable] = (), ignore_eos: bool = True, name: str | None = None,
                 decode: Callable | None = None) -> None:
        if sampling is not None and not isinstance(sampling, SamplingConfig):
            raise TypeError(f"sampling must be a specdec.SamplingConfig, got {type(sampling).__name__}")
        self.sampling_settings = settings_from(sampling, settings)
        self.decode = decode
        sampling_params_kwargs(self.sampling_settings, decode or _spell_later)  # refused now, by name
        self.model = str(model)
        self.sampling = self.sampling_settings.sampling
        self.speculative_config = dict(speculative_config) if speculative_config else None
        self.engine_args = dict(engine_args or {})
        self.setup = [setup] if callable(setup) else list(setup)
        self.ignore_eos = bool(ignore_eos)
        self.name = name or self.settings
        self._llm = None

    @property
    def settings(self) -> str:
        """One line: the engine's speculation and sampling settings."""
        spec = "no speculation" if not self.speculative_config else ", ".join(f"{k}={v}" for k, v in self.speculative_config.items() if k != "model")
        return f"vLLM {self._version() or '?'} ({spec}; {self.sampling_settings.label})"

    @property
    def num_draft_tokens(self) -> int:
        """K of the engine's speculation (0 without)."""
        return int(self.speculative_config.get("num_speculative_tokens", 0)) if self.speculative_config else 0

    @property
    def llm(self):
        """The ``vllm.LLM``, built on first use (shared with the decoders made by :meth:`with_settings`)."""
        holder = self._engine_holder
        if holder is not self:
            return holder.llm
        if self._llm is None:
            require_version("specdec.adapters.vllm.offline", DISTRIBUTIONS, SUPPORTED_VLLM)
            os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
            from vllm import LLM

            args = dict(dtype="float32", enforce_eager=True, max_model_len=512, disable_log_stats=False, seed=0)
            args.update(self.engine_args)
            self._llm = LLM(model=self.model, speculative_config=self.speculative_config, **args)
            for step in self.setup:
                step(self._llm)
        return self._llm

    def with_settings(self, settings: SamplingSettings, name: str | None = None) -> "VLLMDecoder":
        """The same engine (built once, shared) asked with other ``settings`` (refused now, by name, if it cannot take
        them): one engine per process serves every setting of a matrix."""
        import copy

        other = copy.copy(self)
        other.sampling_settings = settings_from(None, settings)
        sampling_params_kwargs(other.sampling_settings, other.decode or _spell_later)
        other.sampling = other.sampling_settings.sampling
        other.name = name or other.settings
        other._owner = self
        return other

    @property
    def _engine_holder(self) -> "VLLMDecoder":
        return getattr(self, "_owner", None) or self

    def sampling_params(self, max_new_tokens: int, seed: int | None):
        """The request's ``SamplingParams`` (``seed`` None or the settings unseeded: the engine's own randomness);
        the engine's refusal of a field raises :class:`specdec.errors.EngineRefusal`."""
        from vllm import SamplingParams

        decode = self.decode or (lambda ids: self.llm.get_tokenizer().decode(ids))
        kwargs = sampling_params_kwargs(self.sampling_settings, decode)
        seed = seed if self.sampling_settings.seeded else None
        try:
            return SamplingParams(max_tokens=max_new_tokens, seed=seed, ignore_eos=self.ignore_eos, **kwargs)
        except _client_errors() as refused:
            raise EngineRefusal(self.name, str(refused)) from refused

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        llm = self.llm
        params = [self.sampling_params(max_new_tokens, s) for s in request_seeds(seed, len(prompts))]
        try:
            outputs = llm.generate([{"prompt_token_ids": [int(t) for t in p]} for p in prompts], params, use_tqdm=False)
        except _client_errors() as refused:  # vLLM refuses a request's parameters (what its server answers with a 4xx)
            raise EngineRefusal(self.name, str(refused)) from refused
        return [list(o.outputs[0].token_ids) for o in outputs]

    def speculation_counts(self) -> dict | None:
        """vLLM's cumulative speculation counters (drafts, draft_tokens, accepted_tokens); None without speculation."""
        llm = self._engine_holder._llm
        if not self.speculative_config or llm is None:
            return None if not self.speculative_config else {v: 0 for v in _COUNTERS.values()}
        counts = {v: 0 for v in _COUNTERS.values()}
        for metric in llm.get_metrics():
            key = _COUNTERS.get(getattr(metric, "name", ""))
            if key is not None:
                counts[key] = int(getattr(metric, "value", 0))
        return counts

    def _version(self) -> str | None:
        found = installed_version(DISTRIBUTIONS)
        return None if found is None else found[1]

    def __repr__(self) -> str:
        return f"VLLMDecoder({self.model!r}, {self.settings})"


def _client_errors() -> tuple:
    """What vLLM raises for a request it refuses: ``ValueError`` and its ``VLLMClientError`` (its server's 4xx)."""
    from vllm.exceptions import VLLMClientError

    return (ValueError, VLLMClientError)


def _spell_later(ids) -> str:  # bad words are spelled by the engine's tokenizer once it is built
    return " ".join(map(str, ids))


__all__ = ["VLLMDecoder", "request_seeds"]
