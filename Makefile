# The two commands of the README: `make demo` (a real model fills a Pydantic model) and
# `make test` (installs everything the tests need, then runs them). Each creates its own
# virtual environment; nothing else needs to be installed first.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
ASSETS ?= .assets

.PHONY: test test-full demo venv assets clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.test-deps: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.test-deps

assets: venv
	$(BIN)/python tools/fetch_assets.py --dest $(ASSETS)

test: venv assets
	STRUCTGEN_ASSETS=$(ASSETS) $(BIN)/python -m pytest -q -m "not slow"

test-full: venv assets
	STRUCTGEN_ASSETS=$(ASSETS) $(BIN)/python -m pytest -q

demo: venv
	$(BIN)/python examples/quickstart.py

clean:
	rm -rf $(VENV) $(ASSETS)
