"""Contract tests: the private JAX that ``jaxscope.internals.nan_walk`` relies on.

They fail loudly when a JAX upgrade changes how a jaxpr's eqns are evaluated one by one
(``Primitive.get_bind_params``, ``eqn.ctx.manager``, ``core.Literal.val``, ``core.eval_jaxpr``),
the params of the call-like eqns it evaluates inside (``jit``'s ``jaxpr``, ``cond``'s ``branches``,
``scan``'s ``jaxpr``/``num_consts``/``num_carry``/``length``/``reverse``), or how an eqn's user
frame is read (``source_info.traceback``, ``source_info_util.register_exclusion``).
"""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core, source_info_util
from jaxscope.internals.nan_walk import primal_output
from jaxscope.internals.views import snippet_source
from jaxscope.sandbox.snippet import load_snippet

SRC = """
import jax.numpy as jnp

def f(x):
    y = jnp.sqrt(x) * 2.0
    return jnp.sum(jnp.where(x > 0, y, 0.0))

args = (jnp.array([-1.0, 0.0, 4.0]),)
"""


def test_eval_one_eqn_at_a_time_names() -> None:
    assert hasattr(core, "Literal") and "val" in inspect.signature(core.Literal).parameters
    assert callable(core.Primitive.get_bind_params)
    closed = jax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(1.0)
    eqn = closed.jaxpr.eqns[1]
    lit = eqn.invars[1]
    assert isinstance(lit, core.Literal) and lit.val == 2.0
    assert eqn.primitive.get_bind_params(eqn.params) == eqn.params
    with eqn.ctx.manager:
        pass
    assert callable(source_info_util.register_exclusion)


def test_user_frame_of_an_eqn_and_the_forward_value() -> None:
    s = load_snippet(SRC)
    closed = jax.make_jaxpr(s.f)(*s.args)
    sqrt = next(e for e in closed.jaxpr.eqns if e.primitive.name == "sqrt")
    loc = snippet_source(sqrt.source_info.traceback)
    assert loc is not None and loc.line == 5 and loc.column == 8
    out = primal_output(s.f, s.args, "sqrt", loc)
    with np.errstate(invalid="ignore"):
        want = np.sqrt(np.array([-1.0, 0.0, 4.0], np.float32))
    np.testing.assert_array_equal(np.asarray(out), want)
    mul = next(e for e in closed.jaxpr.eqns if e.primitive.name == "mul")
    mul_loc = snippet_source(mul.source_info.traceback)
    assert mul_loc is not None
    np.testing.assert_array_equal(
        np.asarray(primal_output(s.f, s.args, "mul", mul_loc)),
        2.0 * want,
    )
    # Not found (wrong primitive for that frame): None.
    assert primal_output(s.f, s.args, "log", loc) is None


def test_call_like_eqn_params_and_eval_jaxpr() -> None:
    def f(x: jax.Array, xs: jax.Array) -> jax.Array:
        def body(c: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
            return c + x * x, c

        c, _ = jax.lax.scan(body, x, xs, reverse=True)
        out: jax.Array = jax.lax.cond(c > 0, lambda v: v, lambda v: -v, c)
        sin: jax.Array = jax.jit(jnp.sin)(c)
        return out + sin

    closed = jax.make_jaxpr(f)(1.0, jnp.arange(3.0))
    by_name = {e.primitive.name: e for e in closed.jaxpr.eqns}
    scan, cond, jit = by_name["scan"], by_name["cond"], by_name["jit"]
    assert isinstance(scan.params["jaxpr"], core.ClosedJaxpr)
    assert (scan.params["num_consts"], scan.params["num_carry"]) == (0, 1)
    assert (scan.params["length"], scan.params["reverse"]) == (3, True)
    assert all(isinstance(b, core.ClosedJaxpr) for b in cond.params["branches"])
    assert len(cond.params["branches"]) == 2
    assert isinstance(jit.params["jaxpr"], core.ClosedJaxpr)
    body = scan.params["jaxpr"]
    out = core.eval_jaxpr(body.jaxpr, body.consts, 1.0, 2.0)
    assert [float(v) for v in out] == [5.0, 1.0]  # carry 1 + 2*2, y = the carry in


def test_forward_value_inside_a_scan_iteration_and_a_cond_branch() -> None:
    src = (
        "import jax\nimport jax.numpy as jnp\n\n"
        "def f(c0, xs):\n"
        "    def body(c, x):\n"
        "        c = c * x\n"
        "        return c, jax.lax.cond(c > 5.0, lambda v: jnp.log(v), lambda v: v, c)\n"
        "    _, ys = jax.lax.scan(body, c0, xs)\n"
        "    return jnp.sum(ys)\n\n"
        "args = (1.0, jnp.array([2.0, 3.0, 4.0]))\n"
    )
    s = load_snippet(src)
    closed = jax.make_jaxpr(s.f)(*s.args)
    scan = next(e for e in closed.jaxpr.eqns if e.primitive.name == "scan")
    cond = next(e for e in scan.params["jaxpr"].jaxpr.eqns if e.primitive.name == "cond")
    branch_eqns = [e for b in cond.params["branches"] for e in b.jaxpr.eqns]
    log = next(e for e in branch_eqns if e.primitive.name == "log")
    loc = snippet_source(log.source_info.traceback)
    assert loc is not None and loc.line == 7
    carries = np.cumprod(np.array([1.0, 2.0, 3.0, 4.0], np.float32))[1:]  # 2, 6, 24
    for k in (1, 2):  # the log branch runs where the carry is over 5
        got = primal_output(s.f, s.args, "log", loc, [k])
        assert got is not None and float(got) == float(np.log(carries[k]))
    # Iteration 0 takes the other branch: no value; nor without an iteration for the scan.
    assert primal_output(s.f, s.args, "log", loc, [0]) is None
    assert primal_output(s.f, s.args, "log", loc) is None
    assert primal_output(s.f, s.args, "log", loc, [3]) is None


def test_custom_lin_bwd_params_and_the_first_bad_eqn_of_the_users_bwd() -> None:
    from jax._src.interpreters import ad
    from jaxscope.internals.nan_walk import custom_bwd
    from jaxscope.internals.transpose_walk import linearize_vjp, seed_cotangents, walk

    # custom_lin's transpose calls bwd.call_wrapped(*res, *cts) (a pure transformation2).
    src = inspect.getsource(ad._custom_lin_transpose)
    assert "cts_in = bwd.call_wrapped(*res, *cts_out)" in src
    source = (
        "import jax\nimport jax.numpy as jnp\n\n\n"
        "@jax.custom_vjp\ndef h(x):\n    return jnp.sin(x)\n\n\n"
        "def h_fwd(x):\n    return jnp.sin(x), x\n\n\n"
        "def h_bwd(r, g):\n    y = g * 2.0\n    return (y / (r - r),)\n\n\n"
        "h.defvjp(h_fwd, h_bwd)\n\n\n"
        "def f(x):\n    return h(x).sum()\n\n\n"
        "args = (jnp.array([1.0, 2.0]),)\n"
    )
    s = load_snippet(source)
    lin = linearize_vjp(s.f, s.args)
    (step,) = [
        r for r in walk(lin, seed_cotangents(lin)).steps if r.eqn.primitive.name == "custom_lin"
    ]
    bwd = custom_bwd(step.eqn, step.args, step.cts_in)
    assert bwd is not None and bwd.name == "h_bwd"
    assert bwd.line == source.splitlines().index("def h_bwd(r, g):") + 1
    assert bwd.first_bad is not None
    primitive, where = bwd.first_bad
    assert primitive == "div" and where is not None
    assert where.line == source.splitlines().index("    return (y / (r - r),)") + 1
    # JAX: the gradient is g * 2 / 0 = inf (numpy: the same division).
    with np.errstate(divide="ignore"):
        assert np.isinf(np.float32(2.0) / np.float32(0.0))
    assert np.isinf(np.asarray(jax.grad(s.f)(*s.args))).all()
    assert custom_bwd(lin.jaxpr.eqns[-1], [], []) is None  # reduce_sum: not a custom_lin
