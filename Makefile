# Two commands: `make demo` and `make test`. Both build .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m tinyagent_fs.demo demo-project

PY_SOURCES := tinyagent_fs tests bench

lint: $(STAMP)
	$(BIN)/ruff check $(PY_SOURCES)
	$(BIN)/ruff format --check $(PY_SOURCES)

test: lint
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python bench/bench_tools.py --output bench/results/tools.txt

clean:
	rm -rf $(VENV) demo-project .pytest_cache .ruff_cache
