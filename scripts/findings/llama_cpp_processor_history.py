"""B18 - llama-cpp-python 0.3.36: with a draft model, logits processors are given the unverified drafts as history.

``Llama.generate`` evaluates the sampled token and its K drafts in one batch, then samples each drafted position
with ``self.sample(idx=...)``; the Python processor stage built by ``_init_sampler`` calls
``processor(self._input_ids, logits)``, and ``_input_ids`` is ``input_ids[:n_tokens]`` - every evaluated token,
the drafts after the sampled position included.  Without a draft the history of a token is its true prefix;
with one, at a drafted position it runs up to K tokens past it.  Any processor that reads the history (a
no-repeat rule, bad words, a minimum length, a grammar written as a processor) then acts on tokens that may
never be emitted, and the output law changes.  Penalties are not affected (llama.cpp's penalties sampler keeps
its own history of drawn tokens).

Run (no statistics needed: the processor records what it is given)::

    HF_HUB_OFFLINE=1 .venv-llama/bin/python -m scripts.findings.llama_cpp_processor_history

It prints, for one greedy request of 6 tokens with and without prompt lookup, the history length the processor
saw at each call against the prefix length of the token being sampled, and exits 1 when they differ (the bug is
present), 0 otherwise.
"""

from __future__ import annotations

import sys

PROMPT = [9786, 2767, 2767, 2644, 2767, 2644, 2644, 2767, 2644, 2767, 2767, 2767, 2644, 2644, 2767, 2644, 2767, 2644]
NEW_TOKENS = 6


def seen_lengths(num_pred_tokens: int | None) -> tuple[list[int], list[int]]:
    """(history lengths the processor saw, tokens emitted) for one greedy request."""
    from llama_cpp import Llama, LogitsProcessorList
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    from fixtures.llama_subjects import gguf_path

    draft = None if num_pred_tokens is None else LlamaPromptLookupDecoding(num_pred_tokens=num_pred_tokens)
    llm = Llama(model_path=str(gguf_path()), n_ctx=128, draft_model=draft, logits_all=draft is not None, verbose=False,
                n_threads=1, n_threads_batch=1)
    lengths: list[int] = []

    def record(history, logits):
        lengths.append(len(history))
        return logits

    emitted = []
    for token in llm.generate(PROMPT, temp=0.0, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0,
                              logits_processor=LogitsProcessorList([record])):
        emitted.append(int(token))
        if len(emitted) == NEW_TOKENS:
            break
    llm.close()
    return lengths, emitted


def main() -> int:
    expected = [len(PROMPT) + i for i in range(NEW_TOKENS)]  # the prefix of the i-th new token
    bug = False
    for k in (None, 4):
        lengths, emitted = seen_lengths(k)
        label = "no draft" if k is None else f"prompt lookup K={k}"
        print(f"{label:20s} emitted {emitted}")
        print(f"{'':20s} history lengths seen {lengths[:NEW_TOKENS]}, true prefix lengths {expected}")
        bug |= lengths[:NEW_TOKENS] != expected
    print("BUG: a processor saw unverified drafts as history" if bug else "no difference")
    return 1 if bug else 0


if __name__ == "__main__":
    sys.exit(main())
