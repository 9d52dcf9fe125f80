"""``jaxscope.internals.interpret``: the one jaxpr interpreter evaluates as JAX does, shows its
hook every eqn in order, and lets the hook replace an eqn's evaluation or stop the walk; and the
private JAX facts it relies on (how ``core.eval_jaxpr`` binds an eqn, ``Literal``/``DropVar``,
why a ``DropVar``'s value is kept).

The truths are independent of the interpreter: ``jax.core.eval_jaxpr``, calling the function,
``jax.make_jaxpr`` of the function, ``jax.jvp``, and numpy.
"""

from __future__ import annotations

import inspect
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core, source_info_util
from jax._src.interpreters import ad
from jaxscope.internals.interpret import Env, EqnHook, eval_jaxpr, interpret


@jax.jit
def _helper(y: jax.Array) -> jax.Array:
    return jnp.cos(y) + 1.0


def f(x: Any) -> tuple[jax.Array, jax.Array]:
    """Literals (``2.0``, ``0.0``), an output no eqn reads (``top_k``'s indices), a ``jit`` eqn
    and a ``cond`` eqn (sub-jaxprs in params), two outputs."""
    top, _ = jax.lax.top_k(x, 3)
    z = jnp.sin(x) * 2.0 + _helper(x)
    w = jax.lax.cond(z[0] > 0, lambda a: a * 3, lambda a: a - 1, z)
    return jnp.sum(w) + jnp.sum(top), w


X = np.array([0.3, -1.2, 0.7, 2.5], np.float32)


def _closed() -> core.ClosedJaxpr:
    """``make_jaxpr(f)`` with ``top_k``'s unused output made a ``DropVar``, as JAX's DCE and
    linearisation write an output no eqn reads (``make_jaxpr`` prints it ``_`` but keeps a
    ``Var``)."""
    closed = jax.make_jaxpr(f)(X)
    eqns = list(closed.jaxpr.eqns)
    k = next(i for i, e in enumerate(eqns) if e.primitive.name == "top_k")
    kept, unused = eqns[k].outvars
    eqns[k] = eqns[k].replace(outvars=[kept, core.DropVar(unused.aval)])
    return core.ClosedJaxpr(closed.jaxpr.replace(eqns=eqns), closed.consts)


def test_eval_jaxpr_binds_as_bind_eqn_does() -> None:
    """``bind_eqn`` is ``core.eval_jaxpr``'s bind: the same params, contexts and source info."""
    src = inspect.getsource(core.eval_jaxpr)
    assert "bind_params = eqn.primitive.get_bind_params(eqn.params)" in src
    assert "source_info_util.current_name_stack() + eqn.source_info.name_stack" in src
    assert "source_info_util.user_context(traceback, name_stack=name_stack)" in src
    assert "eqn.ctx.manager" in src
    assert "eqn.primitive.bind(*map(read, eqn.invars), **bind_params)" in src
    assert "v.val if isinstance(v, Literal) else env[v]" in src
    assert callable(source_info_util.register_exclusion)


def test_dropvar_is_a_var_and_backward_pass_pops_every_output() -> None:
    """A ``DropVar`` is a ``Var`` (hashable, its own object), and ``backward_pass3`` pops the
    accumulator of every output of a linear eqn, ``DropVar`` s included: so the interpreter
    stores a ``DropVar``'s value instead of skipping it."""
    aval = core.typeof(1.0)
    a, b = core.DropVar(aval), core.DropVar(aval)
    assert isinstance(a, core.Var) and a != b and len({a: 1, b: 2}) == 2
    assert "env.pop(v).freeze() for v in eqn.outvars" in inspect.getsource(ad.backward_pass3)


def _numpy_f(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    z = np.sin(x) * 2.0 + (np.cos(x) + 1.0)
    w = z * 3 if z[0] > 0 else z - 1
    return np.sum(w) + np.sum(np.sort(x)[::-1][:3]), w


def test_evaluates_as_eval_jaxpr_and_the_function() -> None:
    closed = _closed()
    assert any(isinstance(v, core.DropVar) for e in closed.jaxpr.eqns for v in e.outvars)
    ours = eval_jaxpr(closed.jaxpr, closed.consts, X)
    jaxs = jax.core.eval_jaxpr(closed.jaxpr, closed.consts, X)
    called = jax.tree.leaves(f(X))
    assert len(ours) == len(jaxs) == len(called) == 2
    for a, b, c in zip(ours, jaxs, called, strict=True):
        # The same primitives bound eagerly on the same inputs: the same bits.
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        np.testing.assert_array_equal(np.asarray(a), np.asarray(c))
    for got, want in zip(ours, _numpy_f(X.astype(np.float64)), strict=True):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)


def test_interpreted_under_jax_transforms_stages_the_same_jaxpr() -> None:
    """Each eqn is bound whole, sub-jaxprs and params as JAX binds them: tracing the
    interpretation gives ``make_jaxpr(f)``'s text, and ``jax.jvp`` through it gives ``jax.jvp``
    of ``f``."""
    closed = jax.make_jaxpr(f)(X)

    def interpreted(x: jax.Array) -> list[Any]:
        return list(eval_jaxpr(closed.jaxpr, closed.consts, x))

    assert str(jax.make_jaxpr(interpreted)(X)) == str(closed)
    t = np.ones_like(X)
    got_p, got_t = jax.jvp(interpreted, (X,), (t,))
    want_p, want_t = jax.jvp(lambda x: list(f(x)), (X,), (t,))
    for a, b in zip([*got_p, *got_t], [*want_p, *want_t], strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


class _Log(EqnHook):
    """Records every call, with copies of what it was shown."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, Any, list[Any], list[Any] | None, set[Any]]] = []

    def before(self, index: int, eqn: Any, invals: list[Any], env: Env) -> bool:
        self.calls.append(("before", index, eqn, list(invals), None, set(env)))
        return False

    def after(self, index: int, eqn: Any, invals: list[Any], outvals: list[Any], env: Env) -> bool:
        self.calls.append(("after", index, eqn, list(invals), list(outvals), set(env)))
        return False


def test_hook_sees_every_eqn_in_order_with_its_values() -> None:
    closed = _closed()
    jaxpr = closed.jaxpr
    log = _Log()
    ran = interpret(jaxpr, closed.consts, [X], log)
    assert ran.stopped_at is None and ran.outvals is not None
    n = len(jaxpr.eqns)
    assert [(c[0], c[1]) for c in log.calls] == [
        (phase, i) for i in range(n) for phase in ("before", "after")
    ]
    assert [c[2] for c in log.calls[::2]] == list(jaxpr.eqns)
    literals = 0
    for phase, _, eqn, invals, outvals, env_vars in log.calls:
        # Inputs: a Literal's own value, otherwise the value the env holds (never a Literal).
        for v, x in zip(eqn.invars, invals, strict=True):
            if isinstance(v, core.Literal):
                literals += 1
                assert x is v.val and not any(w is v for w in env_vars)
            else:
                assert x is ran.env[v]
        # Before: the eqn's outputs are not written yet; after: they are, as evaluated.
        if phase == "before":
            assert not set(eqn.outvars) & env_vars
        else:
            assert outvals is not None and set(eqn.outvars) <= env_vars
            assert all(o is ran.env[v] for v, o in zip(eqn.outvars, outvals, strict=True))
    assert literals >= 2  # mul's 2.0, gt's 0.0
    # The DropVar's value is stored too (the backward pass pops accumulators of every output):
    # top_k's indices of the 3 largest of X.
    top_k = next(e for e in jaxpr.eqns if e.primitive.name == "top_k")
    assert isinstance(top_k.outvars[1], core.DropVar)
    np.testing.assert_array_equal(np.asarray(ran.env[top_k.outvars[1]]), np.argsort(-X)[:3])


class _SinToCos(EqnHook):
    """Replaces each ``sin`` eqn's evaluation with ``cos`` of its input."""

    def __init__(self) -> None:
        self.replaced: list[int] = []

    def evaluate(self, index: int, eqn: Any, invals: list[Any], env: Env) -> list[Any]:
        if eqn.primitive.name == "sin":
            self.replaced.append(index)
            return [jnp.cos(invals[0])]
        return list(super().evaluate(index, eqn, invals, env))


def test_hook_can_replace_an_eqns_evaluation() -> None:
    closed = jax.make_jaxpr(f)(X)
    hook = _SinToCos()
    out = interpret(closed.jaxpr, closed.consts, [X], hook).outvals
    assert out is not None
    assert [closed.jaxpr.eqns[i].primitive.name for i in hook.replaced] == ["sin"]
    x = X.astype(np.float64)
    z = np.cos(x) * 2.0 + (np.cos(x) + 1.0)
    w = z * 3 if z[0] > 0 else z - 1
    np.testing.assert_allclose(np.asarray(out[1]), w, rtol=1e-5)
    np.testing.assert_allclose(
        np.asarray(out[0]), np.sum(w) + np.sum(np.sort(x)[::-1][:3]), rtol=1e-5
    )


class _StopAt(EqnHook):
    def __init__(self, name: str, when: str) -> None:
        self.name, self.when = name, when
        self.evaluated: list[int] = []

    def before(self, index: int, eqn: Any, invals: list[Any], env: Env) -> bool:
        return self.when == "before" and eqn.primitive.name == self.name

    def evaluate(self, index: int, eqn: Any, invals: list[Any], env: Env) -> list[Any]:
        self.evaluated.append(index)
        return list(super().evaluate(index, eqn, invals, env))

    def after(self, index: int, eqn: Any, invals: list[Any], outvals: list[Any], env: Env) -> bool:
        return self.when == "after" and eqn.primitive.name == self.name


def test_hook_can_stop_the_walk_before_or_after_an_eqn() -> None:
    closed = jax.make_jaxpr(f)(X)
    names = [e.primitive.name for e in closed.jaxpr.eqns]
    k = names.index("sin")
    before = _StopAt("sin", "before")
    ran = interpret(closed.jaxpr, closed.consts, [X], before)
    assert (ran.outvals, ran.stopped_at, before.evaluated) == (None, k, list(range(k)))
    assert closed.jaxpr.eqns[k].outvars[0] not in ran.env
    after = _StopAt("sin", "after")
    ran = interpret(closed.jaxpr, closed.consts, [X], after)
    assert (ran.outvals, ran.stopped_at, after.evaluated) == (None, k, list(range(k + 1)))
    np.testing.assert_allclose(
        np.asarray(ran.env[closed.jaxpr.eqns[k].outvars[0]]), np.sin(X), rtol=1e-6
    )
