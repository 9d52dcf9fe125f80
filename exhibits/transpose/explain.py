"""The transpose exhibit's error explainer (a link of ``jaxscope.explainers``' chain, listed
through the registry's ``explains_errors``): JAX's reverse-mode errors (no transpose rule,
reverse mode through ``while_loop``, ``grad`` of a non-scalar output or of an int input).

:func:`ad_help` is the autodiff help the transpose and partial_eval probes show beside a failed
``jax.grad`` (``GradAttempted``, ``RematUnavailable``): these entries, then the jvp exhibit's,
the custom_vjp exhibit's and the generic shape entry, in that order.
"""

from __future__ import annotations

from jaxscope.exhibit_api import SHAPE_HELP, ErrorContext, Explanation, MessageHelp, first_match

from exhibits.custom_vjp.explain import CUSTOM_VJP_HELP
from exhibits.jvp.explain import NO_JVP_RULE_HELP

REVERSE_MODE_HELP: tuple[MessageHelp, ...] = (
    MessageHelp(
        "Transpose rule (for reverse-mode differentiation)",
        "Reverse mode runs the linear jaxpr backwards, calling each primitive's transpose rule"
        " (`ad.primitive_transposes` / `ad.fancy_transposes`). This primitive has a JVP rule, so"
        " forward mode (`jax.jvp`) works, but no transpose rule: the backward pass cannot get"
        " past it.",
        "Register a transpose for the primitive (`ad.deflinear2`/`ad.primitive_transposes[p] ="
        " rule`), or wrap the computation in `jax.custom_vjp` and write its backward rule; or use"
        " forward mode (`jax.jvp`, `jax.jacfwd`).",
    ),
    MessageHelp(
        "Reverse-mode differentiation does not work for lax.while_loop",
        "A `while_loop` (and a `fori_loop` whose bounds are traced values) runs an unknown number"
        " of iterations, so JAX cannot save the residuals of every iteration for the backward"
        " pass: the loop has a JVP (forward mode works) but no transpose. `lax.scan` and a"
        " `fori_loop` with Python-int bounds have a fixed trip count: JAX lowers them to `scan`,"
        " stores one residual per iteration, and transposes the scan.",
        "Use `lax.scan` (or `lax.fori_loop` with static Python-int bounds), or bound the loop"
        " with a maximum trip count; forward mode (`jax.jvp`, `jax.jacfwd`) works as is.",
    ),
    MessageHelp(
        "Gradient only defined for scalar-output functions",
        "`jax.grad` seeds the backward pass with a cotangent of 1.0, which only makes sense for"
        " a scalar output; for a vector output the derivative is a Jacobian, and reverse mode"
        " computes one vector-Jacobian product per seed.",
        "Reduce to a scalar loss (`jnp.sum`, `jnp.mean`), or use `jax.vjp(f, *args)` with a"
        " cotangent of the output's shape, or `jax.jacrev` for the full Jacobian.",
    ),
    MessageHelp(
        "requires real- or complex-valued inputs",
        "The gradient is only defined for floating (or complex) inputs: an integer or bool input"
        " cannot be nudged by an infinitesimal, so it has no tangent or cotangent.",
        "Differentiate only the float arguments (`argnums=...`), cast the input to float, or"
        " pass `allow_int=True` to get a `float0` (empty) cotangent for it.",
    ),
)


def explain_error(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
    """The explanation and fix of one of JAX's reverse-mode errors, else None."""
    del ctx
    return first_match(REVERSE_MODE_HELP, exc)


AD_HELP: tuple[MessageHelp, ...] = (
    *REVERSE_MODE_HELP,
    *NO_JVP_RULE_HELP,
    *CUSTOM_VJP_HELP,
    *SHAPE_HELP,
)


def ad_help(exc: BaseException) -> Explanation | None:
    """The explanation and fix of one of JAX's autodiff errors (no transpose rule, reverse mode
    through ``while_loop``, non-scalar ``grad``, ``grad`` of an int input, no JVP rule, a
    ``custom_vjp`` bwd of the wrong structure, forward mode through a ``custom_vjp``, a traced
    value used as a shape), else None. The chain's custom_vjp link adds the bwd at fault; this
    does not (a failed attempt shows JAX's help only)."""
    return first_match(AD_HELP, exc)
