"""Precision lost in a bfloat16/float16 result is a finding at its line (issue 33, class 5):
the ``cases/DT05``-``DT08`` snippets (public reports cited in their docstrings) through the
real sandbox, ``jaxscope run dtypes FILE --print changes``.

The truth is computed apart from the exhibit, in a fresh process (:data:`TRUTH`): the
low-precision value of the eqn at fault as plain JAX computes it, the same quantity in float64
with numpy, and each fixed case's output, which must equal numpy's float64 answer within
float32's rounding (the fix applies). The snippet's text gives the line. A fixed case prints
``[]`` and exits 0. In-process: ordinary bfloat16 programs (a 6-layer MLP's forward and
backward pass) are not findings, and :func:`judge`'s thresholds hold on numbers worked by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from jaxscope.internals.precision_loss import judge

from exhibits.conftest import CASES, jaxscope_run, run_probe
from exhibits.dtypes.events import DtypeChangesFound

CASE_NAMES = (
    "DT05_bf16_token_count",
    "DT06_bf16_add_cancel",
    "DT07_bf16_loss_accumulator",
    "DT08_f16_norm_overflow",
)

# Plain JAX and numpy in one fresh process: the low-precision value at the eqn at fault, the
# float64 truth of the same quantity, and each fixed case's output against numpy's answer.
TRUTH = r"""
import json, runpy, sys
import jax, jax.numpy as jnp, numpy as np
cases = sys.argv[1]
def load(name):
    return runpy.run_path(f"{cases}/{name}.py")
out = {}
b = load("DT05_bf16_token_count_broken"); losses, mask = b["args"]
m64 = np.asarray(mask, np.float64); l64 = np.asarray(losses, np.float64)
out["DT05_bf16_token_count"] = {
    "value": float(jax.jit(lambda m: jnp.dot(m, m))(mask)), "exact": float(m64 @ m64),
    "fixed": float(load("DT05_bf16_token_count_fixed")["f"](losses, mask)),
    "answer": float((l64 @ m64) / (m64 @ m64)),
}
b = load("DT06_bf16_add_cancel_broken"); p, a = b["args"]
out["DT06_bf16_add_cancel"] = {
    "value": float(jax.jit(lambda p, a: p + a)(p, a)), "exact": float(p) + float(a),
    "broken": float(b["f"](p, a)),
    "fixed": float(load("DT06_bf16_add_cancel_fixed")["f"](p, a)), "answer": float(a),
}
b = load("DT07_bf16_loss_accumulator_broken"); (xs,) = b["args"]
total = jax.jit(lambda xs: jax.lax.scan(lambda c, x: (c + x, None), jnp.zeros((), xs.dtype), xs)[0])
x64 = np.asarray(xs, np.float64)
out["DT07_bf16_loss_accumulator"] = {
    "value": float(total(xs)), "exact": float(x64.sum()),
    "fixed": float(load("DT07_bf16_loss_accumulator_fixed")["f"](xs)), "answer": float(x64.mean()),
}
b = load("DT08_f16_norm_overflow_broken"); (x,) = b["args"]
x64 = np.asarray(x, np.float64)
out["DT08_f16_norm_overflow"] = {
    "value": float(jax.jit(lambda x: jnp.sum(x * x))(x)), "exact": float((x64 * x64).sum()),
    "broken": float(b["f"](x)),
    "fixed": float(load("DT08_f16_norm_overflow_fixed")["f"](x)),
    "answer": float(np.linalg.norm(x64)),
}
print(json.dumps(out))
"""

# case -> (the piece of the line at fault, the API there, how the result loses precision, a
# phrase of the fix)
EXPECT = {
    "DT05_bf16_token_count": (
        "count = jnp.dot(mask, mask)",
        "jnp.dot",
        "whole_number",
        "preferred_element_type=jnp.float32",
    ),
    "DT06_bf16_add_cancel": (
        "post_value = prior_value + num_to_be_added",
        "+",
        "whole_number",
        "x.astype(jnp.float32)",
    ),
    "DT07_bf16_loss_accumulator": (
        "total, _ = jax.lax.scan(",
        "scan",
        "beyond_rounding",
        "c + x.astype(jnp.float32)",
    ),
    "DT08_f16_norm_overflow": (
        "return jnp.linalg.norm(x)",
        "jnp.linalg.norm",
        "overflow",
        "x.astype(jnp.float32)",
    ),
}


@pytest.fixture(scope="module")
def truth() -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", TRUTH, str(CASES)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return result


def changes(name: str) -> tuple[int, list[dict[str, Any]], str]:
    proc = jaxscope_run("dtypes", CASES / f"{name}.py", "--print", "changes")
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def line_of(name: str, piece: str) -> int:
    text = (CASES / f"{name}.py").read_text().splitlines()
    (line,) = [i for i, t in enumerate(text, 1) if piece in t]
    return line


def number(text: str, after: str) -> float:
    return float(text.split(after, 1)[1].split()[0].rstrip(")"))


@pytest.mark.parametrize("case", CASE_NAMES)
def test_a_low_precision_result_is_a_finding_at_its_line(case: str, truth: dict[str, Any]) -> None:
    piece, api, kind, fix = EXPECT[case]
    name = f"{case}_broken"
    code, found, stderr = changes(name)
    assert code == 3 and "PrecisionLost" in stderr
    (change,) = [c for c in found if c["kind"] == "precision_lost"]
    assert change["line"] == line_of(name, piece) and f"line {change['line']}" in stderr
    assert change["api"] == api and change["corruption"] == kind and change["finding"]
    assert fix in change["fix"] and fix in stderr
    # the numbers shown: the run's value is plain JAX's, float32's is numpy's float64 answer
    # (within float32's rounding)
    row = truth[case]
    shown = change["example"]
    assert number(shown, ": ") == row["value"]
    np.testing.assert_allclose(number(shown, "float32 gives "), row["exact"], rtol=2**-23)
    assert row["value"] != row["exact"]  # the loss is real


def test_the_losses_the_reports_describe_are_real(truth: dict[str, Any]) -> None:
    assert truth["DT06_bf16_add_cancel"]["broken"] == 0.0  # jax#29323: 2032 lost
    assert truth["DT08_f16_norm_overflow"]["broken"] == np.inf  # jax#39899
    assert (truth["DT05_bf16_token_count"]["value"], truth["DT05_bf16_token_count"]["exact"]) == (
        4096.0,
        4097.0,
    )


@pytest.mark.parametrize("case", CASE_NAMES)
def test_the_fixed_case_is_clean_and_right(case: str, truth: dict[str, Any]) -> None:
    code, found, stderr = changes(f"{case}_fixed")
    assert code == 0 and found == [], stderr
    row = truth[case]
    np.testing.assert_allclose(row["fixed"], row["answer"], rtol=1e-6)  # the fix applies


# ---- no finding for ordinary low-precision programs; judge's thresholds -------------------

MLP = """
import jax, jax.numpy as jnp, numpy as np
rng = np.random.default_rng(0)
x = jnp.asarray(rng.standard_normal((32, 256)), jnp.bfloat16)
ws = [jnp.asarray(rng.standard_normal((256, 256)) / 16, jnp.bfloat16) for _ in range(6)]

def mlp(ws, x):
    for w in ws:
        x = jax.nn.gelu(x @ w)
    return x

def f(ws, x):
    return jax.grad(lambda ws: jnp.mean(mlp(ws, x) ** 2))(ws)

args = (ws, x)
"""


def test_a_bfloat16_mlp_and_its_gradient_are_not_findings() -> None:
    ctx = run_probe("dtypes", MLP)
    (found,) = [e for e in ctx.events if isinstance(e, DtypeChangesFound)]
    assert found.precision_unchecked is None
    assert [c for c in found.changes if c.kind == "precision_lost"] == []


def test_judge_on_numbers_worked_by_hand() -> None:
    bf16 = jnp.bfloat16
    # one rounding of a value that is no whole number: within the dtype's rounding
    assert judge(np.float32(1.0078125), np.float32(1.00390625), bf16) is None
    # 257 as bfloat16 is 256: a whole number lost (bfloat16 holds them exactly up to 256)
    kind, where = judge(np.float32(256.0), np.float32(257.0), bf16) or ("", None)
    assert kind == "whole_number" and where is not None and bool(where)
    assert judge(np.float32(256.0), np.float32(256.0), bf16) is None
    # float16: inf where float32 is finite; 255 of float16 (exact below 2048) is no loss
    assert (judge(np.float16(np.inf), np.float32(9e4), jnp.float16) or ("",))[0] == "overflow"
    assert judge(np.float16(255.0), np.float32(255.0), jnp.float16) is None
    # 0 where float32 gives 0.7: 0.7 is hundreds of bfloat16 units at its scale
    assert (judge(np.float32(0.0), np.float32(0.7), bf16) or ("",))[0] == "beyond_rounding"
    # 40 units off at the scale (2**-7 at 1.0 is one unit): within ULPS = 64
    assert judge(np.float32(1.0 + 40 * 2**-7), np.float32(1.0), bf16) is None


CALLBACK = """
import jax, jax.numpy as jnp

def f(x):
    jax.debug.print("seen {x}", x=x[0])
    return jnp.dot(x, x)

args = (ARG,)
"""


def test_a_callback_is_not_run_again_and_abstract_arguments_are_said(
    capfd: pytest.CaptureFixture[str],
) -> None:
    ctx = run_probe("dtypes", CALLBACK.replace("ARG", "jnp.ones(4097, jnp.bfloat16)"))
    (found,) = [e for e in ctx.events if isinstance(e, DtypeChangesFound)]
    (lost,) = [c for c in found.changes if c.kind == "precision_lost"]
    assert lost.api == "jnp.dot" and lost.corruption == "whole_number"
    assert "seen" not in capfd.readouterr().out  # jax.debug.print skipped, not run again
    ctx = run_probe(
        "dtypes", CALLBACK.replace("ARG", "jax.ShapeDtypeStruct((4097,), jnp.bfloat16)")
    )
    (found,) = [e for e in ctx.events if isinstance(e, DtypeChangesFound)]
    assert "abstract arguments" in (found.precision_unchecked or "")
