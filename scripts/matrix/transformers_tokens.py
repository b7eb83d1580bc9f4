"""transformers in the matrix, per token (issue 38): prompt lookup and assisted generation under every setting of
:mod:`.transformers` (the A/B cells' settings and their user logits processor), judged by
:func:`specdec.conformance.token_cells.run_token_cell` through :mod:`.token_driver`, every emitted token counted.

The model is the A/B cells' tiny seeded Llama pair (``fixtures.models.tiny_pair``, V = 8: transformers' own
``generate``, candidate generators and processors run as on any model).  SmolLM2 through transformers decodes about 12
tokens a second on one of these cores (measured 2026-11-29: 128 tokens in 10.5 s without speculation, 12.1 s with
prompt lookup, 18.0 s assisted by itself), so a side of the 35,000 tokens a per-token TV of 0.03 takes would take 50
minutes; the tiny pair takes a few.  Its prompts are :mod:`.token_prompts`' three chat-templated workload prompts
with every id reduced modulo 8 (equal ids stay equal: a repeated phrase stays a repeat, so prompt lookup drafts where
the text repeats, and more often, as the small vocabulary adds repeats), then the A/B cells' cat/dog prompt in the
tiny vocabulary (" cat" -> 5, " dog" -> 7: the settings' bias, bad words and stop token act on its words).

Per setting: the control (``generate`` without speculation, :class:`specdec.adapters.hf.HFGenerateDecoder`) against
:class:`specdec.adapters.hf_oracle.HFSettingsOracle` (transformers' own processors and warpers on the model's full
rows, float64 softmax: floor 1e-5), run once and shared by the methods; then each method against the same oracle.
Presence and frequency penalties, one sample per request and unseeded requests are ``REFUSED`` by the adapter
(transformers has only ``repetition_penalty``; the adapter seeds each row itself).  Run in the main environment::

    HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.matrix.transformers_tokens [--tv 0.03] [--method lookup assisted] [--only SETTING ...] [--resume]

The cells go to ``docs/data/matrix/transformers-tokens.json``; ``--resume`` continues a stopped run at the next
unfinished cell.
"""

from __future__ import annotations

from .token_driver import TokenMatrix, run_matrix
from .token_prompts import token_prompts
from .transformers import ENGINE, METHODS, PROMPT, VOCAB, all_settings, builder, tiny_models


def tiny_prompts() -> tuple[tuple[int, ...], ...]:
    """The workload's chat-templated prompts with every id modulo :data:`VOCAB`, then the tiny cat/dog prompt."""
    workload = token_prompts()[:-1]  # the last is SmolLM2's cat/dog prompt: the tiny one replaces it
    return tuple(tuple(token % VOCAB for token in prompt) for prompt in workload) + (tuple(PROMPT),)


MATRIX = TokenMatrix(__doc__, ENGINE, "transformers", METHODS, all_settings(), "transformers-tokens.json",
                     seconds_per_cell=100,  # 69-177 s a cell at TV 0.03, the setting's control in its first (2026-11-29)
                     prompts=tiny_prompts)


def build(method, settings):
    return builder(method)(settings)


def oracle_of(settings):
    from specdec.adapters.hf_oracle import HFSettingsOracle

    return HFSettingsOracle(tiny_models()[0], settings=settings)  # the target the subjects run


def main(argv=None) -> int:
    import torch

    torch.set_num_threads(1)  # the tiny model gains nothing from threads (scripts.matrix.transformers)
    return run_matrix(MATRIX, build, oracle_of, argv)


if __name__ == "__main__":
    raise SystemExit(main())
