"""mistral.rs 0.6.0: a request's ``logit_bias`` changes nothing - the sampled tokens are those of the unbiased law.

Found 2026-12-07 while probing the adapter's byte tokens: ``ChatCompletionRequest(logit_bias={id: 100.0})`` (the
OpenAI meaning: ``bias`` added to the token's logit before sampling, so +100 makes it certain) left the first new
token's law as it was.  This script asks a Runner without a draft (SmolLM2-135M-Instruct Q4_1 on CPU, the default
chat template, T = 1) for the first new token of ``ROWS`` requests, then of ``ROWS`` requests that add +100 to the
logit of the token ranked third in the first answer's ``top_logprobs`` (about 25 % there).  A bias that is applied
makes all ``ROWS`` biased answers that token; the bug gives it in about a quarter of them, as without the bias.

Run::

    HF_HUB_OFFLINE=1 .venv-mistralrs/bin/python -m scripts.findings.mistralrs_logit_bias_ignored

It prints the answers with and without the bias and exits 1 when fewer than ``ROWS`` biased answers are the biased
token (the bug is present: with a bias of +100 its probability is 1 - 1e-40 or so), 0 otherwise.  About a minute on
a 2-core machine.  The adapter (``specdec.adapters.mistralrs.settings_map``) refuses a logit bias for this reason.
"""

from __future__ import annotations

import collections
import os
import sys

PROMPT_TEXT = "Once upon a time, there was a"
ROWS = 12
BIAS = 100.0

_KEPT = []  # mistral.rs 0.6.0: a Runner built after another was dropped fails its dummy run ("Engine is dead"): keep them


def main() -> int:
    from importlib import metadata

    from mistralrs import ChatCompletionRequest, Runner, Which

    from specdec.decoding.models import GGUF_FILE, _gguf_dir

    path = str(_gguf_dir() / GGUF_FILE)
    runner = Runner(which=Which.GGUF(quantized_model_id=os.path.dirname(path), quantized_filename=os.path.basename(path)),
                    token_source="none")
    _KEPT.append(runner)
    messages = [{"role": "user", "content": PROMPT_TEXT}]

    def first(logit_bias=None):
        request = ChatCompletionRequest(messages=messages, model="smollm2", max_tokens=1, temperature=1.0, logprobs=True,
                                        top_logprobs=3, logit_bias=logit_bias)
        return runner.send_chat_completion_request(request).choices[0].logprobs.content[0]

    print(f"mistralrs {metadata.version('mistralrs')}, no draft, T = 1, prompt {PROMPT_TEXT!r} (chat template)")
    record = first()
    third = record.top_logprobs[2]
    print("the first answer's top 3: " + ", ".join(f"{t.token} {t.bytes!r} (logprob {t.logprob:.3f})" for t in record.top_logprobs))
    plain = [first().token for _ in range(ROWS)]
    biased = [first({third.token: BIAS}).token for _ in range(ROWS)]
    print(f"no bias:                      {dict(collections.Counter(plain))}")
    print(f"logit_bias={{{third.token}: {BIAS}}} ({third.bytes!r}): {dict(collections.Counter(biased))}")
    hits = sum(token == third.bytes for token in biased)
    if hits < ROWS:
        print(f"BUG: the biased token in {hits} of {ROWS} answers, where a bias of +{BIAS:g} makes it certain")
        return 1
    print("no bug: every biased answer is the biased token")
    return 0


if __name__ == "__main__":
    sys.exit(main())
