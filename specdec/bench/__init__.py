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
"""
