"""Train-step snippets for the tests of the exhibits that differentiate ``f`` (transpose,
nan_finder, transform_order): the first-leaf rule of ``jaxscope.grad_output``.

``TRAIN_STEP``: a 2-layer MLP and one SGD step, ``f(params, x, y) -> (loss, new_params)``: the
rule applies (the first leaf, output path ``[0]``, is the float32 loss). ``PARAMS_STEP``: the
same step returning only ``new_params`` (a dict whose first leaf, ``['b1']``, is an ``f32[4]``):
the rule does not apply, and JAX's scalar-output error is kept, short.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
from jaxscope.sandbox.snippet import load_snippet

REAL = Path(__file__).resolve().parents[1] / "examples" / "real"

TRAIN_STEP = """\
import jax
import jax.numpy as jnp
import numpy as np

LR = 0.1


def loss(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    pred = h @ params["w2"] + params["b2"]
    return jnp.mean((pred - y) ** 2)


def f(params, x, y):
    value, grads = jax.value_and_grad(loss)(params, x, y)
    return value, jax.tree.map(lambda p, g: p - LR * g, params, grads)


rng = np.random.default_rng(0)
params = {
    "w1": (rng.standard_normal((3, 4)) * 0.5).astype(np.float32),
    "b1": np.zeros(4, np.float32),
    "w2": (rng.standard_normal((4, 2)) * 0.5).astype(np.float32),
    "b2": np.zeros(2, np.float32),
}
x = rng.standard_normal((5, 3)).astype(np.float32)
y = rng.standard_normal((5, 2)).astype(np.float32)
args = (params, x, y)
in_axes = (None, 0, 0)
"""

PARAMS_STEP = TRAIN_STEP.replace("    return value, jax.tree.map(", "    return jax.tree.map(")
assert PARAMS_STEP != TRAIN_STEP

# The rule's note names the first leaf's key path.
FIRST_LEAF_PATH = "[0]"


def scan_rnn_step() -> str:
    """``examples/real/scan_rnn_step.py``: a ``lax.scan`` RNN train step, ``(loss,
    new_params)``."""
    return (REAL / "scan_rnn_step.py").read_text()


def loss_grad(source: str, argnums: tuple[int, ...]) -> Any:
    """The truth, computed here: ``jax.grad(lambda *a: f(*a)[0], argnums)(*args)`` of the
    snippet ``source`` (loaded afresh: new function objects)."""
    snippet = load_snippet(source)
    f = snippet.f
    return jax.grad(lambda *a: f(*a)[0], argnums=argnums)(*snippet.args)
