"""What ``specdec bench run`` measures: a subject, draft lengths, batch sizes and prompt sets (issue 22).

A :class:`BenchPlan` expands into cases, one benchmark each (:meth:`BenchPlan.cases`):

* the task mix: every task kind at batch 1, ``prompts`` prompts per kind (:mod:`specdec.workload.prompts`),
  each K of ``ks``;
* under load: one fixed mix of ``mix_prompts`` prompts (round robin over the kinds, so every batch size
  decodes the same prompts) at every batch size of ``batches`` and every K: B prompts per call,
  B requests in flight;
* input length: prompts of about ``lengths`` tokens (real text of the retrieval and summarisation
  kinds, :func:`specdec.workload.prompts.length_prompts`), ``length_prompts`` of them, batch 1, every K.

The plan travels to the pytest run as JSON (``--specdec-bench-plan``), so the stored runs are
pytest-benchmark's own files and ``specdec bench gate`` / ``plot`` read them unchanged.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from .._validation import as_int
from .._validation.scalars import INT64_MAX


@dataclass(frozen=True)
class Case:
    prompt_set: str  # a task kind, "mix" or "len-<tokens>"
    num_draft_tokens: int
    batch: int

    @property
    def id(self) -> str:
        return f"{self.prompt_set}-K{self.num_draft_tokens}-B{self.batch}"


@dataclass
class BenchPlan:
    subject: str  # "package.module:attr"
    twin: str | None = None
    ks: list[int] = field(default_factory=lambda: [4])
    kinds: list[str] | None = None  # None: every kind; [] : none
    prompts: int = 1
    batches: list[int] = field(default_factory=list)
    mix_prompts: int = 64
    lengths: list[int] = field(default_factory=list)
    length_prompts: int = 2
    new_tokens: int = 24
    rounds: int = 3
    seed: int = 0
    device: str = "cpu"
    name: str | None = None
    tokenizer: str | None = None  # a tokenizer folder; None: SmolLM2-135M-Instruct's (the subjects' model)

    def __post_init__(self) -> None:
        from ..workload.prompts import KINDS, LENGTH_BUCKETS, PROMPTS

        if not isinstance(self.subject, str) or ":" not in self.subject:
            raise ValueError(f"subject must be 'package.module:attr', got {self.subject!r}")
        self.ks = [as_int("ks[]", k, minimum=1) for k in self.ks]
        if not self.ks:
            raise ValueError("ks must name at least one K >= 1")
        self.kinds = list(KINDS) if self.kinds is None else list(self.kinds)
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"kinds must be among {list(KINDS)}, got {unknown}")
        most = min(len(PROMPTS[k]) for k in KINDS)
        self.prompts = as_int("prompts", self.prompts, minimum=1, maximum=most)
        self.batches = [as_int("batches[]", b, minimum=1) for b in self.batches]
        total = sum(len(PROMPTS[k]) for k in KINDS)
        self.mix_prompts = as_int("mix_prompts", self.mix_prompts, minimum=1, maximum=total)
        self.lengths = [as_int("lengths[]", n, minimum=1) for n in self.lengths]
        bad = [n for n in self.lengths if n not in LENGTH_BUCKETS]
        if bad:
            raise ValueError(f"lengths must be among {list(LENGTH_BUCKETS)}, got {bad}")
        self.length_prompts = as_int("length_prompts", self.length_prompts, minimum=1)
        self.new_tokens = as_int("new_tokens", self.new_tokens, minimum=2)
        self.rounds = as_int("rounds", self.rounds, minimum=1)
        self.seed = as_int("seed", self.seed, minimum=0, maximum=INT64_MAX - total)  # call i of a case: seed + i, i < total
        if not (self.kinds or self.batches or self.lengths):
            raise ValueError("the plan measures nothing: give kinds, batches or lengths")

    def cases(self) -> list[Case]:
        out = [Case(kind, k, 1) for kind in self.kinds for k in self.ks]
        out += [Case("mix", k, b) for b in self.batches for k in self.ks]
        out += [Case(f"len-{n}", k, 1) for n in self.lengths for k in self.ks]
        return out

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "BenchPlan":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"the bench plan is not JSON ({error.msg})") from None
        if not isinstance(data, dict):
            raise ValueError(f"the bench plan must be a JSON object, got {type(data).__name__}")
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"the bench plan has unknown fields {sorted(unknown)}")
        return cls(**data)

    def describe(self) -> str:
        """One paragraph: the cases and how much decoding they are."""
        cases = self.cases()
        calls = {"kinds": len(self.kinds) * self.prompts, "mix": self.mix_prompts, "lengths": self.length_prompts}
        tokens = sum((calls["mix"] if c.prompt_set == "mix" else calls["lengths"] if c.prompt_set.startswith("len-")
                      else self.prompts) for c in cases) * self.new_tokens
        return (f"{len(cases)} benchmarks x {self.rounds} rounds: K in {self.ks}; "
                + (f"{len(self.kinds)} task kinds x {self.prompts} prompt(s) at batch 1; " if self.kinds else "")
                + (f"a mix of {self.mix_prompts} prompts at batch {self.batches}; " if self.batches else "")
                + (f"{self.length_prompts} prompts of ~{self.lengths} tokens; " if self.lengths else "")
                + f"{self.new_tokens} new tokens per prompt; about {2 * tokens * self.rounds:,} tokens decoded "
                "(both sides, every round) plus one-token latency calls")


def mix_prompts(tokenizer, count: int) -> list[list[int]]:
    """``count`` prompts taken round robin over the task kinds (first prompts first): the load sweep's one set."""
    from ..workload.prompts import KINDS, PROMPTS, prompt_ids

    per_kind = {kind: prompt_ids(tokenizer, kind, len(PROMPTS[kind])) for kind in KINDS}
    out: list[list[int]] = []
    index = 0
    while len(out) < count:
        for kind in KINDS:
            if index < len(per_kind[kind]) and len(out) < count:
                out.append(per_kind[kind][index])
        index += 1
    return out


def case_prompts(plan: BenchPlan, case: Case, tokenizer) -> list[list[int]]:
    """The token ids a case decodes."""
    from ..workload.prompts import length_prompts, prompt_ids

    if case.prompt_set == "mix":
        return mix_prompts(tokenizer, plan.mix_prompts)
    if case.prompt_set.startswith("len-"):
        return length_prompts(tokenizer, int(case.prompt_set[4:]), plan.length_prompts)
    return prompt_ids(tokenizer, case.prompt_set, plan.prompts)
