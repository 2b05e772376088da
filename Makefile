# Two commands for a newcomer: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Tests share one compile cache per run (many tests compile the same modules).
TEST_CACHE ?= $(CURDIR)/.cache/test

.PHONY: demo test bench install clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) examples/quickstart.py

test: $(STAMP)
	TRANSPILER_CACHE_DIR=$(TEST_CACHE) $(PY) -m pytest -n 2 -q tests

# Benchmarks against NumPy and, when installed (`pip install -e .[bench]`), JAX.
bench: $(STAMP)
	$(PY) -c "import jax" 2>/dev/null || $(PY) -m pip install --quiet -e ".[bench]" || true
	$(PY) tests/bench/run.py

clean:
	rm -rf $(VENV) .cache build *.egg-info
