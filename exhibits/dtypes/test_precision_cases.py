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
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
from jaxscope.internals.precision_loss import judge

from exhibits.conftest import CASES, jaxscope_run, run_probe
from exhibits.dtypes.events import DtypeChangesFound
from testkit import fresh_json

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
    # the count's fix alone: the bfloat16 total (one rounding, as plain JAX gives it) over the
    # exact count
    "literal": float(np.float64(jax.jit(jnp.dot)(losses, mask)) / (m64 @ m64)),
}
b = load("DT06_bf16_add_cancel_broken"); p, a = b["args"]
out["DT06_bf16_add_cancel"] = {
    "value": float(jax.jit(lambda p, a: p + a)(p, a)), "exact": float(p) + float(a),
    "broken": float(b["f"](p, a)),
    "fixed": float(load("DT06_bf16_add_cancel_fixed")["f"](p, a)), "answer": float(a),
    "literal": float(a),
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
    result: dict[str, Any] = fresh_json(TRUTH, str(CASES), timeout=300)
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


# ---- the printed fix applied literally (issue 33 acceptance audit; docs/design/0062) --------

# case -> (a phrase of the printed fix, the flagged line as that phrase rewrites it); nothing
# else of the broken case changes
LITERAL = {
    "DT05_bf16_token_count": (
        "preferred_element_type=jnp.float32",
        "    count = jnp.dot(mask, mask, preferred_element_type=jnp.float32)",
    ),
    "DT06_bf16_add_cancel": (
        "x.astype(jnp.float32)",
        "    post_value = prior_value.astype(jnp.float32) + num_to_be_added.astype(jnp.float32)",
    ),
}

# f of a snippet file as plain JAX computes it, in a fresh process: its value and dtype
VALUE = r"""
import json, runpy, sys
ns = runpy.run_path(sys.argv[1])
out = ns["f"](*ns["args"])
print(json.dumps({"value": float(out), "dtype": str(out.dtype)}))
"""


def plain_value(path: Any) -> dict[str, Any]:
    result: dict[str, Any] = fresh_json(VALUE, str(path), timeout=120)
    return result


@pytest.mark.parametrize("case", LITERAL)
def test_the_printed_fix_on_its_line_alone_keeps_float32(
    case: str, truth: dict[str, Any], tmp_path: Any
) -> None:
    """The flagged line rewritten as the fix says, nothing else: the float32 value then meets
    the bfloat16 one on the next line. That join is a note whose fix upcasts the bfloat16 side
    (the float32 side was made so on purpose; narrowing it would restore the loss), the run
    exits 0, and f's value is what float32 keeps (TRUTH's ``literal``)."""
    phrase, rewritten = LITERAL[case]
    _, found, _ = changes(f"{case}_broken")
    (lost,) = [c for c in found if c["kind"] == "precision_lost"]
    assert phrase in lost["fix"] and "carry the float32 value through" in lost["fix"]
    lines = (CASES / f"{case}_broken.py").read_text().splitlines()
    lines[lost["line"] - 1] = rewritten
    path = tmp_path / f"{case}_literal.py"
    path.write_text("\n".join(lines) + "\n")

    proc = jaxscope_run("dtypes", path, "--print", "changes")
    assert proc.returncode == 0, proc.stderr
    after = json.loads(proc.stdout)
    (note,) = after
    assert note["kind"] == "promoted" and not note["finding"]
    assert (note["from_type"], note["to_type"]) == ("bf16[]", "f32[]")
    assert note["line"] == lost["line"] + 1
    assert "`x.astype(jnp.float32)`" in note["fix"] and "undo" in note["fix"]
    assert f"DtypePromoted at line {note['line']}, not a finding" in proc.stderr
    assert "the other operand the value's dtype" not in proc.stderr  # no narrowing advice

    row = plain_value(path)
    assert row["dtype"] == "float32"  # the wider dtype lasts to f's output, as the note says
    # the fix applies: DT06's 2032 kept; DT05's count exact (4,097), its total still one
    # bfloat16 rounding, as the line left alone computes it
    np.testing.assert_allclose(row["value"], truth[case]["literal"], rtol=2**-22)


# The ways of making a value float32 on purpose that a bfloat16 value then meets (a note): an
# astype, dtype=, preferred_element_type, a float32 loop carry (also an astype in a cond's
# branches); and those that are no choice of the user's (a finding): a float32 argument (also as
# a loop's carry), a float32 constant, also inside a cond's branch or a loop's body (issue 33
# break-it, class 5: a cond/loop's float32 output was taken for a deliberate carry). Each entry:
# the body of f, whether the change is a finding, and text on the line it is reported at (the
# first widening: a later join with its float32 value is its consequence).
JOINS = {
    "astype": ("y = x.astype(jnp.float32) * 2.0\n    return y + x", False, "return"),
    "sum_dtype": ("s = jnp.sum(x, dtype=jnp.float32)\n    return s * x", False, "return"),
    "preferred": (
        "d = jnp.dot(x, x, preferred_element_type=jnp.float32)\n    return d * x",
        False,
        "return",
    ),
    "carry": (
        "c = jnp.zeros((), jnp.float32)\n"
        "    t, _ = jax.lax.scan(lambda c, v: (c + v.astype(jnp.float32), None), c, x)\n"
        "    return t * x",
        False,
        "return",
    ),
    "cond_astype": (
        "y = jax.lax.cond(w[0] > 0, lambda v: v.astype(jnp.float32) * 2.0,\n"
        "                 lambda v: v.astype(jnp.float32), x)\n"
        "    return y + x",
        False,
        "return",
    ),
    "argument": ("return x * w", True, "return"),
    "argument_carry": (
        "t, _ = jax.lax.scan(lambda c, v: (c + v, None), w[0], x)\n    return t * x",
        True,
        "scan",
    ),
    "constant": ("return x * jnp.float32(3.0)", True, "return"),
    "constant_then_join": ("return x * jnp.float32(3.0) + x", True, "return"),
    "cond_constant": (
        "return jax.lax.cond(w[0] > 0, lambda v: v * jnp.float32(2.0),\n"
        "                    lambda v: v.astype(jnp.float32), x)",
        True,
        "float32(2.0)",
    ),
    "cond_constant_then_join": (
        "y = jax.lax.cond(w[0] > 0, lambda v: v * jnp.float32(2.0),\n"
        "                 lambda v: v.astype(jnp.float32), x)\n"
        "    return y + x",
        True,
        "float32(2.0)",
    ),
    "scan_constant": (
        "return jax.lax.scan(lambda c, v: (c, v * jnp.float32(2.0)), 0, x)[1]",
        True,
        "return",
    ),
    "fori_constant_then_join": (
        "c = jnp.zeros(8, jnp.float32)\n"
        "    t = jax.lax.fori_loop(0, 3, lambda i, c: c + x * jnp.float32(2.0), c)\n"
        "    return t + x",
        True,
        "fori_loop",
    ),
    "while_constant": (
        "def body(c):\n"
        "        return c[0] + 1, c[1] + x * jnp.float32(2.0)\n"
        "    init = (0, jnp.zeros(8, jnp.float32))\n"
        "    return jax.lax.while_loop(lambda c: c[0] < 3, body, init)[1]",
        True,
        "float32(2.0)",
    ),
}

JOIN = """
import jax
import jax.numpy as jnp
import numpy as np


def f(x, w):
    BODY


args = (jnp.asarray(np.linspace(0.5, 2.0, 8), jnp.bfloat16), jnp.ones(8, jnp.float32))
"""


@pytest.fixture(scope="module")
def join_dtypes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """f's output dtype for each of :data:`JOINS`, plain JAX in one fresh process."""
    folder = tmp_path_factory.mktemp("joins")
    for name, (body, _, _) in JOINS.items():
        (folder / f"{name}.py").write_text(JOIN.replace("BODY", body))
    script = (
        "import json, runpy, sys\n"
        "out = {}\n"
        "for name in sys.argv[2:]:\n"
        "    ns = runpy.run_path(f'{sys.argv[1]}/{name}.py')\n"
        "    out[name] = str(ns['f'](*ns['args']).dtype)\n"
        "print(json.dumps(out))\n"
    )
    result: dict[str, str] = fresh_json(script, str(folder), *JOINS, timeout=120)
    return result


@pytest.mark.parametrize("name", JOINS)
def test_a_join_with_a_value_made_float32_on_purpose_is_a_note(
    name: str, join_dtypes: dict[str, str]
) -> None:
    body, finding, marker = JOINS[name]
    source = JOIN.replace("BODY", body)
    ctx = run_probe("dtypes", source)
    (found,) = [e for e in ctx.events if isinstance(e, DtypeChangesFound)]
    (change,) = found.changes
    line = next(i for i, t in enumerate(source.splitlines(), 1) if marker in t)
    assert change.kind == "promoted" and change.finding is finding
    assert change.source is not None and change.source.line == line
    assert (change.from_dtype, change.to_dtype) == ("bfloat16", join_dtypes[name])  # plain JAX's
    if finding:
        assert change.fix is None  # the generic fix (artefacts.FIXES)
        # the float32 constant met (in the branch or body too), or the argument's value
        assert change.partner is not None
        assert change.partner.endswith("constant") is ("constant" in name)
    else:
        assert change.fix is not None and "`x.astype(jnp.float32)`" in change.fix


# A float32 value cast back to bfloat16 on purpose, every way a user writes the cast: the
# loss is the cast's, so the fix is to keep the value float32 (not "upcast the operands": they
# are float32 already, and upcasting them leaves the cast's rounding; issue 33 audit, `x.astype`
# is JAX's ``_astype`` method).
CAST_BACK = """
import jax
import jax.numpy as jnp


def f(prior, added):
    p32 = prior.astype(jnp.float32) + added
    a = p32.astype(jnp.bfloat16)
    b = jnp.asarray(p32, dtype=jnp.bfloat16)
    c = jax.lax.convert_element_type(p32, jnp.bfloat16)
    d = jnp.astype(p32, jnp.bfloat16)
    return a - prior, b - prior, c - prior, d - prior


args = (jnp.bfloat16(1.04858e06), jnp.bfloat16(2032))
"""


def test_a_cast_back_to_bfloat16_is_fixed_by_keeping_float32(tmp_path: Any) -> None:
    lines = CAST_BACK.splitlines()
    cast_lines = [i for i, t in enumerate(lines, 1) if "jnp.bfloat16)" in t and "args" not in t]
    ctx = run_probe("dtypes", CAST_BACK)
    (found,) = [e for e in ctx.events if isinstance(e, DtypeChangesFound)]
    lost = [c for c in found.changes if c.kind == "precision_lost"]
    assert sorted(c.source.line for c in lost if c.source) == cast_lines
    for c in lost:
        assert c.fix is not None and c.fix.startswith("keep this value in float32"), c.fix
        assert "upcast the operands" not in c.fix
    # the truth, plain JAX in a fresh process: each cast gives 0 where float32 keeps 2032, and
    # the fix as printed (the cast dropped, the value kept float32) gives 2032
    fixed = "\n".join(
        t.split(" = ")[0] + " = p32" if i in cast_lines else t for i, t in enumerate(lines, 1)
    )
    for name, source in (("broken", CAST_BACK), ("fixed", fixed)):
        (tmp_path / f"{name}.py").write_text(source)
    script = (
        "import json, runpy, sys\n"
        "out = {}\n"
        "for name in ('broken', 'fixed'):\n"
        "    ns = runpy.run_path(f'{sys.argv[1]}/{name}.py')\n"
        "    out[name] = [float(v) for v in ns['f'](*ns['args'])]\n"
        "print(json.dumps(out))\n"
    )
    truth = fresh_json(script, tmp_path, timeout=120)
    assert truth == {"broken": [0.0] * 4, "fixed": [2032.0] * 4}
    for c in lost:
        assert c.example is not None and "where float32 gives 1050608.0" in c.example
