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

.PHONY: demo test lint fuzz bench derivatives install clean

$(STAMP): pyproject.toml
	@echo "Installing transpiler and the [$(EXTRAS)] extra into $(VENV): the IREE compiler and runtime"
	@echo "(and JAX, the tests' oracle), ~600 MB; usually 1-3 minutes on a fresh machine."
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	@echo "Running examples/quickstart.py; compiled modules are cached in" \
	    "$${TRANSPILER_CACHE_DIR:-~/.cache/transpiler}."
	$(PY) examples/quickstart.py

test: $(STAMP)
	TRANSPILER_CACHE_DIR=$(TEST_CACHE) $(PY) -m pytest -n 2 -q tests

# Static checks: ruff (pyflakes and pycodestyle) on everything, mypy on the package
# (configured in pyproject.toml); CI runs it before `make test`.
LINT_STAMP := $(VENV)/.installed-lint

$(LINT_STAMP): pyproject.toml | $(STAMP)
	$(PY) -m pip install --quiet -e ".[$(EXTRAS),lint]"
	touch $(LINT_STAMP)

lint: $(LINT_STAMP)
	$(PY) -m ruff check transpiler runtime tests examples
	$(PY) -m mypy

# The differential tests (tests/test_differential.py: random programs, eager against IREE
# under jit, grad, vmap and jvp, and against JAX; tests/test_hypothesis_programs.py:
# hypothesis-drawn programs with control flow and Python idioms, in its long `fuzz`
# profile) on many more programs than `make test` runs: `make fuzz FUZZ_PROGRAMS=3000
# FUZZ_SEED=123`. The seed is random unless given; the run prints it, and failures name it.
FUZZ_PROGRAMS ?= 1000
ifeq ($(origin FUZZ_SEED),undefined)
FUZZ_SEED := $(shell od -An -N4 -tu4 /dev/urandom | tr -d ' ')
endif

fuzz: $(STAMP)
	@echo "fuzz: FUZZ_SEED=$(FUZZ_SEED) FUZZ_PROGRAMS=$(FUZZ_PROGRAMS)"
	FUZZ_SEED=$(FUZZ_SEED) FUZZ_PROGRAMS=$(FUZZ_PROGRAMS) TRANSPILER_CACHE_DIR=$(TEST_CACHE) \
		$(PY) -m pytest -n 2 -q tests/test_differential.py
	HYPOTHESIS_PROFILE=fuzz FUZZ_SEED=$(FUZZ_SEED) FUZZ_PROGRAMS=$(FUZZ_PROGRAMS) \
		TRANSPILER_CACHE_DIR=$(TEST_CACHE) $(PY) -m pytest -n 2 -q tests/test_hypothesis_programs.py

# Benchmarks against NumPy and JAX (installed by the `test` extra).
bench: $(STAMP)
	$(PY) tests/bench/run.py

# Regenerate the library's shipped derivative code after editing a composite
# (tests/test_derivatives_bundle.py fails until it is current).
derivatives: $(STAMP)
	$(PY) tests/programs/derivatives.py

clean:
	rm -rf $(VENV) .cache build *.egg-info
