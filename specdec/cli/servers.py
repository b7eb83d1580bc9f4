"""``specdec check`` on decoders it cannot import: running servers, and two decoders against each other.

* ``--server URL --model NAME``: an OpenAI-compatible ``/v1/completions`` endpoint as the subject
  (:class:`specdec.adapters.openai.client.OpenAICompletionsDecoder`), checked against ``--target``
  (a law specdec computes) or against a reference;
* ``--reference MODULE:ATTR`` or ``--reference-server URL``: the two-sample check
  (:func:`specdec.conformance.check_ab`), for laws specdec cannot compute: speculation on vs off;
* ``--oracle-server URL``: a vLLM server without speculation, as the law oracle of every token the subject
  emits (:func:`specdec.conformance.check_tokens`, :class:`specdec.adapters.vllm.server_oracle.VLLMServerOracle`)
  and as the reference of the A/B check beside it: two reports under one family alpha, half each.

Prompts (``--prompts`` ids, ``--prompt`` text, ``--prompts-file``, or none: the embedded workload) are tokenised by
the ``--server``'s own ``/tokenize`` or ``--tokenizer``: :mod:`specdec.cli.prompt_sources`.

Sampling settings (``--temperature``, ``--top-p``, ``--top-k``) are sent with every request to a
server; a ``--target`` must be warped the same way.
"""

from __future__ import annotations

import math

from ._args import UsageError


def add_arguments(check) -> None:
    group = check.add_argument_group("servers and two-sample (A/B) checks")
    group.add_argument("--server", metavar="URL", help="an OpenAI-compatible server (e.g. http://127.0.0.1:8000) as the subject, instead of SUBJECT")
    group.add_argument("--model", help="--server: the model name the server serves")
    group.add_argument("--reference", metavar="MODULE:ATTR", help="a second decoder: check SUBJECT against it (two samples, H1-H3) instead of --target")
    group.add_argument("--reference-server", metavar="URL", help="a second server as the reference (two samples)")
    group.add_argument("--reference-model", help="--reference-server: its model name (default: --model)")
    group.add_argument("--oracle-server", metavar="URL",
                       help="a vLLM server without speculation: check every token of --server against its per-token laws "
                            "(check_tokens) and --server against it (A/B), half the family alpha each")
    group.add_argument("--oracle-model", help="--oracle-server: its model name (default: --model)")
    group.add_argument("--oracle-length", type=int, default=16,
                       help="--oracle-server: tokens per answer of the per-token check, every one tested (default 16)")
    group.add_argument("--top-logprobs", type=int, default=20,
                       help="--oracle-server: log-probabilities asked per position (at most the server's --max-logprobs; default 20)")
    group.add_argument("--n", type=int, help="decoders: samples per prompt (per side for two samples), instead of planning for --tv")
    group.add_argument("--temperature", type=float, default=1.0, help="servers: sampling temperature sent with every request (default 1)")
    group.add_argument("--top-p", type=float, help="servers: top-p sent with every request")
    group.add_argument("--top-k", type=int, help="servers: top-k sent with every request")
    group.add_argument("--samples-per-request", type=int, default=16, help="servers: samples asked per request (n) (default 16)")
    group.add_argument("--requests-in-flight", type=int, default=8, help="servers: requests at once (default 8)")
    group.add_argument("--request-timeout", type=float, default=120.0, help="servers: seconds one request may take (default 120)")


def validate(args) -> None:
    """Server and A/B arguments (before any work)."""
    if args.server is not None:
        if args.subject is not None:
            raise UsageError("give either SUBJECT or --server, not both")
        if not args.model:
            raise UsageError("--server needs --model, the name the server serves")
        if args.kind not in (None, "decoder"):
            raise UsageError(f"--server is a decoder; --kind {args.kind} does not apply")
        args.kind = "decoder"
    if args.reference_server is not None and args.reference is not None:
        raise UsageError("give either --reference or --reference-server, not both")
    if args.reference_server is not None and not (args.reference_model or args.model):
        raise UsageError("--reference-server needs --reference-model (or --model)")
    if args.oracle_server is not None:
        if args.server is None:
            raise UsageError("--oracle-server checks a --server (every token it emits against the oracle's law)")
        if args.reference is not None or args.reference_server is not None or args.target is not None:
            raise UsageError("--oracle-server is the reference of its A/B check: give it without --reference, --reference-server "
                             "or --target")
        if args.oracle_length < 1 or args.top_logprobs < 1:
            raise UsageError(f"--oracle-length and --top-logprobs must be >= 1, got {args.oracle_length} and {args.top_logprobs}")
    if args.n is not None and args.n < 1:
        raise UsageError(f"--n must be >= 1, got {args.n}")
    if not (math.isfinite(args.temperature) and args.temperature >= 0):
        raise UsageError(f"--temperature must be >= 0, got {args.temperature}")
    if args.top_p is not None and not (0 < args.top_p <= 1):
        raise UsageError(f"--top-p must be in (0, 1], got {args.top_p}")
    if args.top_k is not None and args.top_k < 1:
        raise UsageError(f"--top-k must be >= 1, got {args.top_k}")
    for name in ("samples_per_request", "requests_in_flight"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not (args.request_timeout > 0):
        raise UsageError(f"--request-timeout must be a positive number of seconds, got {args.request_timeout}")


def two_sample(args) -> bool:
    return args.reference is not None or args.reference_server is not None or getattr(args, "oracle_server", None) is not None


def _sampling(args):
    from ..warpers import SamplingConfig

    return SamplingConfig(temperature=args.temperature, top_p=args.top_p, top_k=args.top_k)


def server_decoder(args, url: str, model: str):
    from ..adapters.openai.client import OpenAICompletionsDecoder

    sampling = _sampling(args)
    try:
        return OpenAICompletionsDecoder(url, model, sampling=sampling, samples_per_request=args.samples_per_request,
                                        max_in_flight=args.requests_in_flight, request_timeout=args.request_timeout, name=url)
    except (TypeError, ValueError) as error:
        raise UsageError(f"--server {url!r}: {error}") from None


def reference_decoder(args, resolve, conforming):
    if args.oracle_server is not None:
        return server_decoder(args, args.oracle_server, args.oracle_model or args.model)
    if args.reference_server is not None:
        return server_decoder(args, args.reference_server, args.reference_model or args.model)
    return conforming(args.reference, resolve("--reference", args.reference), "decoder")


def ab_report(args, subject, reference, planned: dict):
    from ..conformance import check_ab

    if args.server is not None or args.reference_server is not None:  # one wave of requests per call
        planned["rows_per_call"] = 2 * args.samples_per_request * args.requests_in_flight
    return check_ab(subject, reference, args.prompts, length=args.length, eos_token_id=args.eos, n=args.n,
                    max_new_tokens=args.max_new_tokens, **planned)


def oracle_runs(args, subject, reference, planned: dict) -> list:
    """``--oracle-server``: the per-token report and the A/B report, each at half the family alpha (two reports, one
    family: their false alarms together stay within ``--family-alpha``)."""
    from ..adapters.vllm.server_oracle import VLLMServerOracle
    from ..conformance import check_tokens

    model = args.oracle_model or args.model
    try:
        oracle = VLLMServerOracle(args.oracle_server, model, sampling=_sampling(args), top_logprobs=args.top_logprobs,
                                  request_timeout=args.request_timeout, max_in_flight=args.requests_in_flight)
    except (TypeError, ValueError) as error:
        raise UsageError(f"--oracle-server {args.oracle_server!r}: {error}") from None
    half = dict(planned, family_alpha=planned["family_alpha"] / 2)
    name = planned["name"]
    tokens = dict(half, name=f"{name}, per token vs {args.oracle_server}")
    ab = dict(half, name=f"{name} vs {args.oracle_server}")
    return [lambda: check_tokens(subject, oracle, args.prompts, length=args.oracle_length, eos_token_id=args.eos, n=args.n,
                                 rows_per_call=args.samples_per_request * args.requests_in_flight, **tokens),
            lambda: ab_report(args, subject, reference, ab)]
