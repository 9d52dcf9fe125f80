# jaxscope: `make serve` installs what is missing and serves the explorer; `make test` installs
# what is missing and runs every check and test. Both work from a clean clone on a machine with
# Python 3.11, Node 20 and apt (Debian), and install the Python side into .venv/ and the
# PyTorch/XLA track into .venv-torch/ (about 7 GB; `make serve TORCH=no` leaves it out) and the
# TensorFlow bridge into .venv-tf/ (about 2 GB; `make serve TF=no` leaves it out).

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The torch venv (docs/design/0025-torch-xla-track.md): a venv of its own, never .venv.
TORCH_VENV := .venv-torch
TORCH_PY := $(TORCH_VENV)/bin/python
TORCH ?= yes
WITH_TORCH := $(if $(filter no,$(TORCH)),,torch)
# The TensorFlow venv (docs/design/0066-tf-bridge.md): tensorflow-cpu, tf2jax and JAX.
TF_VENV := .venv-tf
TF_PY := $(TF_VENV)/bin/python
TF ?= yes
WITH_TF := $(if $(filter no,$(TF)),,tf)
# libtpu for compiling for a TPU v5e without one (docs/design/0067-tpu-compile-without-tpu.md):
# a folder of its own (684 MB), which only the "tpu_compile" worker names; `TPU=no` leaves it out.
TPU_SITE := .venv-tpu-site
TPU ?= yes
WITH_TPU := $(if $(filter no,$(TPU)),,tpu)
HOST ?= 127.0.0.1
PORT ?= 8000
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: serve test test-all test-deps test-packages setup setup-dev torch tf tpu frontend chromium bubblewrap redis lint typecheck gen-check unit e2e compose-check bench clean wheel

serve: setup frontend bubblewrap $(WITH_TORCH) $(WITH_TF) $(WITH_TPU)
	$(VENV)/bin/jaxscope serve --host $(HOST) --port $(PORT)

test: test-deps
	bash scripts/test-all.sh

# What the tests need, installed side by side (`make -j`: the venvs, npm and the frontend build
# are mostly downloads and unpacking; design 0058), the Debian packages in one apt-get call.
test-deps:
	$(MAKE) -j4 --output-sync=target setup-dev frontend test-packages $(WITH_TORCH) $(WITH_TF) $(WITH_TPU)

# Everything `make test` runs, plus the whole matrices it samples and the full-size programs
# (tests marked `full`; testkit.py, docs/design/0058-suite-that-fits.md). Run it before
# resolving anything that touches a matrix.
test-all: test-deps
	JAXSCOPE_TEST_ALL=1 bash scripts/test-all.sh

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

# torch 2.9.0 + torch_xla 2.9.0 and the rest of their closure, every version exact (--no-deps:
# the file is the whole closure); the import check creates no PJRT client.
# torchax and its JAX go to a folder of their own (requirements-torchax.txt, design 0042).
$(TORCH_VENV)/.ready: requirements-torch.txt requirements-torchax.txt
	test -x $(TORCH_PY) || $(PYTHON) -m venv $(TORCH_VENV)
	$(TORCH_PY) -m pip install -q --no-deps -r requirements-torch.txt 2>&1 | grep -v "is ignored" || true
	$(TORCH_PY) -m pip install -q --no-deps --upgrade --target $(TORCH_VENV)/torchax-site \
	  -r requirements-torchax.txt 2>&1 | grep -v "is ignored" || true
	PJRT_DEVICE=CPU $(TORCH_PY) -c "import torch, torch_xla, pydantic, ml_dtypes" && touch $@

torch: $(TORCH_VENV)/.ready

# tensorflow-cpu 2.21.0 + tf2jax 0.3.8 + JAX 0.10.2 and their closure, every version exact
# (--no-deps: tf2jax asks for `tensorflow`, which tensorflow-cpu provides under another name).
$(TF_VENV)/.ready: requirements-tf.txt
	test -x $(TF_PY) || $(PYTHON) -m venv $(TF_VENV)
	$(TF_PY) -m pip install -q --no-deps -r requirements-tf.txt 2>&1 | grep -v "is ignored" || true
	TF_CPP_MIN_LOG_LEVEL=2 $(TF_PY) -c "import tensorflow, tf2jax, jax, pydantic, ml_dtypes" && touch $@

tf: $(TF_VENV)/.ready

# libtpu 0.0.42.1 (the version jax 0.10.2's `tpu` extra pins) into a folder, not a venv: the
# JAX venv's python loads its libtpu.so by path in the tpu_compile worker alone (--no-deps: the
# wheel has none). 21 s and 684 MB here.
$(TPU_SITE)/.ready: | setup
	$(PY) -m pip install -q --no-deps --upgrade --target $(TPU_SITE) libtpu==0.0.42.1 2>&1 | grep -v "is ignored" || true
	test -f $(TPU_SITE)/libtpu/libtpu.so && touch $@

tpu: $(TPU_SITE)/.ready

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

frontend/dist/index.html: node_modules/.installed pyproject.toml $(shell find frontend/src frontend/index.html frontend/vite.config.ts frontend/vite.standalone.config.ts exhibits -name '*.svelte' -o -name '*.ts' -o -name '*.md' -o -name '*.css' -o -name '*.html' 2>/dev/null)
	npm run build

frontend: frontend/dist/index.html

chromium:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q --no-install-recommends chromium; }

# Every sandbox worker runs in its own namespaces through bubblewrap (docs/design/0001-sandbox.md);
# setpriv (util-linux) switches a root-started worker to its own uid.
bubblewrap:
	@command -v bwrap >/dev/null && command -v setpriv >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q --no-install-recommends bubblewrap util-linux; }

# The run queue beyond one machine (`serve --queue`, `pool --queue`; design 0065): the tests
# start their own redis-server on a free loopback port; `make serve` needs none.
redis:
	@command -v redis-server >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q --no-install-recommends redis-server; }

# The Debian packages the tests use (Chromium, bubblewrap and setpriv, redis-server), the missing
# ones in one apt-get call: apt-get calls cannot run side by side (dpkg's lock), and each
# separate call would read the package lists again.
TEST_PACKAGES := chromium:chromium bubblewrap:bwrap util-linux:setpriv redis-server:redis-server
test-packages:
	@missing=""; for pc in $(TEST_PACKAGES); do \
	  command -v "$${pc#*:}" >/dev/null || missing="$$missing $${pc%%:*}"; done; \
	[ -z "$$missing" ] || { $(SUDO) apt-get update -q && \
	  $(SUDO) apt-get install -y -q --no-install-recommends $$missing; }

# A wheel that serves the whole explorer with no Node and no clone (`pip install
# dist/jaxscope-*.whl`, then `jaxscope serve`): the built frontend travels inside the package.
wheel: setup frontend
	$(PY) scripts/build_wheel.py --out dist

bench: setup frontend
	$(PY) bench/latency.py
	$(PY) bench/ad_overhead.py
	$(PY) bench/transpose_vs_vjp.py
	$(PY) bench/stations_lowering.py
	$(PY) bench/clean_runs.py

clean:
	rm -rf $(VENV) $(TORCH_VENV) $(TF_VENV) node_modules frontend/dist dist build backend/jaxscope/_frontend
