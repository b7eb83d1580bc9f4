"""The ``specdec_bench`` pytest fixture's work: paired rounds under pytest-benchmark, rows kept for the run.

:class:`SubjectBench` is what the fixture returns: ``specdec_bench.measure(subject, prompts, kind=...)``
runs :class:`specdec.bench.paired.PairedRounds` under pytest-benchmark's ``benchmark.pedantic`` (the
twin's pass as the untimed setup, the speculative pass timed), so the stored run holds the
speculative time under the test's name, the row in ``extra_info`` and the per-round ratios under
``extra_info["ratios"]`` (what ``specdec bench gate`` compares).  A subject's seeded counts are not
stored as exact metrics: an engine that batches requests may schedule them differently from run
to run.  :class:`BenchSession` holds what a session shares: the subjects built from a plan (a
factory is called once per K; decoders with a ``close()`` are closed at the end), their measured
costs, the tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .paired import PairedRounds
from .run_plan import BenchPlan, Case, case_prompts
from .pairs import CostedDecoder, import_object, resolve_subject

MAX_COST_K = 8  # costs are calibrated for K = 0..8 (F24's scan)


@dataclass
class BenchSession:
    """Subjects, costs and rows of one pytest session (the plugin keeps one)."""

    rows: list[dict] = field(default_factory=list)
    stamp: dict | None = None  # the run's commit and start (specdec.bench.latest.run_stamp), in every rows file
    _built: dict = field(default_factory=dict)
    _subjects: dict = field(default_factory=dict)
    _costs: dict = field(default_factory=dict)
    _tokenizers: dict = field(default_factory=dict)

    def subject(self, plan: BenchPlan, k: int):
        key = (plan.subject, plan.twin, k)
        if key not in self._subjects:
            obj = import_object(plan.subject)
            twin = import_object(plan.twin, what="--twin") if plan.twin else None
            self._subjects[key] = resolve_subject(obj, num_draft_tokens=k, twin=twin, name=plan.name, cache=self._built)
        return self._subjects[key]

    def costs(self, subject, batch: int):
        """The speculative decoder's own measured costs at ``batch`` rows (None when it cannot time itself)."""
        decoder = subject.speculative
        if not isinstance(decoder, CostedDecoder):
            return None
        key = (id(decoder), batch)
        if key not in self._costs:
            try:
                self._costs[key] = decoder.step_costs(MAX_COST_K, batch=batch)
            except TypeError:  # a step_costs without a batch parameter
                self._costs[key] = decoder.step_costs(MAX_COST_K) if batch == 1 else None
        return self._costs[key]

    def tokenizer(self, plan: BenchPlan):
        key = plan.tokenizer
        if key not in self._tokenizers:
            from transformers import AutoTokenizer

            if key is None:
                from ..decoding.models import smollm2_dir

                folder = str(smollm2_dir())
            else:
                folder = key
            self._tokenizers[key] = AutoTokenizer.from_pretrained(folder)
        return self._tokenizers[key]

    def close(self) -> None:
        """Close every decoder built (those with a ``close()``), each once."""
        seen = set()
        for subject in self._subjects.values():
            for decoder in (subject.speculative, subject.autoregressive):
                if id(decoder) not in seen and callable(getattr(decoder, "close", None)):
                    seen.add(id(decoder))
                    decoder.close()


@dataclass
class SubjectBench:
    """What the ``specdec_bench`` fixture returns (one per test)."""

    benchmark: object  # pytest-benchmark's fixture
    session: BenchSession
    record: object  # callable(row): the session's rows

    def measure(self, subject, prompts, *, kind: str, configuration: str | None = None, new_tokens: int = 24,
                rounds: int = 3, batch: int = 1, seed: int = 0, device="cpu", costs=None, warmup: bool = True) -> dict:
        """Measure ``subject`` (a :class:`~specdec.bench.pairs.BenchSubject`) on ``prompts``; the row (a dict).

        With benchmarks disabled (``--benchmark-disable``) pytest-benchmark runs one round."""
        paired = PairedRounds(subject, [list(p) for p in prompts], new_tokens, batch=batch, seed=seed, device=device)
        if warmup:  # first calls build engines, caches and kernels: not part of any round
            first = paired.calls[0][1]
            for decoder in (subject.autoregressive, subject.speculative):
                decoder(first, 2, seed)
        self.benchmark.pedantic(paired.speculative, setup=paired.baseline, rounds=rounds, iterations=1, warmup_rounds=0)
        paired.check_lengths()
        configuration = configuration or f"{subject.name}-K{subject.num_draft_tokens}"
        row = paired.row(configuration, kind, costs=costs)
        self.benchmark.extra_info.update(row)
        self.benchmark.extra_info["plan"] = {"new_tokens": new_tokens, "rounds": rounds, "prompts": len(prompts),
                                             "batch": batch, "device": str(device), "seed": seed}
        self.benchmark.extra_info["ratios"] = {"speedup": {"values": row["ratios"], "higher_is_better": True}}
        if not getattr(self.benchmark, "disabled", False):
            self.record(row)
        return row

    def measure_case(self, plan: BenchPlan, case: Case) -> dict:
        """One case of ``plan`` (what ``specdec bench run`` runs)."""
        subject = self.session.subject(plan, case.num_draft_tokens)
        prompts = case_prompts(plan, case, self.session.tokenizer(plan))
        configuration = f"{subject.name}-K{case.num_draft_tokens}" + (f"-B{case.batch}" if case.prompt_set == "mix" else "")
        return self.measure(subject, prompts, kind=case.prompt_set, configuration=configuration, new_tokens=plan.new_tokens,
                            rounds=plan.rounds, batch=case.batch, seed=plan.seed, device=plan.device,
                            costs=self.session.costs(subject, case.batch))
