# Two commands for a newcomer: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# Extras to install: `test` brings pytest and the oracles the suite cross-checks against (JAX),
# so `make test` is the complete check; the benchmarks compare against the same JAX.
EXTRAS ?= test
comma  := ,
STAMP  := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))
# Tests share one compile cache per run (many tests compile the same modules).
TEST_CACHE ?= $(CURDIR)/.cache/test

.PHONY: demo test bench derivatives install clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) examples/quickstart.py

test: $(STAMP)
	TRANSPILER_CACHE_DIR=$(TEST_CACHE) $(PY) -m pytest -n 2 -q tests

# Benchmarks against NumPy and JAX (installed by the `test` extra).
bench: $(STAMP)
	$(PY) tests/bench/run.py

# Regenerate the library's shipped derivative code after editing a composite
# (tests/test_derivatives_bundle.py fails until it is current).
derivatives: $(STAMP)
	$(PY) tests/programs/derivatives.py

clean:
	rm -rf $(VENV) .cache build *.egg-info
