# Two commands work on a fresh machine with only Python 3.11+ and make: `make demo`, `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test test-min mutation demo docs lab bench sandbox dist clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

test: $(STAMP)  ## run the test suite
	$(PY) -m pytest

test-min: $(STAMP)  ## the suite against the lowest versions pyproject.toml allows (a few minutes)
	$(PY) scripts/min_versions.py

mutation: $(STAMP)  ## mutation testing of the core modules, a table per module (minutes; not part of the tests)
	$(PY) scripts/mutation.py --max-children 2

demo: $(STAMP)  ## run the example notebooks against the built-in demo server
	$(PY) -m invtools demo --out build/demo

docs: $(STAMP)  ## the documentation site, offline, in build/site (open build/site/index.html)
	$(PY) -m pip install --quiet -e '.[dev,docs]'
	$(PY) scripts/build_docs.py

lab: $(STAMP)  ## JupyterLab with the demo server running
	$(PY) -m pip install --quiet -e '.[dev,lab]'
	$(PY) -m invtools lab

bench: $(STAMP)  ## print the benchmark figures (several minutes; not part of the tests)
	@status=0; for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || status=1; done; exit $$status

sandbox: $(STAMP)  ## the stand-in server in the foreground
	$(PY) -m invtools sandbox --port 8765

dist: $(STAMP)  ## the wheel and the sdist under dist/ (the wheel is built from the sdist)
	rm -rf dist
	$(PY) -m build --outdir dist .

clean:
	rm -rf build dist .pytest_cache mutants
