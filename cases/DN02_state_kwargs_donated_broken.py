"""A train step that donates its state by keyword; the old state is passed again.

Report: jax-ml/jax#9675 ("Loud failures if donate_argnums does not work?": a donated buffer
passed again now raises "Buffer has been deleted or donated"). The step donates ``state``
(``donate_argnames``) and the snippet keeps the *old* state in ``kwargs``: plain ``f(*args,
**kwargs)`` fails, and so must every exhibit, at the ``kwargs`` line (issue 33, class 10).
"""

import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.jit, donate_argnames="state")
def f(batch, state):
    grads = jax.grad(lambda w: jnp.mean((batch @ w) ** 2))(state["w"])
    return {"w": state["w"] - 0.1 * grads, "step": state["step"] + 1}


batch = jnp.ones((4, 3))
state = {"w": jnp.array([0.5, -1.0, 2.0]), "step": jnp.array(0)}
new_state = f(batch, state=state)  # state is donated here
args = (batch,)
kwargs = {"state": state}  # the old state: its buffers are gone
# transform_order: the call itself, jitted (not mapped over rows)
stack = ["jit"]
