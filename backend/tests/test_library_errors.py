"""Errors raised inside Flax, optax and ``jax.tree`` utilities get a why and a fix in the user's
terms (issue 15; ``jaxscope.library_errors``), on the real-world cases ``cases/FO*``, ``NX*``,
``LN*`` (each cites its public report).

For each broken case plain JAX/Flax is run here, in this process: what it raises, and the deepest
frame of the snippet on its traceback (the user's line). ``classify`` (what the worker sends as
``run_failed``) must keep that line and give the explanation and fix; the trees it names are
checked against the snippet's own objects (``opt_state[0].mu``'s type and keys), and the fix it
suggests is the one the ``_fixed`` case applies, which plain JAX runs. A hint that says
``static_argnums`` does not help is held to that too.
"""

from __future__ import annotations

import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from jaxscope.explainers import explainer_chain
from jaxscope.internals.pytree_walk import first_difference
from jaxscope.protocol import RunFailed
from jaxscope.sandbox.errors import classify
from jaxscope.sandbox.probe_api import SNIPPET_FILENAME
from jaxscope.sandbox.snippet import load_snippet
from jaxscope.snippet_model import Snippet

CASES = Path(__file__).resolve().parents[2] / "cases"
TREES = "jaxscope.library_errors.tree_structures"
FLAX = "jaxscope.library_errors.flax_errors"


def load(name: str) -> Snippet:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return load_snippet((CASES / f"{name}.py").read_text())


def jit_call(s: Snippet) -> Any:
    return jax.jit(s.f, static_argnums=s.static_argnums or ())(*s.args)


def grad_call(s: Snippet) -> Any:
    return jax.grad(s.f)(*s.args)


def raised(s: Snippet, call: Callable[[Snippet], Any]) -> BaseException:
    with pytest.raises(Exception) as info:
        call(s)
    return info.value


def structure(tree: Any) -> Any:
    """``jax.tree.structure`` (its treedef compared with ``==``)."""
    return jax.tree.structure(tree)


def snippet_line(exc: BaseException) -> int | None:
    """The deepest line of the snippet on ``exc``'s traceback (plain Python's own record)."""
    lines = [
        fs.lineno
        for fs in traceback.extract_tb(exc.__traceback__)
        if fs.filename == SNIPPET_FILENAME
    ]
    return lines[-1] if lines else None


def explained(name: str, call: Callable[[Snippet], Any] = jit_call) -> tuple[Snippet, RunFailed]:
    s = load(name)
    exc = raised(s, call)
    failed = classify(exc, "trace", s.f)
    assert failed.error_class == type(exc).__name__
    line = snippet_line(exc)
    if line is not None:  # the user's line, as Python's traceback has it
        assert failed.source is not None and failed.source.line == line
    return s, failed


def test_the_library_handlers_follow_the_tracer_errors() -> None:
    names = [link.name for link in explainer_chain()]
    assert names.index(TREES) == 2 and names.index(FLAX) == 3


# ---- two trees of different structure (optax, jax.tree.map) ------------------------------


def test_grads_of_the_predictions_are_one_array_where_the_params_are_a_tree() -> None:
    s, failed = explained("FO01_grads_wrt_preds_broken")
    mu = s.namespace["opt_state"][0].mu
    assert failed.error_class == "TypeError"  # optax's multiplication got the whole dict
    text = failed.explanation or ""
    assert "`grads` and `opt_state[0].mu`" in text
    assert f"`opt_state[0].mu` is a {type(mu).__qualname__} node" in text
    assert "`grads` is an array" in text
    assert "argnums" in (failed.fix or "")


def test_params_passed_third_are_not_differentiated() -> None:
    _s, failed = explained("FO02_params_not_first_broken")
    assert "`grads` and `model_optimizer_state[0].mu`" in (failed.explanation or "")
    assert "argnums=i" in (failed.fix or "")
    # the hint applied: argnums=2 is the params' position in model_loss(x, y, params)
    fixed = load("FO02_params_not_first_fixed")
    _loss, new = jit_call(fixed)
    params = fixed.args[2]
    assert structure(new) == structure(params)
    want = jax.grad(fixed.namespace["model_loss"], argnums=2)(*fixed.args[:3])
    assert structure(want) == structure(params)


def test_a_frozen_dict_optimizer_state_against_plain_dict_gradients() -> None:
    s, failed = explained("FO03_frozen_opt_state_broken")
    mu = s.namespace["opt_state"][0].mu
    grads = jax.grad(s.namespace["loss"])(*s.args)
    diff = first_difference(grads, mu)
    assert diff is not None and diff.kind == "type" and diff.keypath == ""
    assert type(mu).__qualname__ == "FrozenDict" and type(grads) is dict
    assert "`grads` is a dict node" in (failed.explanation or "")
    assert "`opt_state[0].mu` is a FrozenDict node" in (failed.explanation or "")
    assert "flax.core.unfreeze" in (failed.fix or "")


def test_a_gradient_with_keys_missing() -> None:
    s, failed = explained("FO04_partial_grads_broken")
    missing = sorted(set(s.namespace["params"]) - {"head"})
    assert f"keys only in `opt_state[0].mu`: {missing!r}" in (failed.explanation or "")
    assert "optax.multi_transform" in (failed.fix or "")


def test_a_tuple_of_argnums_gradients() -> None:
    s, failed = explained("FO05_argnums_tuple_broken")
    grads = jax.grad(s.namespace["loss"], argnums=(0, 1))(*s.args)
    n = len(grads)
    assert f"`grads` is a tuple node with {n} children" in (failed.explanation or "")
    assert "`opt_state[0].trace`" in (failed.explanation or "")  # sgd with momentum
    assert "g_params, g_x = grads" in (failed.fix or "")


@pytest.mark.parametrize(
    "name",
    [
        "FO01_grads_wrt_preds_fixed",
        "FO02_params_not_first_fixed",
        "FO03_frozen_opt_state_fixed",
        "FO04_partial_grads_fixed",
        "FO05_argnums_tuple_fixed",
    ],
)
def test_each_fix_applied_runs_and_keeps_the_params_structure(name: str) -> None:
    s = load(name)
    out = jit_call(s)
    eager = s.f(*s.args)
    np.testing.assert_allclose(
        np.concatenate([np.ravel(x) for x in jax.tree.leaves(out)]),
        np.concatenate([np.ravel(x) for x in jax.tree.leaves(eager)]),
        rtol=1e-5,
        atol=1e-6,
    )


def test_frozen_backbone_stays_frozen_with_the_fix() -> None:
    s = load("FO04_partial_grads_fixed")
    new = jit_call(s)
    params = s.namespace["params"]
    for a, b in zip(
        jax.tree.leaves(new["backbone"]), jax.tree.leaves(params["backbone"]), strict=True
    ):
        np.testing.assert_array_equal(a, b)
    assert any(
        not np.array_equal(a, b)
        for a, b in zip(jax.tree.leaves(new["head"]), jax.tree.leaves(params["head"]), strict=True)
    )


def test_a_type_error_of_the_mapped_function_on_matching_trees_is_not_blamed_on_structure() -> None:
    s = load_snippet(
        "import jax, jax.numpy as jnp\n"
        "def f(x):\n"
        "    return jax.tree.map(lambda a, b: a + 'x', {'a': x}, {'a': x})\n"
        "args = (1.0,)\n"
    )
    exc = raised(s, jit_call)
    failed = classify(exc, "trace", s.f)
    assert "pytree structure" not in (failed.explanation or "")


# ---- Flax NNX and linen ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "call", "what"),
    [
        ("NX01_counter_closed_over_broken", jit_call, "Count"),
        ("NX02_optimizer_closed_over_broken", lambda s: s.f(*s.args), "Param"),
        ("NX03_merge_no_copy_broken", grad_call, "RngCount"),
    ],
)
def test_an_nnx_object_changed_under_a_jax_transform(
    name: str, call: Callable[[Snippet], Any], what: str
) -> None:
    _, failed = explained(name, call)
    assert failed.kind == "user_exception"
    assert f"(a `{what}`)" in (failed.explanation or "")
    assert "nnx.jit(step)(model, optimizer, x)" in (failed.fix or "")
    assert "`static_argnums` does not help" in (failed.fix or "")
    if name.startswith("NX03"):
        assert "copy=True" in (failed.fix or "")


def test_static_argnums_does_not_help_an_nnx_module_changed_inside() -> None:
    # what the hint says: the module made static is still changed from inside the trace
    s = load("NX01_counter_closed_over_fixed")
    counter, x = s.args

    def plain(counter: Any, x: Any) -> Any:
        return counter(x)

    with pytest.raises(Exception, match="different trace level"):
        jax.jit(plain, static_argnums=0)(counter, x)


def test_the_nnx_fixes_applied_run_and_carry_the_state_out() -> None:
    s = load("NX01_counter_closed_over_fixed")
    counter, x = s.args
    before = int(counter.count[...])
    out = s.f(counter, x)
    assert int(counter.count[...]) == before + 1  # nnx.jit carried the new count out
    np.testing.assert_allclose(np.asarray(out), np.asarray(x) * (before + 1))
    s = load("NX02_optimizer_closed_over_fixed")
    model = s.args[0]
    kernel = np.asarray(model.layers[0].kernel[...])
    loss = s.f(*s.args)
    assert np.isfinite(float(loss))
    assert not np.array_equal(np.asarray(model.layers[0].kernel[...]), kernel)  # updated
    s = load("NX03_merge_no_copy_fixed")
    grads = jax.grad(s.f)(*s.args)
    assert structure(grads) == structure(s.args[0])


def test_a_linen_module_passed_to_jit() -> None:
    _s, failed = explained("LN01_module_jit_arg_broken")
    assert "A Flax linen Module (`Model`)" in (failed.explanation or "")
    assert failed.source is not None and failed.source.function == "f"  # f as a whole
    fix = failed.fix or ""
    assert "static_argnums=(i,)" in fix and "model.apply" in fix
    # both remedies the hint gives apply: static (the fixed case) and closing over
    fixed = load("LN01_module_jit_arg_fixed")
    want = fixed.f(*fixed.args)
    np.testing.assert_allclose(np.asarray(jit_call(fixed)), np.asarray(want))
    model = fixed.args[0]
    closed = jax.jit(lambda params, batch: fixed.f(model, params, batch))(*fixed.args[1:])
    np.testing.assert_allclose(np.asarray(closed), np.asarray(want))


def test_a_linen_module_under_grad_is_explained_too() -> None:
    _, failed = explained("LN01_module_jit_arg_broken", grad_call)
    assert "A Flax linen Module (`Model`)" in (failed.explanation or "")


# ---- trees a library made and paired: the fix follows where they came from (issue 33) -----


def test_nnx_labels_that_keep_param_wrappers_get_the_nnx_fix_not_argnums() -> None:
    s, failed = explained("FO06_nnx_param_labels_broken")
    text, fix = failed.explanation or "", failed.fix or ""
    # the two trees are optax's own locals, as the traceback holds them
    assert "`mask_tree` is a Param node" in text and "`pytree` is an array" in text
    assert "optax.transforms._masking.mask_pytree" in text
    assert "argnums" not in fix and "is_leaf=lambda v: isinstance(v, nnx.Variable)" in fix
    # what the explanation says of the user's labels holds: each is a Param wrapping a string
    from flax import nnx

    labels = s.namespace["labels"]
    wrapped = jax.tree.leaves(labels, is_leaf=lambda v: isinstance(v, nnx.Variable))
    assert wrapped and all(type(v) is nnx.Param for v in wrapped)


def test_a_dict_of_labels_for_an_nnx_state_gets_the_state_fix() -> None:
    _s, failed = explained("FO07_nnx_dict_labels_broken")
    text, fix = failed.explanation or "", failed.fix or ""
    assert "`mask_tree` is a dict node with 2 children, `pytree` is a State node" in text
    assert "argnums" not in fix and "nnx.State({...})" in fix


@pytest.mark.parametrize("name", ["FO06_nnx_param_labels_fixed", "FO07_nnx_dict_labels_fixed"])
def test_the_nnx_label_fixes_applied_freeze_the_backbone_kernel_only(name: str) -> None:
    # plain JAX/Flax on the fixed case: it runs, and the multi_transform does what the labels
    # say (the frozen kernel unchanged, the head's kernel moved by Adam)
    from flax import nnx

    s = load(name)
    if name.startswith("FO06"):  # f is the nnx.jit step a user calls
        model = s.args[0]
        before = np.asarray(model.backbone.kernel[...]), np.asarray(model.head.kernel[...])
        loss = s.f(*s.args)
        after = np.asarray(model.backbone.kernel[...]), np.asarray(model.head.kernel[...])
    else:  # f builds its own model; the same step is taken here on one built alike
        model = s.namespace["Model"](nnx.Rngs(0))
        before = np.asarray(model.backbone.kernel[...]), np.asarray(model.head.kernel[...])
        optimizer = nnx.Optimizer(model, s.namespace["tx"], wrt=nnx.Param)
        loss, grads = nnx.value_and_grad(s.namespace["loss_fn"])(model, *s.args)
        optimizer.update(model, grads)
        after = np.asarray(model.backbone.kernel[...]), np.asarray(model.head.kernel[...])
        np.testing.assert_allclose(float(jit_call(s)), float(loss), rtol=1e-5)
    assert np.isfinite(float(loss))
    np.testing.assert_array_equal(after[0], before[0])  # frozen
    assert not np.array_equal(after[1], before[1])  # trained


def test_argnums_is_offered_only_for_the_users_own_gradient_at_the_root() -> None:
    # FO01's array is the user's `grads` where the moments are a whole dict: argnums applies;
    # the same leaf/node difference between two trees optax made (FO06) gets no argnums
    _s, failed = explained("FO01_grads_wrt_preds_broken")
    assert "argnums" in (failed.fix or "")
    _s, failed = explained("FO06_nnx_param_labels_broken")
    assert "argnums" not in (failed.fix or "")


@pytest.mark.parametrize("name", ["C09_none_grads_broken", "C09_none_prefix_broken"])
def test_a_none_where_the_other_tree_has_a_value_gets_the_none_fix(name: str) -> None:
    # a None in either tree is an empty node (the C09 cases' notes); no argnums is offered
    _s, failed = explained(name)
    fix = failed.fix or ""
    assert "is_leaf=lambda t: t is None" in fix and "argnums" not in fix
    assert "None (a node with no children)" in (failed.explanation or "")


def test_the_none_fix_applied_runs_as_the_hint_says() -> None:
    s = load("C09_none_grads_fixed")
    out = jit_call(s)
    params, grads = s.args
    np.testing.assert_allclose(np.asarray(out["w"]), np.asarray(params["w"]) - 0.1 * 0.5)
    np.testing.assert_array_equal(np.asarray(out["b"]), np.asarray(params["b"]))  # untouched
    assert grads["b"] is None
