"""``internals.structure_change`` (issue 33, class 1): JAX's own explanation of a changed input
structure (``tree_util.equality_errors_pytreedef``, what ``jax.explain_cache_misses`` prints),
then the object inside the node metadata that is not equal. Checked against JAX: the same path
and words as JAX's function, and the named part really is unequal while it prints the same."""

from __future__ import annotations

import dataclasses
import re

import jax
import optax  # type: ignore[import-untyped]
from flax import nnx
from flax.nnx import extract
from jax._src import tree_util
from jaxscope.internals.structure_change import structure_change


def _optimizer_tree() -> object:
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    return jax.tree.structure(
        extract.to_tree(nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param))
    )


def test_rebuilt_optax_transformation_is_named_with_jaxs_words() -> None:
    before, now = _optimizer_tree(), _optimizer_tree()
    ((path, _, _, reason),) = list(tree_util.equality_errors_pytreedef(now, before))
    change = structure_change("optimizer", now, before)
    assert change is not None
    assert change.path == "optimizer" + tree_util.keystr(tuple(path))
    assert change.jax_reason == reason == "the pytree node metadata does not match"
    assert change.inside == "GraphDef attribute 'tx'.init"
    assert (change.owner, change.owner_module, change.prints_same) == (
        "GradientTransformationExtraArgs",
        "optax",
        True,
    )
    assert "a new function object chain.<locals>.init_fn" in change.detail
    assert change.fix().startswith("build the optax transformation once, outside the loop")
    assert structure_change("optimizer", now, now) is None


def test_the_named_functions_are_unequal_and_print_the_same() -> None:
    a = optax.adam(1e-3)
    b = optax.adam(1e-3)
    strip = re.compile(r" at 0x[0-9a-f]+")
    assert a.init != b.init
    assert strip.sub("", repr(a.init)) == strip.sub("", repr(b.init))


def test_a_dict_key_change_keeps_jaxs_words_only() -> None:
    now = jax.tree.structure({"w": 1, "b": 2})
    before = jax.tree.structure({"w": 1, "bias": 2})
    change = structure_change("params", now, before)
    assert change is not None and change.inside == ""
    ((_, _, _, reason),) = list(tree_util.equality_errors_pytreedef(now, before))
    assert change.text() == f"at input path params, {reason} (JAX's explanation)"


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Scaled:
    x: jax.Array
    rate: float = dataclasses.field(metadata={"static": True})


def test_a_changed_static_value_is_said_with_its_values() -> None:
    now = jax.tree.structure(Scaled(jax.numpy.ones(2), 0.2))
    before = jax.tree.structure(Scaled(jax.numpy.ones(2), 0.1))
    change = structure_change("s", now, before)
    assert change is not None and not change.prints_same
    assert "now 0.2, before 0.1" in change.detail
    assert change.fix().startswith("a static value changed")
