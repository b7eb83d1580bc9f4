"""The mlx-lm worker: run as a script (``python mlx_worker.py CONFIG_JSON``) in a Python that has mlx and mlx-lm.

It imports neither specdec nor torch.  On start it loads the model (and the draft model) with ``mlx_lm.load`` and writes
one line ``{"ready": true, "mlx": ..., "mlx_lm": ..., "device": ..., "vocab": ..., "eos": [...]}``; then, for each
request line ``{"prompts", "seeds", "max_new_tokens", "sampler", "processors", "stop", "stop_at_eos"}`` (and
``num_draft_tokens``, the config's when absent) it answers one
line ``{"tokens", "drafted", "kept", "counts"}`` (or ``{"error": ...}``).  Each row: ``mx.random.seed(seed)``, a fresh
sampler and fresh logits processors (``mlx_lm.sample_utils.make_sampler`` / ``make_logits_processors``), then
``mlx_lm.generate.speculative_generate_step`` (with a draft model) or ``generate_step`` (without), read token by token
until ``max_new_tokens`` or a stop token (kept in the row).  ``reuse_prefill`` (request, default true): without logits
processors, a prompt's KV cache (prompt[:-1] through the model in one call, as the engines' own prefill) is computed
once and each row starts from a copy of it with the last prompt token (``prompt_cache=``, mlx-lm's own argument):
the same computation, done once - on mlx's CPU build a position costs about 0.12 s (its wheel bundles the reference
BLAS), so an 18-token prompt's prefill is 2 s per row otherwise.  Without a draft model and with processors every row
is prefilled (``generate_step`` adds the prefilled tokens to their history; ``speculative_generate_step``'s ``_prefill``
adds nothing, so there the copy is the same computation with processors too).  mlx's random state is global to the process: rows run one
after another, and no other caller shares the process.

Per speculative step (mlx-lm 0.32.2 ``speculative_generate_step``: ``num_draft = min(max_tokens - ntoks,
num_draft_tokens)`` drafts, then the target's tokens, ``from_draft`` True for each kept draft and False for the token
after them) the worker records: ``drafted`` - True at a position where a draft was verified (kept, or rejected and
replaced by the target's token), False at the bonus token after a fully kept block; ``kept`` - ``from_draft``; and
counts ``{"drafts": steps with drafts, "draft_tokens": drafts verified, "accepted_tokens": drafts kept}``.
"""

import json
import sys


def _versions():
    from importlib import metadata

    out = {}
    for name in ("mlx", "mlx-lm", "mlx-cpu"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


PREFILL_REUSE_MAX = 512  # speculative_generate_step prefills in chunks of 512 tokens, generate_step of 2048: one chunk


def _prefill(model, tokens, mx):
    """[(keys, values, offset)] per layer after ``tokens`` went through ``model`` in one call (the engines' prefill)."""
    from mlx_lm.models.cache import make_prompt_cache

    cache = make_prompt_cache(model)
    model(mx.array(tokens, dtype=mx.uint32)[None], cache=cache)
    mx.eval([c.state for c in cache])
    # sliced to the offset: a copy's first update then concatenates new arrays and never writes into these
    return [(c.keys[..., : c.offset, :], c.values[..., : c.offset, :], c.offset) for c in cache]


def _cache(states):
    from mlx_lm.models.cache import KVCache

    out = []
    for keys, values, offset in states:
        c = KVCache()
        c.keys, c.values, c.offset = keys, values, offset
        out.append(c)
    return out


def _row(gen_step, spec_step, model, draft, mx, prompt, seed, request, make_sampler, make_logits_processors, k,
         prefills=None):
    mx.random.seed(int(seed))
    sampler_kw = dict(request["sampler"])
    processors_kw = dict(request["processors"])
    if "logit_bias" in processors_kw:
        processors_kw["logit_bias"] = {int(t): float(b) for t, b in processors_kw["logit_bias"]}
    sampler = make_sampler(**sampler_kw)
    processors = make_logits_processors(**processors_kw) or None
    n = int(request["max_new_tokens"])
    stop = set(request["stop"])
    tokens, drafted, kept = [], [], []
    counts = {"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0}
    if n == 0:
        return tokens, drafted, kept, counts
    cache = None
    if prefills is not None and (processors is None or draft is not None) and 1 < len(prompt) <= PREFILL_REUSE_MAX:
        # the prompt's KV cache, computed once per prompt and copied: prompt[:-1] through the model as the engine's own
        # prefill does (one chunk), then the engine runs on the last token alone.  Not for generate_step with logits
        # processors: it adds the prefilled tokens to their history (speculative_generate_step's _prefill does not).
        key = tuple(prompt)
        if key not in prefills:
            prefills[key] = [_prefill(model, prompt[:-1], mx)] + ([] if draft is None else [_prefill(draft, prompt[:-1], mx)])
        cache = [c for states in prefills[key] for c in _cache(states)]
        prompt = prompt[-1:]
    prompt = mx.array(prompt, dtype=mx.uint32)
    if draft is None:
        steps = ((t, False) for t, _ in gen_step(prompt, model, max_tokens=n, sampler=sampler, logits_processors=processors,
                                                 prompt_cache=cache))
    else:
        steps = ((t, d) for t, _, d in spec_step(prompt, model, draft, num_draft_tokens=k, max_tokens=n, sampler=sampler,
                                                   logits_processors=processors, prompt_cache=cache))
    block = None  # drafts of the current step: (num_draft, kept so far)
    for token, from_draft in steps:
        token = int(token)
        if draft is not None:
            if block is None:
                num_draft = min(n - len(tokens), k)
                block = [num_draft, 0]
                if num_draft:
                    counts["drafts"] += 1
                    counts["draft_tokens"] += num_draft
            if from_draft:
                block[1] += 1
                counts["accepted_tokens"] += 1
                drafted.append(True)
            else:
                drafted.append(block[1] < block[0])  # replaced a rejected draft; a bonus token otherwise
                block = None
        else:
            drafted.append(False)
        kept.append(bool(from_draft))
        tokens.append(token)
        if token in stop or len(tokens) >= n:
            break
    return tokens, drafted, kept, counts


def main(argv):
    config = json.loads(argv[1])
    import mlx.core as mx
    from mlx_lm import load
    from mlx_lm.generate import generate_step, speculative_generate_step
    from mlx_lm.sample_utils import make_logits_processors, make_sampler

    model, tokenizer = load(config["model"])
    draft = None
    if config.get("draft_model"):
        draft = model if config["draft_model"] == config["model"] else load(config["draft_model"])[0]
    k = int(config.get("num_draft_tokens") or 0)
    vocab = int(model.args.vocab_size)
    eos = sorted(int(t) for t in tokenizer.eos_token_ids)
    prefills = {}
    ready = {"ready": True, "versions": _versions(), "device": str(mx.default_device()), "vocab": vocab, "eos": eos,
             "same_draft": draft is model, "rope_theta": float(getattr(model.args, "rope_theta", 0.0))}
    out = sys.stdout
    out.write(json.dumps(ready) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            stop = list(request.get("stop", ()))
            if request.get("stop_at_eos"):
                stop += eos
            request["stop"] = stop
            sampler = request["sampler"]
            if sampler.get("top_k", 0) >= vocab:
                sampler["top_k"] = 0  # the whole vocabulary: apply_top_k refuses it
            answer = {"tokens": [], "drafted": [], "kept": [], "counts": {"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0}}
            for prompt, seed in zip(request["prompts"], request["seeds"]):
                tokens, drafted, kept, counts = _row(generate_step, speculative_generate_step, model, draft, mx, prompt, seed,
                                                     request, make_sampler, make_logits_processors,
                                                     int(request.get("num_draft_tokens") or k),
                                                     prefills if request.get("reuse_prefill", True) else None)
                answer["tokens"].append(tokens)
                answer["drafted"].append(drafted)
                answer["kept"].append(kept)
                for key, value in counts.items():
                    answer["counts"][key] += value
        except Exception as exc:  # the request's error goes back to the caller; the worker stays up
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
