"""Contract tests: the private JAX that ``jaxscope.internals.nan_walk`` relies on.

They fail loudly when a JAX upgrade changes how a jaxpr's eqns are evaluated one by one
(``Primitive.get_bind_params``, ``eqn.ctx.manager``, ``core.Literal.val``) or how an eqn's user
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
