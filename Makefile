# Two commands: `make demo` and `make test`. Both build .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
WITH_VENV := PATH="$(CURDIR)/$(BIN):$$PATH"
LABEXT := tinyagent_fs/labextension/package.json
LABEXT_SOURCES := $(wildcard labextension/src/*.ts labextension/style/* labextension/schema/*.json) \
	labextension/package.json labextension/yarn.lock labextension/tsconfig.json
PY_SOURCES := tinyagent_fs tests bench demo notebooks README.md

.PHONY: demo demo-terminal labextension test lint bench clean

# The editable install builds the lab extension too (hatch-jupyter-builder runs jlpm).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Rebuilt when its sources change; the venv's copy is a link to the build, so
# JupyterLab always loads the current one.
$(LABEXT): $(STAMP) $(LABEXT_SOURCES)
	cd labextension && $(WITH_VENV) jlpm install --immutable && $(WITH_VENV) jlpm build
	rm -rf $(VENV)/share/jupyter/labextensions/tinyagent-fs
	ln -s $(CURDIR)/tinyagent_fs/labextension $(VENV)/share/jupyter/labextensions/tinyagent-fs
	touch $(LABEXT)

labextension: $(LABEXT)

# JupyterLab on the tour notebook, a sandboxed sample project, the audit sidebar open.
demo: $(LABEXT)
	$(BIN)/python demo/lab.py

# The same walk-through in a terminal, without Jupyter.
demo-terminal: $(STAMP)
	$(BIN)/python -m tinyagent_fs.demo demo-project

lint: $(STAMP) $(LABEXT)
	$(BIN)/ruff check $(PY_SOURCES)
	$(BIN)/ruff format --check $(PY_SOURCES)
	cd labextension && $(WITH_VENV) jlpm prettier:check

test: lint $(LABEXT)
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python bench/bench_tools.py --output bench/results/tools.txt

clean:
	rm -rf $(VENV) demo-project .pytest_cache .ruff_cache build test-artifacts \
		labextension/node_modules labextension/lib tinyagent_fs/labextension
