"""mlx-lm 0.32.2: with a draft model, the logits processors' history starts at the prompt's last token (issue 39).

Run with mlx and mlx-lm installed (``.venv-mlx``; ``make .venv-mlx/.installed``):

    HF_HUB_OFFLINE=1 .venv-mlx/bin/python scripts/findings/mlx_penalty_prompt_history.py [--n 20]

``mlx_lm.generate.generate_step`` adds the prompt to the history its logits processors read (its prefill loop:
``tokens = mx.concat([tokens, processed])``); ``speculative_generate_step`` does not (its ``_prefill`` runs the model on
prompt[:-1] and leaves ``prev_tokens`` at None), so at the first target position the processors see only the prompt's
last token.  A repetition (presence, frequency) penalty, whose window (``repetition_context_size``, default 20) reaches into
the prompt, then penalises other tokens with a draft model than without one: the law of the answer changes.

Part 1 records the history the repetition penalty receives at the first sampled position in each path (deterministic).
Part 2 samples the first token n times each way (seeds 0..n-1) at T = 0.7, top-p 0.8, repetition 1.5 after the 8-token
prompt " cat dog ..." (SmolLM2-135M-Instruct, float32, mlx's CPU build) and counts " dog" (id 2767).  Measured
2026-11-27: part 1 - 8 tokens without the draft model, 1 with it; part 2 (peers/test_mlx.py, n = 20 a side): " dog" 17
times with the draft model, 0 without (p = 5.4e-8; mlx-lm's own law given the prefix: 0.79 and below 0.01).
The draft model is the target itself (draft = target), so the difference can only come from speculative_generate_step.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

PROMPT = [2767, 2767, 2644, 2644, 2767, 2644, 2767, 2644]  # the last 8 tokens of fixtures.vllm_subjects.PROMPT
DOG = 2767


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="first tokens sampled each way (0: part 1 only)")
    args = parser.parse_args()
    import mlx.core as mx
    import mlx_lm
    from mlx_lm import load
    from mlx_lm.generate import generate_step, speculative_generate_step
    from mlx_lm.sample_utils import make_logits_processors, make_sampler

    from specdec.adapters.mlx.mlx_model import mlx_model_dir  # SmolLM2's copy with the rope_theta mlx-lm reads

    print(f"mlx-lm {mlx_lm.__version__}, device {mx.default_device()}")
    model, _ = load(str(mlx_model_dir()))
    prompt = mx.array(PROMPT, dtype=mx.uint32)

    def recorded(speculative: bool) -> list[int]:
        seen = []
        (penalty,) = make_logits_processors(repetition_penalty=1.5)

        def spy(tokens, logits):
            seen.append(tokens.tolist())
            return penalty(tokens, logits)

        sampler = make_sampler(temp=0.7, top_p=0.8)
        if speculative:
            steps = speculative_generate_step(prompt, model, model, num_draft_tokens=4, max_tokens=1, sampler=sampler,
                                              logits_processors=[spy])
        else:
            steps = generate_step(prompt, model, max_tokens=1, sampler=sampler, logits_processors=[spy])
        first = next(iter(steps))[0]
        return seen, int(first)

    plain, _ = recorded(False)
    drafted, _ = recorded(True)
    print(f"history at the first position without a draft model: {plain[0]}")
    # with a draft model the draft samples first (its call is recorded first), then the target's position 0
    print(f"histories with the draft model (draft's, then the target's): {drafted}")
    if args.n:
        counts = {}
        for speculative in (False, True):
            dogs = 0
            for seed in range(args.n):
                mx.random.seed(seed)
                dogs += recorded(speculative)[1] == DOG
            counts[speculative] = dogs
        print(f'first token " dog" in {counts[False]} of {args.n} without the draft model, {counts[True]} of {args.n} with it')
    return 0


if __name__ == "__main__":
    sys.exit(main())
