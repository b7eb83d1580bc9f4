"""Measuring speculative decoding: clocks, memory, cost calibration, theory beside measurement, history.

Layer above :mod:`specdec.decoding`; perf/ (pytest-benchmark) drives it, and so can
anyone benchmarking their own decoder.

* :mod:`.clock` - synchronised wall clocks, thread pinning, per-step timestamps
  (time to first token, inter-token latencies).
* :mod:`.memory` - peak memory of a region (CUDA allocator; peak RSS on Linux).
* :mod:`.costs` - measured cost of a target pass over K + 1 tokens and of a draft step.
* :mod:`.rows` - one benchmark row: measured speedup from paired rounds beside F23's prediction.
* :mod:`.environment` - machine, library versions, GPU, driver, commit.
* :mod:`.history` / :mod:`.gate` / :mod:`.plots` - stored runs, the ratio gate, PNGs.
* :mod:`.latest` - the latest run's ``rows.json`` and ``table.md``, stamped with their run, written atomically.
* :mod:`.files` - reading those files: every problem one line naming the file (``BenchFileError``).
* :mod:`.prompts` / :mod:`.corpus` - the prompt set (six task kinds, 11 prompts each) and the long
  original text the input-length buckets are cut from.
* :mod:`.subject` - any decoder as a benchmark subject: a speculative Decoder and its twin (Protocols).
* :mod:`.paired` - paired rounds of a subject: speedup, throughput, latency, acceptance, F23 beside them.
* :mod:`.plan` / :mod:`.suite` / :mod:`.pytest_bench` - ``specdec bench run``'s plan, its pytest
  module and the ``specdec_bench`` fixture's work (pytest-benchmark storage, as ``make bench``).
* :mod:`.reference` - our loop on SmolLM2 as a subject (prompt lookup or a model draft), costs measured.
* :mod:`.subject_tables` / :mod:`.subject_plots` - the tables and PNGs of those runs (load, length,
  best K per batch, subjects side by side).
* :mod:`.breakdown` - a step's time by phase (draft, target, warp, verify, rollback, bookkeeping).
"""
