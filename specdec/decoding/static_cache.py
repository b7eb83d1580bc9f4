"""A Llama-family target with a preallocated KV cache, optionally replayed from CUDA graphs (gpt-fast style).

transformers' own route (static cache + ``torch.compile(mode="reduce-overhead")``) failed on an
H100 with transformers 5.17 (issue 12), so this module runs the model's own submodules
(embeddings, RMSNorms, projections, rotary embedding, MLPs, head: nothing re-implemented) around
K/V buffers it owns:

* buffers (B, kv_heads, S, head_dim) per layer, S = the longest context + 1 scratch slot;
* **slot = context position**: a token at position p is written to slot p of its row, so a
  query at p attends to slots 0..p (a mask from position tensors, no host data), and a rollback
  is only ``fed = min(fed, keep)`` - stale slots beyond are rewritten before any query reads them;
* left padding of ragged chunks writes to the scratch slot S - 1, which no real query sees;
* with ``cuda_graphs=True`` (CUDA only) one graph is captured per (B, T) query shape of the loop's
  steps (:meth:`feed_tensor`; T = K + 1 while verifying) and replayed with its inputs copied in, so
  a step costs kernel time, not Python and launch time.  The prefill (:meth:`feed`, one shape per
  prompt length) runs eagerly.

:class:`StaticKVCache` has :class:`RaggedCache`'s interface (feed, feed_tensor, rollback, select),
so ``generate(..., target_cache="static")`` uses it for the target; tests check it token for token
against the eager model.  An instance passed as ``generate(..., target_cache=cache)`` is reset and
reused, captured graphs included (capture happens once, not in every call: what a benchmark needs).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._validation import as_int


_GQA = "enable_gqa" in (F.scaled_dot_product_attention.__doc__ or "")  # torch >= 2.5


def _attention(q, keys, values, mask, scale):
    """SDPA over grouped K/V heads (repeated explicitly before torch 2.5)."""
    groups = q.shape[1] // keys.shape[1]
    if groups == 1:
        return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=scale)
    if _GQA:
        return F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=scale, enable_gqa=True)
    return F.scaled_dot_product_attention(q, keys.repeat_interleave(groups, 1), values.repeat_interleave(groups, 1),
                                          attn_mask=mask, scale=scale)


def _rotary():
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    return apply_rotary_pos_emb


class StaticKVCache:
    """Feeds ragged per-row chunks to a Llama-style ``model`` through preallocated K/V buffers."""

    def __init__(self, model, batch_size: int, device, *, max_length: int, cuda_graphs: bool = False) -> None:
        config = getattr(model, "config", None)
        inner = getattr(model, "model", None)
        needed = ("embed_tokens", "layers", "norm", "rotary_emb")
        if config is None or inner is None or not all(hasattr(inner, n) for n in needed) or not hasattr(model, "lm_head"):
            raise TypeError(f"target_cache='static' needs a Llama-style model (model.embed_tokens, layers, norm, rotary_emb, "
                            f"lm_head), got {type(model).__name__}")
        if not isinstance(cuda_graphs, bool):
            raise TypeError(f"cuda_graphs must be a bool, got {cuda_graphs!r}")
        self.device = torch.device(device)
        if self.device.type == "cuda" and self.device.index is None and torch.cuda.is_available():
            self.device = torch.device("cuda", torch.cuda.current_device())  # as the model's parameters report it
        if cuda_graphs and self.device.type != "cuda":
            raise ValueError(f"cuda_graphs=True needs a CUDA device, got {self.device}")
        self.model = model
        self.cuda_graphs = cuda_graphs
        self.apply_rotary = _rotary()
        self.layers = list(inner.layers)[: config.num_hidden_layers]
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        self.kv_heads = config.num_key_value_heads
        self.length = as_int("max_length", max_length, minimum=1) + 1  # + the scratch slot
        self.slots = torch.arange(self.length, device=self.device)
        self._graphs: dict = {}
        self._allocate(as_int("batch_size", batch_size, minimum=1))

    def _allocate(self, batch_size: int) -> None:
        dtype = self.model.model.embed_tokens.weight.dtype
        shape = (batch_size, self.kv_heads, self.length, self.head_dim)
        self.keys = [torch.zeros(shape, dtype=dtype, device=self.device) for _ in self.layers]
        self.values = [torch.zeros(shape, dtype=dtype, device=self.device) for _ in self.layers]
        self.fed = torch.zeros(batch_size, dtype=torch.long, device=self.device)
        self._graphs.clear()  # captured graphs read the old buffers

    @property
    def batch_size(self) -> int:
        return self.fed.shape[0]

    @property
    def max_length(self) -> int:
        """The longest context (prompt + generated + drafted tokens) a row may reach."""
        return self.length - 1

    @property
    def scratch(self) -> int:
        return self.length - 1

    def reset(self, batch_size: int) -> None:
        """Empty every row for a new generation of ``batch_size`` rows; buffers and captured graphs
        are kept when the batch size is the current one (stale slots are rewritten before they are read)."""
        batch_size = as_int("batch_size", batch_size, minimum=1)
        if batch_size != self.batch_size:
            self._allocate(batch_size)
        else:
            self.fed = torch.zeros_like(self.fed)

    def feed(self, chunks: list[list[int]], *, last: int | None = None) -> torch.Tensor:
        """Append each row's next tokens (right-aligned, as :meth:`RaggedCache.feed`); logits (B, T, V), or
        (B, last, V) for the last ``last`` columns only (the head applied to those alone)."""
        if len(chunks) != self.batch_size:
            raise ValueError(f"chunks must have one entry per row ({self.batch_size}), got {len(chunks)}")
        width = max((len(c) for c in chunks), default=0)
        if width == 0:
            raise ValueError("feed needs at least one token in some row")
        tokens = torch.tensor([[0] * (width - len(c)) + list(c) for c in chunks], dtype=torch.long, device=self.device)
        counts = torch.tensor([len(c) for c in chunks], dtype=torch.long, device=self.device)
        return self._feed(tokens, counts, graphed=False, last=last)

    def feed_tensor(self, tokens: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """A loop step: (B, T) right-aligned tokens, ``counts`` real ones per row; replayed from a graph
        when ``cuda_graphs``."""
        return self._feed(tokens, counts, graphed=self.cuda_graphs)

    def _feed(self, tokens: torch.Tensor, counts: torch.Tensor, *, graphed: bool, last: int | None = None) -> torch.Tensor:
        width = tokens.shape[1]
        offset = torch.arange(width, device=self.device) - (width - counts).unsqueeze(-1)
        positions = torch.where(offset >= 0, self.fed.unsqueeze(-1) + offset, self.scratch)
        logits = self._replay(tokens, positions) if graphed else self._forward(tokens, positions, last)
        self.fed = self.fed + counts
        return logits

    def rollback(self, keep: torch.Tensor) -> None:
        """Keep context positions < keep[b] in row b (slots beyond are rewritten before they are read)."""
        self.fed = torch.minimum(self.fed, keep)

    def select(self, rows: torch.Tensor) -> None:
        """Keep only the given rows; captured graphs belong to the old buffers and are dropped."""
        self.keys = [k[rows] for k in self.keys]
        self.values = [v[rows] for v in self.values]
        self.fed = self.fed[rows]
        self._graphs.clear()

    @torch.no_grad()
    def _forward(self, tokens: torch.Tensor, positions: torch.Tensor, last: int | None = None) -> torch.Tensor:
        inner = self.model.model
        batch, width = tokens.shape
        hidden = inner.embed_tokens(tokens)
        cos, sin = inner.rotary_emb(hidden, positions)
        visible = (self.slots.view(1, 1, 1, -1) <= positions.view(batch, 1, width, 1))  # (B, 1, T, S)
        index = positions.view(batch, 1, width, 1).expand(batch, self.kv_heads, width, self.head_dim)
        for layer, keys, values in zip(self.layers, self.keys, self.values):
            attn = layer.self_attn
            x = layer.input_layernorm(hidden)
            q = attn.q_proj(x).view(batch, width, -1, self.head_dim).transpose(1, 2)
            k = attn.k_proj(x).view(batch, width, -1, self.head_dim).transpose(1, 2)
            v = attn.v_proj(x).view(batch, width, -1, self.head_dim).transpose(1, 2)
            q, k = self.apply_rotary(q, k, cos, sin)
            keys.scatter_(2, index, k.to(keys.dtype))
            values.scatter_(2, index, v.to(values.dtype))
            out = _attention(q, keys, values, visible, attn.scaling)
            hidden = hidden + attn.o_proj(out.transpose(1, 2).reshape(batch, width, -1))
            hidden = hidden + layer.mlp(layer.post_attention_layernorm(hidden))
        return self.model.lm_head(inner.norm(hidden if last is None else hidden[:, -last:]))

    def _replay(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        key = tuple(tokens.shape)
        if key not in self._graphs:
            static_tokens, static_positions = tokens.clone(), positions.clone()
            stream = torch.cuda.Stream(self.device)
            stream.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(stream):  # warm-up off the capture; writes the same K/V the replay writes
                self._forward(static_tokens, static_positions)
            torch.cuda.current_stream(self.device).wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_logits = self._forward(static_tokens, static_positions)
            self._graphs[key] = (graph, static_tokens, static_positions, static_logits)
        graph, static_tokens, static_positions, static_logits = self._graphs[key]
        static_tokens.copy_(tokens)
        static_positions.copy_(positions)
        graph.replay()
        return static_logits.clone()


def static_cache_for_call(target_cache, target, batch: int, device, length: int, cuda_graphs: bool) -> StaticKVCache:
    """A new :class:`StaticKVCache` for ``target_cache="static"``, or the instance given, checked against
    this call (same model and device, room for ``length`` positions) and reset to ``batch`` rows."""
    if isinstance(target_cache, str):
        if target_cache != "static":
            raise ValueError(f"target_cache must be 'dynamic', 'static' or a StaticKVCache, got {target_cache!r}")
        return StaticKVCache(target, batch, device, max_length=length, cuda_graphs=cuda_graphs)
    if not isinstance(target_cache, StaticKVCache):
        raise TypeError(f"target_cache must be 'dynamic', 'static' or a StaticKVCache, got {type(target_cache).__name__}")
    if target_cache.model is not target:
        raise ValueError("target_cache was built for another model than target")
    if target_cache.device != device:
        raise ValueError(f"target_cache is on {target_cache.device}, the target on {device}")
    if target_cache.max_length < length:
        raise ValueError(f"target_cache holds max_length={target_cache.max_length} positions; this call may reach {length} "
                         "(the longest context it will hold)")
    if cuda_graphs and not target_cache.cuda_graphs:
        raise ValueError("cuda_graphs=True, but the target_cache given was built with cuda_graphs=False")
    target_cache.reset(batch)
    return target_cache
