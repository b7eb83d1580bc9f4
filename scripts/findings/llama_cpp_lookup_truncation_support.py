"""llama-cpp-python 0.3.36's prompt lookup (K = 4) FAILed per token under truncating samplers on 2026-11-30 (TV 0.1
cells of ``scripts.matrix.llama_cpp_tokens``): at top-k (T = 0.7, top_k = 2, top_p = 0.8) 8 of 1,024 emitted tokens, at
min-p (T = 0.7, top_p = 0.8, min_p = 0.2) 3 of 512, have probability 0 in the law of llama.cpp without a draft
(:class:`LlamaCppOracle`, one token at a time), whose controls PASSed at 0.1.  The same question as llama-server's
draft model (:mod:`scripts.findings.llama_server_draft_truncation_support`, whose probe this runs on these cells'
located tokens): llama-cpp-python's ``Llama.generate`` evaluates the last token and the drafts in one batch and samples
every position from that batch's rows, keeping a draft while the sample equals it (lossless in exact arithmetic, B18's
processors aside) - does the batch move a located token across the truncation's boundary?  ::

    HF_HUB_OFFLINE=1 .venv-llama/bin/python -m scripts.findings.llama_cpp_lookup_truncation_support

Exits 1 when a verification-shaped batch keeps a located token that one token at a time cuts, 0 otherwise.  The
top-k cell's report lists 3 of its 8 tokens (the rest are not located by prefix); every listed one is probed.
"""

from __future__ import annotations

from scripts.findings.llama_server_draft_truncation_support import probe

CASES = [  # (setting, prompt index as the report counts, answer prefix, the emitted token of probability 0)
    ("top-k", 1, [5056, 216, 34, 32, 11180, 34210, 25782, 2618], 635),
    ("top-k", 1, [60, 23, 447, 5494, 25782, 2618, 635, 3806, 25782, 303, 23, 1185, 773, 1264], 25782),
    ("top-k", 1, [60, 23, 447, 5494, 25782, 2618, 635, 3806, 25782, 303, 23, 1185, 773, 1264, 25782, 303, 23, 1185, 773,
                  367, 303, 23, 447, 5494, 25782, 303, 23, 447, 5494, 30], 198),
    ("min-p", 1, [5056], 47116),
    ("min-p", 1, [5056, 47116, 367, 2618, 3317, 25782, 303, 23, 1185, 773, 25782, 216, 34, 36, 32, 6381, 367, 303, 27642,
                  26364, 28, 2618, 3317, 25782, 303, 23, 1185, 773, 1264, 2618, 8055], 252),
    ("min-p", 3, [2767, 2644, 2644, 2644], 287),
]


def main() -> int:
    return probe(CASES)


if __name__ == "__main__":
    raise SystemExit(main())
