# jaxscope: `make serve` installs what is missing and serves the explorer; `make test` installs
# what is missing and runs every check and test. Both work from a clean clone on a machine with
# Python 3.11, Node 20 and apt (Debian), and install the Python side into .venv/.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: serve test setup setup-dev frontend chromium bubblewrap lint typecheck gen-check unit e2e compose-check bench clean

serve: setup frontend bubblewrap
	$(VENV)/bin/jaxscope serve --host $(HOST) --port $(PORT)

test: setup-dev frontend chromium bubblewrap
	bash scripts/test-all.sh

# --- installs (each step is skipped when already done) -------------------------------------

$(VENV)/.core: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -c constraints.txt -e . 2>&1 | grep -v "is ignored" || true
	$(PY) -c "import jax, fastapi, jaxscope" && touch $@

$(VENV)/.dev: $(VENV)/.core
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]' 2>&1 | grep -v "is ignored" || true
	$(PY) -c "import pytest, playwright, ruff, mypy" && touch $@

setup: $(VENV)/.core
setup-dev: $(VENV)/.dev

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

frontend/dist/index.html: node_modules/.installed $(shell find frontend/src frontend/index.html frontend/vite.config.ts exhibits -name '*.svelte' -o -name '*.ts' -o -name '*.md' -o -name '*.css' -o -name '*.html' 2>/dev/null)
	npm run build

frontend: frontend/dist/index.html

chromium:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q --no-install-recommends chromium; }

# Every sandbox worker runs in its own namespaces through bubblewrap (docs/design/0001-sandbox.md);
# setpriv (util-linux) switches a root-started worker to its own uid.
bubblewrap:
	@command -v bwrap >/dev/null && command -v setpriv >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q --no-install-recommends bubblewrap util-linux; }

bench: setup frontend
	$(PY) bench/latency.py
	$(PY) bench/ad_overhead.py
	$(PY) bench/stations_lowering.py
	$(PY) bench/clean_runs.py

clean:
	rm -rf $(VENV) node_modules frontend/dist
