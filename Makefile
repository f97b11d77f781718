# The two quick-start commands: `make demo` and `make test` (both set up .venv on first use).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo lint bench docs clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# PyTorch 2.13 is the reference the parity tests compare against (a test-only install, never a
# dependency of lightgrad): without it about half of the suite would skip
$(STAMP): pyproject.toml setup.py $(wildcard lightgrad/backend/native/*.c lightgrad/backend/native/*.h) | $(BIN)/python
	$(BIN)/pip install -q -e ".[test,demo,distributed]" "torch==2.13.0"
	touch $(STAMP)

# The suite runs on the native kernels (built by the install where a C compiler is found), then the
# tests of what they replace run again on the NumPy path alone.
NUMPY_PATH_TESTS := tests/test_native_kernels.py tests/test_ops.py tests/test_optim.py tests/test_compile.py \
	tests/test_autograd.py tests/test_nn_layers.py tests/test_nn_loss.py tests/test_nn_attention.py \
	tests/test_nn_transformer.py tests/test_nn_pool.py tests/test_nn_conv.py tests/test_nn_rnn.py \
	tests/test_random_streams.py

test: $(STAMP)
	$(BIN)/python -m pytest
	LIGHTGRAD_NATIVE=0 $(BIN)/python -m pytest $(NUMPY_PATH_TESTS)

demo: $(STAMP)
	$(BIN)/python examples/digits_cnn.py

lint: $(STAMP)
	$(BIN)/ruff check lightgrad tests benchmarks examples
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/pip install -q -e ".[bench]" "torch==2.13.0"
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BIN)/python -m benchmarks

# The API reference site (pdoc) in site/ (git-ignored): open site/index.html. Fails on any warning.
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): pyproject.toml | $(STAMP)
	$(BIN)/pip install -q -e ".[docs]"
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(BIN)/python docs/gen_site.py site

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache .mypy_cache .ruff_cache
