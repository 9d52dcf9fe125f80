"""Contract tests for the flax 0.12.8 (and JAX) names ``jaxscope.internals.flax_hooks`` relies on:
they fail loudly when Flax changes how a parameter gets its key, or JAX its dead-code
elimination, so that the flax_params exhibit shows red tests rather than wrong keys."""

from __future__ import annotations

import hashlib
import inspect

import flax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from flax.core import scope as flax_scope
from flax.nnx import rnglib, variablelib
from jaxscope.internals.flax_hooks import recording_linen, recording_nnx, unused_invars


def test_flax_is_the_pinned_version() -> None:
    assert flax.__version__ == "0.12.8"


def test_linen_scope_methods_the_hooks_wrap() -> None:
    sig = inspect.signature(flax_scope.Scope.param)
    assert list(sig.parameters)[:3] == ["self", "name", "init_fn"]
    assert sig.parameters["unbox"].kind is inspect.Parameter.KEYWORD_ONLY
    assert list(inspect.signature(flax_scope.Scope.make_rng).parameters) == ["self", "name"]
    assert list(inspect.signature(flax_scope.Scope.get_variable).parameters) == [
        "self",
        "col",
        "name",
        "default",
    ]
    # make_rng folds (suffix..., counter) into the stream's root through LazyRng and
    # _fold_in_static, which calls fold_in through the module's `random` global
    assert flax_scope.random is jax.random  # type: ignore[attr-defined]
    assert "random.fold_in" in inspect.getsource(flax_scope._fold_in_static)
    assert "LazyRng.create(self.rngs[name], self.rng_counters[name])" in inspect.getsource(
        flax_scope.Scope.make_rng
    )
    assert flax.config.flax_fix_rng_separator is False


def test_a_linen_params_key_is_fold_in_of_the_sha1_of_its_path_and_counter() -> None:
    x = jnp.ones((1, 3))
    with recording_linen() as rec:
        params = nn.Dense(2).init(jax.random.key(7), x)
    assert [p.path for p in rec.params] == [("kernel",), ("bias",)]
    kernel = rec.params[0]
    assert kernel.rng is not None and kernel.rng.suffix == (1,)
    folded = int.from_bytes(hashlib.sha1((1).to_bytes(1, "big")).digest()[:4], "big")
    assert kernel.rng.folded == folded
    expected = jax.random.fold_in(jax.random.key(7), folded)
    assert np.array_equal(jax.random.key_data(kernel.rng.key), jax.random.key_data(expected))
    value = nn.initializers.lecun_normal()(expected, (3, 2))
    assert np.array_equal(value, params["params"]["kernel"])
    # restored on exit
    assert flax_scope.random is jax.random  # type: ignore[attr-defined]
    assert flax_scope.Scope.param.__qualname__ == "Scope.param"


def test_nnx_stream_and_variable_the_hooks_wrap() -> None:
    assert "random.fold_in(self.key[...], self.count[...])" in inspect.getsource(
        rnglib.RngStream.__call__
    )
    assert list(inspect.signature(variablelib.Variable.__init__).parameters)[:2] == [
        "self",
        "value",
    ]
    with recording_nnx() as rec:
        layer = nnx.Linear(3, 2, rngs=nnx.Rngs(5))
    assert [d.count for d in rec.draws] == [0, 1]
    assert all(d.tag == "default" for d in rec.draws)
    params = [v for v in rec.variables if v.type_name == "Param"]
    assert [v.variable is layer.kernel for v in params] == [True, False]
    # Linear's __init__ names its initializers kernel_init/bias_init (the creating frame)
    assert set(params[0].init_fns) >= {"kernel_init", "bias_init"}
    first = jax.random.fold_in(jax.random.key(5), 0)
    assert np.array_equal(jax.random.key_data(rec.draws[0].key), jax.random.key_data(first))
    assert rnglib.RngStream.__call__.__qualname__ == "RngStream.__call__"


def test_dce_marks_the_inputs_no_output_depends_on() -> None:
    closed = jax.make_jaxpr(lambda a, b, c: a * 2.0 + c)(1.0, 2.0, 3.0)
    assert unused_invars(closed) == [False, True, False]
