"""The partial_eval exhibit's probe: the JVP jaxpr of the user's ``f`` split in two by JAX's own
partial evaluator, then remat as a policy on the same splitter.

Events, in order:

* stage ``trace``: :class:`JaxprSplit`: the JVP jaxpr (``jax.make_jaxpr`` of ``jax.jvp`` of
  the user's call, inputs = primal leaves then tangent leaves, static arguments closed over),
  split by ``pe.partial_eval_jaxpr_nounits`` with ``ctx.options.known`` (one flag per input;
  ``None``: primals known, tangents unknown), and the residuals that cross from the known
  (forward) jaxpr to the unknown (linear) one (``jaxscope.internals.split``);
* stage ``compile``: one :class:`RematPolicyMeasured` per checkpoint policy, streamed as each is
  measured (``jaxscope.internals.remat``): no checkpoint, each argument-free policy of
  ``jax.checkpoint_policies``, and the named policies when ``f`` calls ``checkpoint_name``.

The remat table needs ``jax.grad``: for an ``f`` without a scalar floating-point output JAX's own
error ends the run after the split was shown.
"""

from __future__ import annotations

from jaxscope.internals.calling import plan_call
from jaxscope.internals.remat import remat_table
from jaxscope.internals.split import default_known, jvp_program, split_event
from jaxscope.sandbox.probe_api import ProbeContext


def run(ctx: ProbeContext) -> None:
    """Run the partial_eval exhibit on ``ctx.snippet`` (user exceptions propagate unchanged)."""
    plan = plan_call(ctx.snippet)
    with ctx.stage("trace"):
        program = jvp_program(plan)
        known = ctx.options.known
        if known is None:
            known = default_known(len(program.labels), program.n_primals)
        event, _ = split_event(program, known)
    ctx.emit(event)
    with ctx.stage("compile"):
        for row in remat_table(plan):
            ctx.emit(row)
