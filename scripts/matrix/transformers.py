"""transformers in the matrix: prompt lookup (``prompt_lookup_num_tokens=4``) and assisted generation (a tiny
draft, K = 4) against ``generate`` without speculation, every setting of :mod:`.settings` plus a user logits
processor, on the tiny seeded Llama pair of ``fixtures.models`` (V = 8: real code paths, seconds per cell;
SmolLM2 through transformers takes seconds per answer on this CPU).  Run in the main environment::

    HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.matrix.transformers [--method lookup assisted] [--n 400] [--append]

The settings are those of the SmolLM2 engines with the words mapped to tiny tokens (" cat" -> 5, " dog" -> 7),
on a prompt of the same pattern.
"""

from __future__ import annotations

import specdec as sd
from fixtures.models import tiny_pair
from specdec.adapters.hf import HFAssistedDecoder, HFGenerateDecoder, HFPromptLookupDecoder
from specdec.adapters.hf_settings import generate_kwargs
from specdec.conformance.matrix import run_cell

from . import runner
from .settings import BASE, check_of, eos_of, logits_processor_setting, settings_for

ENGINE = "transformers"
METHODS = {"lookup": "prompt lookup K=4", "assisted": "assisted, tiny draft K=4"}
CAT, DOG, THIRD = 5, 7, 3
PROMPT = [CAT if t == 2644 or t == 9786 else DOG for t in
          [9786, 2767, 2767, 2644, 2767, 2644, 2644, 2767, 2644, 2767, 2767, 2767, 2644, 2644, 2767, 2644, 2767, 2644]]
SECONDS_PER_CELL = 40
VOCAB = 8  # the tiny pair's vocabulary
assert BASE  # the same base setting as the other engines


def all_settings() -> dict:
    # untruncated: at T = 0.7, top-p 0.8 the tiny law with the processor has one outcome (nothing to compare)
    return {**settings_for(CAT, DOG, THIRD), "user logits processor": logits_processor_setting(temperature=1.0, top_p=None)}


def tiny_models():
    """(target, draft): the tiny seeded Llama pair every transformers cell runs on (cached: read-only)."""
    return tiny_pair(0, vocab_size=VOCAB)


def builder(method: str):
    target, draft = tiny_models()

    def build(settings):
        generate_kwargs(settings)  # refuses by name before anything runs
        if method == "lookup":
            subject = HFPromptLookupDecoder(target, settings=settings, num_draft_tokens=4, max_ngram_size=3)
        else:
            subject = HFAssistedDecoder(target, settings=settings, assistant=draft, num_draft_tokens=4)
        return subject, HFGenerateDecoder(target, settings=settings)

    return build


def main(argv=None) -> int:
    import torch

    torch.set_num_threads(1)  # the tiny model gains nothing from threads; on shared cores OpenMP's spinning cost 100x
    settings = all_settings()
    args = runner.arguments(__doc__, 400, list(METHODS), list(settings), argv)

    def cell_of(number, method, name, budget):
        length = 2  # the tiny law is diffuse (V = 8): L = 2 keeps 64 sequences; prompt lookup drafts from the first token
        return run_cell(ENGINE, METHODS[method], name, settings[name], builder(method), check_of(settings[name]), prompts=[PROMPT], length=length,
                        max_new_tokens=length, n=args.n, tv=None, seed=3000 + number, budget=budget, keep=runner.keeper(ENGINE, method, name), rows_per_call=100,
                        eos_token_id=eos_of(settings[name]), name=f"{ENGINE}, {METHODS[method]}, {name}")

    plan = [(m, name) for m in args.method for name in (args.only or list(settings))]
    runner.run(plan, cell_of, file="transformers.json", engine="transformers", n=args.n, append=args.append, resume=args.resume,
               seconds_per_cell=SECONDS_PER_CELL, out=args.out, label=METHODS.get)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
