"""The vmap exhibit's error explainer (a link of ``jaxscope.explainers``' chain, listed through
the registry's ``explains_errors``): JAX's ``vmap`` errors (inconsistent mapped sizes,
``in_axes`` not matching the arguments or their ranks, a primitive with no batching rule)."""

from __future__ import annotations

from jaxscope.exhibit_api import ErrorContext, Explanation, MessageHelp, first_match

VMAP_HELP: tuple[MessageHelp, ...] = (
    MessageHelp(
        "vmap got inconsistent sizes for array axes to be mapped",
        "`jax.vmap` maps every mapped argument along its `in_axes` axis in lockstep, so those"
        " axes must all have the same size (the batch size); the message lists each mapped"
        " argument, its axis and that axis's size.",
        "Give the arguments the same batch size, or mark an argument that is shared by every"
        " example as not mapped with `None` in `in_axes` (e.g. `in_axes=(None, 0)`).",
    ),
    MessageHelp(
        "vmap in_axes must be an int, None, or a tuple",
        "`in_axes` needs one entry per positional argument of the call (a tuple as long as"
        " `args`), or a single int/None for all of them.",
        "Give `in_axes` exactly one entry per argument (`None` for a static or shared one).",
    ),
    MessageHelp(
        "vmap was requested to map its argument along axis",
        "`in_axes` asks to map an argument along an axis it does not have (a scalar, or an"
        " axis beyond its rank).",
        "Use `None` in `in_axes` for that argument (it is then shared by every example), or an"
        " axis the argument has.",
    ),
    MessageHelp(
        "Batching rule for",
        "Inside `jax.vmap` every primitive applied to a mapped value needs a batching rule"
        " (`batching.fancy_primitive_batchers[p]`), which says how to run it on a whole batch;"
        " this primitive has none. (With no mapped input it would be bound unbatched.)",
        "Register a rule (`batching.primitive_batchers[p] = rule`), or wrap the call in"
        " `jax.custom_batching.custom_vmap`, or loop with `jax.lax.map` instead of `vmap`.",
    ),
)


def explain_error(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
    """The explanation and fix of one of JAX's ``vmap`` errors, else None."""
    del ctx
    return first_match(VMAP_HELP, exc)
