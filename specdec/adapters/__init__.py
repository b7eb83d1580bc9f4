"""Peers behind specdec's Protocols: one folder per peer (docs/peers.md).

* :mod:`.vllm` - vLLM 0.32: its rejection sampler, its in-process engine, its OpenAI server;
* :mod:`.llama_cpp` - llama.cpp through llama-cpp-python 0.3.36;
* :mod:`.openai` - any OpenAI-compatible server as a Decoder, and the server process specdec starts;
* :mod:`.hf` - transformers' speculative sampling, assisted generation and prompt lookup; :mod:`.hf_oracle` - transformers
  ``generate``'s per-token law under a SamplingSettings record;
* :mod:`.flashinfer`, :mod:`.sglang` - their verification kernels (GPU);
* :mod:`._common` - what every adapter shares: the peer's version check, input checks, per-request seeds.

Every adapter is tested on the real package it adapts (``make peers``) and refuses versions it was not
tested on.
"""
