# Set-up and main jobs. Every target creates the virtual environment on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
MINIMALLOC_DIR ?= ../shared/benchmarks/minimalloc
MINIMALLOC_ARG := $(if $(wildcard $(MINIMALLOC_DIR)/*.csv),--minimalloc-dir $(MINIMALLOC_DIR),)
PYTEST_WORKERS ?= 2

.PHONY: venv run test lint bench clean

$(STAMP): pyproject.toml $(wildcard setup.py) $(wildcard planners/_ext/*.c)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

## The main job: compare every planner on the bundled real workloads; writes results/ and plots.
run: $(STAMP)
	$(VENV)/bin/memplan compare $(MINIMALLOC_ARG) --out results

## The test suite (unit, property, notebook tests); tests that need ../shared skip without it.
test: $(STAMP)
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) tests --nbmake notebooks

lint: $(STAMP)
	$(VENV)/bin/ruff check planners scheduling experiments tests

## Planner speed on 1k, 10k, 100k random buffers -> results/bench_planners.csv
bench: $(STAMP)
	$(PY) -m experiments.bench_planners --out results/bench_planners.csv

clean:
	rm -rf $(VENV) build *.egg-info
