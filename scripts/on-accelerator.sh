#!/usr/bin/env bash
# Record every JAX exhibit's default example on this machine's accelerator (issue 34, part 5).
# Run from the repository root on a machine with an accelerator, with jaxscope importable
# (`pip install -e .`, or PYTHONPATH naming backend/ and the root); writes OUT (default
# accelerator-recordings/) with one NDJSON stream per exhibit and summary.json, and prints a
# table; then the figures of design 0073 into OUT/figures/ (bench/tpu_profile.py: the 12-layer GPT
# step through jaxscope vs a plain script, the profiled instructions summed vs the step). Where the machine cannot make namespaces (jaxscope's refusal says so, e.g. under
# gVisor), the runs use --unsafe-no-sandbox: the machine itself is the boundary (design 0056).
set -uo pipefail
OUT=${1:-accelerator-recordings}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
printf 'import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x)\nargs = (jnp.ones(2),)\n' > "$OUT/.probe.py"
flag=()
if ! "$PY" -m jaxscope.cli run tracing "$OUT/.probe.py" > /dev/null 2> "$OUT/.refusal"; then
  if grep -qi "namespace\|gvisor\|unsafe-no-sandbox" "$OUT/.refusal"; then
    echo "no namespaces here: $(tail -1 "$OUT/.refusal")"
    flag=(--unsafe-no-sandbox)
  fi
fi
rm -f "$OUT/.probe.py" "$OUT/.refusal"
"$PY" -c 'import jax; print("jax", jax.__version__, jax.devices())'
"$PY" scripts/record_accelerator.py --out "$OUT" "${flag[@]}" "${@:2}"
"$PY" bench/tpu_profile.py "$OUT/figures" "${flag[@]}"
