"""llama.cpp's own ``llama-speculative`` example behind the Decoder Protocol: one process per answer.

The binary is built from the llama.cpp sources vendored in llama-cpp-python 0.3.36's sdist (``TARGET=llama-speculative
scripts/build_llama_server.sh``, ``make llama-speculative``; llama.cpp commit ``0c1e570``), what many llama.cpp users copy.
Read in ``examples/speculative/speculative.cpp`` (``main``) of that commit:

* **Drafting**: the draft model (``-md``) runs its sampler chain (the target's settings) and proposes, at each of up
  to ``--spec-draft-n-max`` steps, ``cur_p->data[0]``, the *most likely* token of its law after
  ``common_sampler_get_candidates(smpl, true)`` sorts it - not the token its sampler drew.  With ``-np P > 1`` a
  branch splits while the next candidates hold more than ``--spec-draft-p-split`` (a tree of up to P sequences whose
  extra branches take the 2nd, 3rd... most likely tokens).
* **Verification at temperature > 0** ("stochastic verification"): at each position the target's law p (its chain's
  candidates, ``common_sampler_get_candidates``) and the draft's stored law q; a sequence is picked at random, its
  token x accepted if ``r <= p(x) / q(x)`` (r uniform on [0, 1)); on rejection p becomes the residual
  ``max(0, p - q)`` renormalised - the two candidate arrays are sorted by id and subtracted *element by element*,
  which pairs the same token only when both hold the whole vocabulary (no truncation) - and the next sequence is
  tried against it; when every sequence is rejected, the token is drawn from the (residual) p with
  ``std::discrete_distribution``.  This is the rejection rule of docs/reference.md F1, lossless only for a draft
  token *drawn from q*; here x = argmax q, a deterministic draft, for which the lossless rule takes q as the point mass
  on x (E5: accept with p(x), residual p without x) - the example uses the draft's softmax instead.  (Its test
  ``r <= p/q`` is also the non-strict form of E3.)  The emitted law at a drafted position, one sequence, is
  ``P(x) = min(1, p(x)/q(x))`` and, for y != x, ``P(y) = (1 - min(1, p(x)/q(x))) * max(0, p(y) - q(y)) / Z``: not p
  (for p = q it is the point mass on argmax q - greedy decoding at T = 1).  **Expected: not lossless at T > 0**; the
  per-token and A/B checks must FAIL.  Undrafted positions (the first token of an answer, the token after the last
  draft of a round) are drawn from p itself.
* **Tree drafts abort** (``-np P > 1``, this build, CPU): when a branch splits, the target's batch holds coupled
  sequences, ``llama_decode`` fails ("split_equal: sequential split is not supported when there are coupled sequences
  in the input batch (you may need to use the -kvu flag)"), the example goes on and aborts in ``common_sampler_sample``
  (``GGML_ASSERT(logits != nullptr)``); ``-kvu`` is not an option of this example.  At T = 0 no branch splits (the
  draft's law is a point mass), so greedy tree drafting runs; at T > 0 a split, and so the abort, comes within a few
  tokens.  The adapter raises a RuntimeError saying so.
* **Verification at temperature 0** ("greedy verification"): the target's own sampler (argmax) picks the token; drafts
  are kept while equal to it: every token is the target's argmax given its prefix (up to the rounding of batched
  logits): greedy speculation on == off, row by row.
* **Without a draft** (``--spec-draft-n-max 0``, this adapter's ``num_draft_tokens=0``, the control): no sequence is
  ever active, so every token is drawn from p by the same ``std::discrete_distribution`` path: the target's law.
* **Ids and counters**: text on stdout, ids only in the ``-lv 5`` debug log (:mod:`.speculative_log`; their pieces are checked against the text printed); the prompt is
  text (:mod:`.speculative_vocab`: ids -> text -> the same ids, or refused).  The run goes on until it has emitted
  *more* than ``-n`` tokens (whole rounds), so the adapter asks ``-n max_new_tokens - 1`` and keeps the first
  ``max_new_tokens``; :meth:`speculation_counts` sums the example's ``n_accept`` and ``n_drafted`` (draft-model steps:
  drafted tokens with one sequence) and its rounds that verified a draft, over whole runs.
* **Cut logs**: the example logs through ``common_log``'s worker thread, and a run's last lines are now and then lost at
  exit (seen once in about 50 runs: the last round and the summary missing, exit status 0); such a run is run again
  with the same seed (the same tokens: one thread, a fixed seed), at most twice more (:attr:`reruns` counts them).
* **Randomness**: ``-s SEED`` seeds the example's ``std::default_random_engine`` (libstdc++'s ``minstd_rand0``, state
  modulo 2^31 - 1) and each sampler; each row gets its own seed in [1, 2^31 - 2], distinct within a call.

Settings (a :class:`specdec.SamplingSettings`): temperature, top-k, top-p and min-p map to the flags of the same name
(every other sampler of ``common_sampler_init``'s chain set to its neutral value); the rest is refused by name.
``ignore_eos=True`` (default) passes ``--ignore-eos``: the end-of-generation tokens are banned (logit -inf) in the
target's and the draft's chains, so an oracle must ban them too (:meth:`eog_ids`); with False a row ends after its
first end-of-generation token (the check's ``eos_token_id``).
"""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ..._validation import as_float, as_int, as_seed
from ...errors import ContractError, PeerVersionError
from ...sampling_settings import refuse_unsupported, settings_from
from .speculative_log import Transcript, parse_transcript
from .speculative_vocab import PromptText

__all__ = ["DEFAULT_BINARY", "ENGINE", "TESTED_BUILD", "SpeculativeExampleDecoder", "example_seeds", "speculative_argv"]

TESTED_BUILD = "0c1e570"  # the llama.cpp commit vendored in llama-cpp-python 0.3.36's sdist
DEFAULT_BINARY = Path(__file__).resolve().parents[3] / ".peers" / "llama-server" / "build" / "bin" / "llama-speculative"
ENGINE = f"llama.cpp's llama-speculative example ({TESTED_BUILD})"
_MINSTD_MODULUS = 2**31 - 1
_ATTEMPTS = 3  # runs of one seed when the log comes back cut
_TREE_ABORT = "split_equal: sequential split is not supported"
_REFUSED = {name: why for name, why in {
    "repetition_penalty": "not mapped (the example's penalties are untested here)",
    "presence_penalty": "not mapped (the example's penalties are untested here)",
    "frequency_penalty": "not mapped (the example's penalties are untested here)",
    "logit_bias": "not mapped (--logit-bias is untested here)",
    "min_new_tokens": "the example has no minimum of new tokens",
    "bad_words": "the example has no bad words",
    "allowed_token_ids": "the example has no allowed-token list",
    "stop_token_ids": "the example stops only at the vocabulary's end-of-generation tokens",
    "samples_per_request": "one answer per process",
    "seeded": "every run is seeded (-s); an unseeded run reads std::random_device",
    "logits_processor": "a separate process takes no Python processor",
}.items()}


def example_seeds(seed: int, count: int) -> list[int]:
    """``count`` distinct seeds in [1, 2^31 - 2] derived from ``seed``: ``minstd_rand0`` keeps its seed modulo 2^31 - 1
    (and 0 as 1), so seeds outside this range would alias."""
    stream = np.random.SeedSequence(as_seed(seed))
    out: list[int] = []
    batch = max(count, 1)
    while len(out) < count:
        for value in stream.generate_state(len(out) + batch, dtype=np.uint64)[len(out):]:
            s = 1 + int(value) % (_MINSTD_MODULUS - 1)
            if s not in out and len(out) < count:
                out.append(s)
        batch *= 2
    return out


def speculative_argv(binary, model, draft_model, prompt: str, *, n_predict: int, seed: int, settings, num_draft_tokens: int,
                     parallel: int = 1, p_split: float = 0.1, threads: int = 1, context: int = 512, ignore_eos: bool = True) -> list[str]:
    """The command line of one run (module docstring); ``settings`` a :class:`specdec.SamplingSettings` already checked."""
    argv = [str(binary), "-m", os.fspath(model), "-md", os.fspath(draft_model), "-p", prompt, "-n", str(n_predict), "-s", str(seed),
            "--spec-draft-n-max", str(num_draft_tokens), "--spec-draft-n-min", "0", "-np", str(parallel),
            "--spec-draft-p-split", repr(float(p_split)), "-c", str(context), "-t", str(threads), "-tb", str(threads),
            "-td", str(threads), "-tbd", str(threads), "-lv", "5", "--color", "off", "--log-colors", "off",
            "--temp", repr(float(settings.temperature)), "--top-k", str(int(settings.top_k or 0)),
            "--top-p", repr(float(settings.top_p or 1.0)), "--min-p", repr(float(settings.min_p or 0.0)),
            "--typical", "1", "--repeat-penalty", "1", "--presence-penalty", "0", "--frequency-penalty", "0",
            "--dry-multiplier", "0", "--xtc-probability", "0", "--top-nsigma", "-1", "--mirostat", "0"]
    return argv + (["--ignore-eos"] if ignore_eos else [])


class SpeculativeExampleDecoder:
    """``llama-speculative`` on the GGUF ``model_path`` (draft: ``draft_model``, default the same file) as a
    :class:`specdec.protocols.Decoder` and :class:`specdec.protocols.SpeculationCounter` (module docstring).

    ``num_draft_tokens`` (``--spec-draft-n-max``; 0: the control, no draft), ``parallel`` (``-np``: draft sequences
    of a tree), ``p_split`` (``--spec-draft-p-split``), ``threads`` per process, ``processes`` run side by side."""

    def __init__(self, model_path, *, draft_model=None, num_draft_tokens: int = 4, parallel: int = 1, p_split: float = 0.1,
                 sampling=None, settings=None, threads: int = 1, processes: int = 1, context: int = 512, ignore_eos: bool = True,
                 binary=DEFAULT_BINARY, timeout: float = 300.0, name: str | None = None, check_version: bool = True) -> None:
        self.model_path = os.fspath(model_path)
        self.draft_model = os.fspath(draft_model if draft_model is not None else model_path)
        self.num_draft_tokens = as_int("num_draft_tokens", num_draft_tokens, minimum=0)
        self.parallel = as_int("parallel", parallel, minimum=1)
        self.p_split = as_float("p_split", p_split, minimum=0.0, maximum=1.0)
        self.sampling_settings = settings_from(sampling, settings)
        refuse_unsupported(self.sampling_settings, ENGINE, _REFUSED)
        self.threads = as_int("threads", threads, minimum=1)
        self.processes = as_int("processes", processes, minimum=1)
        self.context = as_int("context", context, minimum=16)
        self.timeout = as_float("timeout", timeout, minimum=0.0, low_open=True)
        for flag, value in (("ignore_eos", ignore_eos), ("check_version", check_version)):
            if not isinstance(value, bool):
                raise TypeError(f"{flag} must be a bool, got {type(value).__name__}")
        self.ignore_eos, self.check_version = ignore_eos, check_version
        self.binary = Path(binary)
        self.name = name or (f"llama-speculative K={self.num_draft_tokens}" + (f" np={self.parallel}" if self.parallel > 1 else "")
                             if self.num_draft_tokens else "llama-speculative, no draft")
        self.prompts = PromptText(self.model_path)
        self._version: str | None = None
        self._counts = {"drafts": 0, "draft_tokens": 0, "accepted_tokens": 0}
        self.last_transcripts: list[Transcript] = []
        self.reruns = 0

    @property
    def settings(self) -> str:
        return (f"{self.name} ({self.sampling_settings.label}; {os.path.basename(self.model_path)}, draft "
                f"{os.path.basename(self.draft_model)}; p_split {self.p_split:g}; {self.processes} x {self.threads} threads)")

    def version(self) -> str:
        """The binary's ``--version`` text; a PeerVersionError when it is not the tested build."""
        if self._version is None:
            if not self.binary.exists():
                raise FileNotFoundError(f"{self.binary} not built (make llama-speculative)")
            done = subprocess.run([str(self.binary), "--version"], capture_output=True, text=True, timeout=60)
            text = (done.stdout + done.stderr).strip()
            if self.check_version and TESTED_BUILD not in text:
                raise PeerVersionError(f"specdec.adapters.llama_cpp.speculative_example was tested on llama-speculative built from "
                                       f"llama.cpp {TESTED_BUILD} (llama-cpp-python 0.3.36's sdist); {self.binary} says {text!r}")
            self._version = text
        return self._version

    def eog_ids(self) -> list[int]:
        """The ids ``--ignore-eos`` bans (:meth:`.speculative_vocab.PromptText.eog_ids`)."""
        return self.prompts.eog_ids()

    def run(self, prompt_text: str, max_new_tokens: int, seed: int) -> Transcript:
        """One process: the :class:`Transcript` of ``prompt_text`` answered with at least ``max_new_tokens`` tokens."""
        argv = speculative_argv(self.binary, self.model_path, self.draft_model, prompt_text, n_predict=max_new_tokens - 1, seed=seed,
                                settings=self.sampling_settings, num_draft_tokens=self.num_draft_tokens, parallel=self.parallel,
                                p_split=self.p_split, threads=self.threads, context=self.context, ignore_eos=self.ignore_eos)
        env = {**os.environ, "OMP_NUM_THREADS": str(self.threads)}
        for attempt in range(_ATTEMPTS):
            done = subprocess.run(argv, capture_output=True, timeout=self.timeout, env=env)
            log = done.stderr.decode("utf-8", errors="replace")
            if done.returncode != 0:
                hint = (" - a tree draft (-np > 1) split into coupled sequences, which this build's KV cache cannot decode "
                        "(and the example takes no -kvu)" if _TREE_ABORT in log else "")
                raise RuntimeError(f"llama-speculative exited with {done.returncode} (seed {seed}){hint}: {log[-1500:]}")
            try:
                transcript = parse_transcript(log)
                break
            except ContractError:
                if attempt + 1 == _ATTEMPTS:
                    raise
                self.reruns += 1  # the log's tail was lost at exit: the same seed again (the same tokens)
        printed = self.prompts.llm.detokenize(list(transcript.tokens), special=True)
        if printed not in done.stdout:  # the ids read from the log are the text the example printed
            raise ContractError(f"llama-speculative (seed {seed}) printed text that does not hold the pieces of the ids in its log "
                                f"({printed[:80]!r}...): the log was misread")
        if self.ignore_eos and len(transcript.tokens) < max_new_tokens:
            raise RuntimeError(f"llama-speculative emitted {len(transcript.tokens)} tokens, fewer than {max_new_tokens} (seed {seed}; "
                               "an end-of-generation token without ignore_eos?)")
        return transcript

    def __call__(self, prompts, max_new_tokens: int, seed: int) -> list[list[int]]:
        max_new_tokens = as_int("max_new_tokens", max_new_tokens, minimum=1)
        texts = [self.prompts.text(p, row) for row, p in enumerate(prompts)]
        self.version()
        seeds = example_seeds(seed, len(texts))
        with ThreadPoolExecutor(max_workers=self.processes) as pool:
            transcripts = list(pool.map(lambda job: self.run(job[0], max_new_tokens, job[1]), zip(texts, seeds)))
        for t in transcripts:
            if self.num_draft_tokens:
                self._counts["drafts"] += len(t.rounds) - 1
            self._counts["draft_tokens"] += t.n_drafted
            self._counts["accepted_tokens"] += t.n_accept
        self.last_transcripts = transcripts
        rows = [list(t.tokens[:max_new_tokens]) for t in transcripts]
        if not self.ignore_eos:  # the example goes on to the end of the round: a row ends at its first end-of-generation token
            eog = set(self.eog_ids())
            rows = [row[:next((i + 1 for i, token in enumerate(row) if token in eog), len(row))] for row in rows]
        return rows

    def speculation_counts(self) -> dict | None:
        return dict(self._counts) if self.num_draft_tokens else None

    def close(self) -> None:
        self.prompts.close()

    def __repr__(self) -> str:
        return f"SpeculativeExampleDecoder({self.settings})"
