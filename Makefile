# The two quick-start commands: `make demo` and `make test` (both set up .venv on first use).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo lint bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e ".[test,demo,distributed]"
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest

demo: $(STAMP)
	$(BIN)/python examples/digits_cnn.py

lint: $(STAMP)
	$(BIN)/ruff check lightgrad tests benchmarks examples
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/pip install -q -e ".[bench]" "torch==2.13.0"
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
