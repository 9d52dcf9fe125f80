"""The export exhibit's error explainer (a link of ``jaxscope.explainers``' chain, listed
through the registry's ``explains_errors``): JAX's shape-polymorphism errors, raised while
``jax.export`` traces ``f`` with symbolic dimensions (a comparison or a division that does not
hold for every value of a dimension variable) or when an exported module is called with shapes
its specification does not allow."""

from __future__ import annotations

from jaxscope.exhibit_api import ErrorContext, Explanation, MessageHelp, first_match

EXPORT_HELP: tuple[MessageHelp, ...] = (
    MessageHelp(
        "Cannot divide evenly the sizes of shapes",
        "With a symbolic dimension (`b` of `shapes`) JAX must prove the reshape right for"
        " every value of `b`, not just for the example's: the remainder it names is not 0 for"
        " all `b`, so this dimension is not polymorphic under this reshape.",
        "Reshape by a factor of the symbolic size (`x.reshape(-1, 8)`, `x.reshape(b, 2, 4)`),"
        ' or give the dimension a specification that makes it divide (`"(3*k, 8)"` in'
        " `shapes`), or keep it concrete (`None` in `shapes`).",
    ),
    MessageHelp(
        ("Symbolic dimension comparison", "is inconclusive"),
        "Python code in `f` compared a symbolic dimension with a number (`if x.shape[0] > 4`,"
        " `max(b, 4)`): the answer depends on the value of the dimension variable, so JAX"
        " cannot pick one branch for the whole exported module.",
        "Compute on values instead of branching in Python (`jnp.where`, `jax.lax.cond`), or"
        ' tell JAX what holds with `constraints = ["b >= 5"]`, or keep the dimension'
        " concrete (`None` in `shapes`).",
    ),
    MessageHelp(
        "Input shapes do not match the polymorphic shapes specification",
        "The exported module checks its arguments' shapes against the `shapes` specification"
        " when it is called (its `shape_assertion`s): these arguments break one of the"
        " constraints JAX derived.",
        "Call it with shapes the specification allows, or export with a more general one.",
    ),
    MessageHelp(
        "Error refining shapes",
        "An exported module with symbolic dimensions is specialised to the call's shapes before"
        " XLA compiles it (shape refinement), and its `shape_assertion`s run then: one failed."
        " jax 0.10.2 checks the constraints it derived before that, with a clear message, but"
        " a constraint you gave (`constraints`) only here.",
        "Call it with shapes that satisfy every constraint listed for the export (the"
        " exhibit's Symbolic dimensions), or relax the `constraints`.",
    ),
    MessageHelp(
        "Cannot solve for values of dimension variables",
        "JAX computes each dimension variable from one argument dimension whose specification"
        " is that variable alone or a multiple of it (`b`, `2*b`); a variable that appears"
        " only in sums or products of variables cannot be solved.",
        'Give the variable its own dimension somewhere in `shapes` (e.g. `"(b, c)"` before'
        ' `"(b*c,)"`).',
    ),
    MessageHelp(
        "syntax error in symbolic shape",
        "A `shapes` entry is not a valid `jax.export` shape specification.",
        'Write one dimension per axis, separated by commas: `"(b, 8)"`, `"(2*b, _)"`'
        ' (`_` keeps the argument\'s own size), `"(b, ...)"`.',
    ),
)


def explain_error(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
    """The explanation and fix of one of JAX's shape-polymorphism errors, else None."""
    del ctx
    return first_match(EXPORT_HELP, exc)
