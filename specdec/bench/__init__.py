"""Measuring speculative decoding: one benchmark pipeline for our loop and for any engine.

Layer above :mod:`specdec.conformance`; perf/ (``make bench``, pytest-benchmark) drives it for our loop
on SmolLM2, ``specdec bench run`` for any subject, and so can anyone benchmarking their own decoder.
Both pipelines produce the same :class:`~specdec.bench.rows.Round` and :class:`~specdec.bench.rows.Row`
through one :func:`~specdec.bench.rows.summarise`, one table writer and one plotting module.

* :mod:`.clock` - synchronised wall clocks, thread pinning, per-step timestamps (TTFT, inter-token latencies).
* :mod:`.memory` - peak memory of a region (CUDA allocator; peak RSS on Linux).
* :mod:`.costs` - measured cost of a target pass over K + 1 tokens and of a draft step
  (:class:`specdec.laws.speedup.StepCosts`).
* :mod:`.breakdown` - a step's time by phase (draft, target, warp, verify, rollback, bookkeeping).
* :mod:`.rows` - one row from paired rounds: measured speedup beside F23's prediction; :mod:`.tables`
  every table of a run; the PNGs: :mod:`specdec.plots`.
* :mod:`.pairs` - any decoder as a benchmark subject: a speculative Decoder and its twin (Protocols).
* :mod:`.paired` - paired rounds of a subject, turned into rows.
* :mod:`.run_plan` / :mod:`.suite` / :mod:`.pytest_bench` - ``specdec bench run``'s plan, its pytest
  module and the ``specdec_bench`` fixture's work (pytest-benchmark storage, as ``make bench``).
* :mod:`.reference` - our loop on SmolLM2 as a subject (prompt lookup or a model draft), costs measured.
* :mod:`.environment` - machine, library versions, GPU, driver, commit.
* :mod:`.history` / :mod:`.gate` - stored runs and the ratio gate; :mod:`.latest` - the latest run's
  ``rows.json`` and ``table.md``, stamped with their run, written atomically; :mod:`.files` - reading
  those files (every problem one line naming the file).

The prompt set and its corpus live below, in :mod:`specdec.workload`.
"""
