"""The jvp exhibit's error explainer (a link of ``jaxscope.explainers``' chain, listed through
the registry's ``explains_errors``): a primitive JAX cannot differentiate at all (no JVP rule).
Also part of the autodiff help that the transpose exhibit's ``ad_help`` combines."""

from __future__ import annotations

from jaxscope.exhibit_api import ErrorContext, Explanation, MessageHelp, first_match

NO_JVP_RULE_HELP: tuple[MessageHelp, ...] = (
    MessageHelp(
        "Differentiation rule for",
        "This primitive has no JVP rule in `ad.primitive_jvps`, so JAX cannot differentiate"
        " through it at all (neither forward nor reverse mode).",
        "Define one with `jax.custom_jvp`/`jax.custom_vjp` around the call, or register a JVP"
        " rule for the primitive (`ad.primitive_jvps[p] = rule`).",
    ),
)


def explain_error(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
    """The explanation of JAX's "Differentiation rule for ... not implemented", else None."""
    del ctx
    return first_match(NO_JVP_RULE_HELP, exc)
