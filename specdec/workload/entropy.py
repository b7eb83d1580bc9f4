"""The prompt set by the entropy of its answers (issue 33, item 6; SPEED-Bench's low / mixed / high buckets).

A prompt's **answer entropy** is the mean, over the first ``new_tokens`` tokens of the target's own greedy answer, of
the entropy in nats of the target's untempered next-token law at each position (:func:`answer_entropy`).  Low entropy
answers are near-deterministic (copying, short facts: drafts are accepted), high entropy ones are open (chat,
summaries in the model's words).  The buckets are fixed thresholds on it (:data:`THRESHOLDS`, nats), chosen on this
prompt set with SmolLM2-135M-Instruct so that each bucket holds prompts of at least three task kinds (the set's
answer entropies run from 0.59 to 3.89 nats, terciles 1.26 and 1.93; translation is high throughout); the values per prompt
are computed once by ``python -m scripts.prompt_entropy`` and kept in :mod:`.entropy_data` (with the model and the
commit they were computed at), so a benchmark row is tagged without running the model again.
"""

from __future__ import annotations

import torch

from .._validation import as_int

__all__ = ["BUCKETS", "THRESHOLDS", "answer_entropy", "bucket_of", "kind_entropy", "prompt_bucket"]

BUCKETS = ("low", "mixed", "high")
THRESHOLDS = (1.0, 1.9)  # nats: below the first "low", above the second "high", between "mixed"


@torch.no_grad()
def answer_entropy(model, prompt: list[int], new_tokens: int = 24) -> dict:
    """{"mean", "per_token", "answer"}: the target's greedy answer of ``new_tokens`` tokens after ``prompt`` and the
    entropy (nats, float64) of its untempered law at each answer position."""
    new_tokens = as_int("new_tokens", new_tokens, minimum=1)
    device = next(model.parameters()).device
    ids = torch.tensor([list(prompt)], device=device)
    entropies, answer, past = [], [], None
    for _ in range(new_tokens):
        out = model(ids if past is None else ids[:, -1:], past_key_values=past, use_cache=True)
        past = out.past_key_values
        logp = torch.log_softmax(out.logits[0, -1].double(), dim=-1)
        entropies.append(float(-(logp.exp() * logp).sum()))
        token = int(logp.argmax())
        answer.append(token)
        ids = torch.cat([ids, torch.tensor([[token]], device=device)], dim=1)
    return {"mean": sum(entropies) / len(entropies), "per_token": entropies, "answer": answer}


def bucket_of(mean_entropy: float) -> str:
    """"low", "mixed" or "high" for a mean answer entropy in nats (:data:`THRESHOLDS`)."""
    if mean_entropy != mean_entropy or mean_entropy < 0:
        raise ValueError(f"mean_entropy must be a non-negative number of nats, got {mean_entropy!r}")
    return "low" if mean_entropy < THRESHOLDS[0] else "high" if mean_entropy > THRESHOLDS[1] else "mixed"


def prompt_bucket(kind: str, index: int) -> str | None:
    """The bucket of prompt ``index`` of ``kind`` from the stored values (None when none is stored for it)."""
    from .entropy_data import ENTROPY

    values = ENTROPY.get(kind, [])
    return bucket_of(values[index]) if 0 <= index < len(values) else None


def kind_entropy(kind: str, count: int) -> dict | None:
    """{"bucket", "buckets", "mean_entropy"} of the first ``count`` prompts of a task kind (what a benchmark row of that
    kind decodes): ``bucket`` is theirs when they share one, else "several"; None for a prompt set with no stored values
    (a load mix, a length bucket)."""
    from .entropy_data import ENTROPY

    values = ENTROPY.get(kind, [])[:count]
    if not values or len(values) < count:
        return None
    buckets = [bucket_of(v) for v in values]
    return {"bucket": buckets[0] if len(set(buckets)) == 1 else "several", "buckets": buckets,
            "mean_entropy": sum(values) / len(values)}
