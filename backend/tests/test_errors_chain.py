"""The chain of error explainers (``jaxscope.explainers``): its order, assembled from the exhibit
registry, and each handler reached for the JAX error it owns, raised by JAX itself from a
snippet and classified as the runner does (``sandbox.errors.classify``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import pytest
from jax.extend.core import Primitive
from jaxscope import explainers
from jaxscope.explainers import ErrorContext, Explanation, Link, explain, explainer_chain
from jaxscope.sandbox.errors import classify
from jaxscope.sandbox.snippet import load_snippet

from exhibits.custom_vjp.explain import CUSTOM_VJP_HELP
from exhibits.export.explain import EXPORT_HELP
from exhibits.jvp.explain import NO_JVP_RULE_HELP
from exhibits.registry import EXHIBITS
from exhibits.transpose.explain import REVERSE_MODE_HELP
from exhibits.vmap.explain import VMAP_HELP

TRACER = "jaxscope.explainers.tracer_errors"
DELETED = "jaxscope.explainers.deleted_buffers"
TREES = "jaxscope.library_errors.tree_structures"
FLAX = "jaxscope.library_errors.flax_errors"
JVP = "exhibits.jvp.explain.explain_error"
TRANSPOSE = "exhibits.transpose.explain.explain_error"
CUSTOM_VJP = "exhibits.custom_vjp.explain.explain_error"
VMAP = "exhibits.vmap.explain.explain_error"
EXPORT = "exhibits.export.explain.explain_error"
PMAP = "exhibits.pmap.explain.explain_error"
SHAPES = "jaxscope.explainers.shapes"
BROADCAST = "jaxscope.explainers.broadcasting"
DOT = "jaxscope.dot_errors.dot_general_shapes"


def test_the_chain_order_is_stable() -> None:
    # Tracer errors first (they also set the kind), the errors raised inside Flax, optax and
    # jax.tree utilities, the exhibits in the registry's order, the generic shape error last
    # (custom_vjp's entry for the same message is more specific).
    assert [link.name for link in explainer_chain()] == [
        TRACER,
        DELETED,
        TREES,
        FLAX,
        JVP,
        TRANSPOSE,
        CUSTOM_VJP,
        VMAP,
        EXPORT,
        PMAP,
        SHAPES,
        BROADCAST,
        DOT,
    ]
    assert explainer_chain() is explainer_chain()  # assembled once


def test_the_registry_lists_every_exhibit_explainer() -> None:
    for exhibit in EXHIBITS.values():
        explain_py = exhibit.folder / "explain.py"
        defines = explain_py.exists() and "\ndef explain_error(" in explain_py.read_text()
        assert exhibit.explains_errors is defines, exhibit.id


HEAD = "import jax, jax.numpy as jnp\nfrom jax import lax\n"


def _raised(code: str, call: Callable[[Any], Any]) -> tuple[BaseException, object]:
    """The exception ``call(snippet)`` raises for ``code`` loaded as a snippet, and its ``f``."""
    snippet = load_snippet(HEAD + code)
    with pytest.raises(Exception) as info:
        call(snippet)
    return info.value, snippet.f


def _jit(s: Any) -> Any:
    return jax.jit(s.f)(*s.args)


def _grad(s: Any) -> Any:
    return jax.grad(s.f)(*s.args)


def _jvp(s: Any) -> Any:
    return jax.jvp(s.f, s.args, s.args)


def _vmap(s: Any) -> Any:
    return jax.vmap(s.f)(*s.args)


def _export_batch(s: Any) -> Any:
    """``jax.export`` of ``f`` with the first axis of its one argument symbolic (``b``)."""
    specs = jax.export.symbolic_args_specs(s.args, ["(b, ...)"])
    return jax.export.export(jax.jit(s.f))(*specs)


CASES: list[tuple[str, str, Callable[[Any], Any], str, Explanation]] = [
    (
        "if",
        "def f(x):\n    if x > 0:\n        return x\n    return -x\nargs = (1.0,)\n",
        _jit,
        TRACER,
        Explanation(explainers._BOOL_EXPLANATION, explainers._BOOL_FIX),
    ),
    (
        "while_loop_grad",
        "def f(x):\n    return lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)\n"
        "args = (1.0,)\n",
        _grad,
        TRANSPOSE,
        Explanation(REVERSE_MODE_HELP[1].explanation, REVERSE_MODE_HELP[1].fix),
    ),
    (
        "jvp_of_custom_vjp",
        "@jax.custom_vjp\ndef g(x):\n    return x * 2.0\n"
        "g.defvjp(lambda x: (g(x), None), lambda r, t: (t * 2.0,))\n"
        "def f(x):\n    return g(x)\nargs = (1.0,)\n",
        _jvp,
        CUSTOM_VJP,
        Explanation(CUSTOM_VJP_HELP[2].explanation, CUSTOM_VJP_HELP[2].fix),
    ),
    (
        "vmap_sizes",
        "def f(x, y):\n    return x + y\nargs = (jnp.ones(3), jnp.ones(4))\n",
        _vmap,
        VMAP,
        Explanation(VMAP_HELP[0].explanation, VMAP_HELP[0].fix),
    ),
    (
        "export_reshape_not_polymorphic",
        "def f(x):\n    return x.reshape(3, -1)\nargs = (jnp.ones((6, 8)),)\n",
        _export_batch,
        EXPORT,
        Explanation(EXPORT_HELP[0].explanation, EXPORT_HELP[0].fix),
    ),
    (
        "traced_shape",
        "def f(n):\n    return jnp.zeros((n,))\nargs = (3,)\n",
        _jit,
        SHAPES,
        Explanation(explainers.SHAPE_HELP[0].explanation, explainers.SHAPE_HELP[0].fix),
    ),
    (
        "custom_vjp_traced_shape",
        "@jax.custom_vjp\ndef g(x, n):\n    return x * jnp.zeros((n,))\n"
        "g.defvjp(lambda x, n: (g(x, n), None), lambda r, t: (t, None))\n"
        "def f(x):\n    return g(x, 3)\nargs = (1.0,)\n",
        _jit,
        CUSTOM_VJP,
        Explanation(CUSTOM_VJP_HELP[3].explanation, CUSTOM_VJP_HELP[3].fix),
    ),
]


@pytest.mark.parametrize(
    ("code", "call", "handler", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_each_handler_is_reached_for_its_error(
    code: str, call: Callable[[Any], Any], handler: str, expected: Explanation
) -> None:
    exc, f = _raised(code, call)
    answer = explain(exc, ErrorContext(stage="trace", f=f))
    assert answer == (handler, expected)
    failed = classify(exc, "trace", f)
    assert (failed.explanation, failed.fix) == (expected.explanation, expected.fix)
    assert failed.kind == ("tracer_error" if handler == TRACER else "user_exception")


def test_the_jvp_handler_is_reached_for_a_primitive_without_a_jvp_rule() -> None:
    # A primitive with an evaluation rule and an abstract evaluation but no JVP rule: JAX's
    # own "Differentiation rule for 'double_no_jvp' not implemented".
    double: Any = Primitive("double_no_jvp")  # jax.extend is untyped
    double.def_impl(lambda x: 2 * x)
    double.def_abstract_eval(lambda x: x)
    with pytest.raises(NotImplementedError, match="Differentiation rule for") as info:
        jax.grad(lambda x: double.bind(x))(1.0)
    answer = explain(info.value, ErrorContext())
    entry = NO_JVP_RULE_HELP[0]
    assert answer == (JVP, Explanation(entry.explanation, entry.fix))


def test_the_custom_vjp_handler_names_the_bwd_a_wrong_output_came_from() -> None:
    code = (
        "@jax.custom_vjp\ndef g(x, n):\n    return x * n\n"  # lines 3-5
        "def g_fwd(x, n):\n    return g(x, n), n\n"  # lines 6-7
        "def g_bwd(n, t):\n    return (t * n,)\n"  # lines 8-9: one cotangent for two args
        "g.defvjp(g_fwd, g_bwd)\n"
        "def f(x):\n    return g(x, 3.0)\nargs = (1.0,)\n"
    )
    exc, f = _raised(code, _grad)
    name, got = explain(exc, ErrorContext(stage="trace", f=f)) or ("", Explanation(""))
    entry = CUSTOM_VJP_HELP[0]
    assert name == CUSTOM_VJP and got.fix == entry.fix
    assert got.explanation == (
        f"{entry.explanation} The rule at fault is `g_bwd`, defined at line 8 (the bwd of `g`):"
        " it returns at line 9. JAX checks what bwd returned only after it returned, so its"
        " traceback ends at the call of `g` instead."
    )


def test_an_error_no_handler_knows_keeps_the_location_note() -> None:
    exc, f = _raised("def f(x):\n    raise ValueError('mine')\nargs = (1.0,)\n", _jit)
    assert explain(exc, ErrorContext(stage="trace", f=f, location_note="here")) is None
    failed = classify(exc, "trace", f)
    assert failed.kind == "user_exception" and failed.explanation is None and failed.fix is None


def test_a_handler_that_raises_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
        raise RuntimeError("a bug in an explainer")

    def answers(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
        return Explanation("second", "fix")

    chain = (Link("broken", broken), Link("answers", answers))
    monkeypatch.setattr(explainers, "explainer_chain", lambda: chain)
    assert explain(ValueError("x"), ErrorContext()) == ("answers", Explanation("second", "fix"))
