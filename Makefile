# Everything runs from a virtual environment this Makefile creates: nothing relies on
# what happens to be installed on the machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
LAYOUT ?= single
# Suites too heavy for every run: `make test-all` runs them too.
PYTEST_MARKS ?= not slow

.PHONY: run test test-all bench lint clean install

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m deploy.mqcluster up deploy/$(LAYOUT) --foreground

test: $(STAMP)
	$(BIN)/python -m pytest -m "$(PYTEST_MARKS)"

test-all: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
