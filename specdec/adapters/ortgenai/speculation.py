"""ONNX Runtime GenAI's speculation methods as one record (``GeneratorParams.set_speculative_options``, 0.18.0).

onnxruntime-genai 0.18.0 speculates three ways (``docs/SpeculativeDecoding.md`` and ``src/config.h``,
``Config::Speculative``, of microsoft/onnxruntime-genai):

* ``"ngram"``: prompt lookup over the committed sequence (``ngram_size`` 2-16 matches the last N-1 tokens,
  ``ngram_chained_lookup``), one target model;
* ``"draft_model"``: a draft model named in the model folder's ``genai_config.json`` (``model.draft``); its presence
  alone turns speculation on (a composite folder speculates even when no option is set: the control is the target's
  own folder);
* ``"mtp"``: multi-token-prediction heads through ``onnxruntime_genai.MtpGenerator``, for models exported with them
  (Qwen 3.6 MTP): SmolLM2 has none, so the method is refused here by name.

Both n-gram and draft speculation take ``max_draft_tokens`` (K, 1-16), ``min_adaptive_k`` (0: K fixed; else adaptive K
from that floor up to 16) and ``cooldown``; batch size 1 and one sequence per request only.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._validation import as_int

METHODS = ("ngram", "draft_model")
REFUSED_METHODS = {"mtp": "multi-token prediction needs a model exported with MTP heads (onnxruntime_genai.MtpGenerator); "
                          "SmolLM2 has none"}


@dataclass(frozen=True)
class Speculation:
    """One speculation method and its options (module docstring)."""

    method: str  # "ngram" or "draft_model"
    max_draft_tokens: int = 4  # K: 1-16 (fixed when min_adaptive_k is 0)
    ngram_size: int = 3  # ngram only: 2-16
    chained_lookup: bool = False  # ngram only
    min_adaptive_k: int = 0  # 0: K fixed; 1-16: adaptive K's floor
    cooldown: bool = False

    def __post_init__(self) -> None:
        if self.method in REFUSED_METHODS:
            raise ValueError(f"method={self.method!r} is not supported: {REFUSED_METHODS[self.method]}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        as_int("max_draft_tokens", self.max_draft_tokens, minimum=1, maximum=16)
        as_int("min_adaptive_k", self.min_adaptive_k, minimum=0, maximum=16)
        if self.method == "ngram":
            as_int("ngram_size", self.ngram_size, minimum=2, maximum=16)
        for name in ("chained_lookup", "cooldown"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if self.chained_lookup and self.method != "ngram":
            raise ValueError("chained_lookup is an n-gram option: method must be 'ngram'")

    def options(self) -> dict:
        """``set_speculative_options`` keywords."""
        options = {"max_draft_tokens": self.max_draft_tokens, "min_adaptive_k": self.min_adaptive_k, "cooldown": self.cooldown}
        if self.method == "ngram":
            options.update(ngram_size=self.ngram_size, ngram_chained_lookup=self.chained_lookup)
        return options

    @property
    def label(self) -> str:
        k = f"K={self.max_draft_tokens}" if not self.min_adaptive_k else f"adaptive K from {self.min_adaptive_k}"
        if self.method == "ngram":
            return f"n-gram {self.ngram_size}{' chained' if self.chained_lookup else ''}, {k}"
        return f"draft model, {k}"
