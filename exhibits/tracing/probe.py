"""The tracing exhibit's probe: trace the user's ``f`` to a jaxpr, streaming each eqn as JAX
records it, then call ``jax.jit(f)`` again and again to show the jit cache at work.

Events, in order:

* stage ``trace``: one :class:`EqnRecorded` per top-level eqn as JAX records it
  (``jaxscope.internals.recording``), then :class:`JaxprStaged` whose ``jaxpr.text`` is
  ``str(jax.make_jaxpr(f, static_argnums=...)(*args, **kwargs))`` byte for byte (static keyword
  arguments closed over, see ``jaxscope.internals.calling``). Python ``print`` output of ``f``
  during this stage is reported by the runner as ``stdout_printed`` with stage ``trace``.
* stage ``call`` (``call_index`` 0, 1, ...): see :mod:`exhibits.tracing.calls`.
"""

from __future__ import annotations

from jaxscope.internals.calling import plan_call
from jaxscope.internals.recording import recording_eqns
from jaxscope.internals.views import jaxpr_view
from jaxscope.protocol import JaxprStaged
from jaxscope.sandbox.probe_api import ProbeContext


def run(ctx: ProbeContext) -> None:
    """Run the tracing exhibit on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    plan = plan_call(ctx.snippet)
    with ctx.stage("trace"), recording_eqns(ctx.emit):
        closed = plan.make_jaxpr()
    ctx.emit(JaxprStaged(fun_name=plan.fun_name, jaxpr=jaxpr_view(closed)))
