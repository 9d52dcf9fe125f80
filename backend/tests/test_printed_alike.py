"""``views.printed_alike``: the jvp capture asks it whether its eqn-by-eqn interpretation prints
as JAX's JVP jaxpr instead of printing the interpretation (design 0013's attribution check). A map
it returns must mean the two texts are equal and each var prints under the name of its image;
``None`` only means "print and compare". The truth is JAX's own printout (``str``) of each."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import core
from jaxscope.internals import jvp_steps, views
from jaxscope.internals.calling import plan_call
from jaxscope.sandbox.snippet import load_snippet

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = [
    "exhibits/jvp/examples/sin_times_x.py",
    "exhibits/jvp/examples/rnn_loss.py",
    "exhibits/tracing/examples/mlp_loss.py",
    "exhibits/tracing/examples/attention.py",
]
MLP = """
import jax
import jax.numpy as jnp
import numpy as np

def f(params, x):
    h = x
    for p in params:
        mu = jnp.mean(h, axis=-1, keepdims=True)
        h = jax.nn.gelu((h - mu) @ p["w"] + p["b"]) / jnp.sqrt(2.0)
    return jnp.mean(h ** 2)

rng = np.random.default_rng(0)
params = [{"w": rng.standard_normal((4, 4)).astype(np.float32),
           "b": np.zeros(4, np.float32)} for _ in range(2)]
args = (params, rng.standard_normal((3, 4)).astype(np.float32))
"""


def _assert_printed_alike(a: core.Jaxpr, b: core.Jaxpr, m: dict[Any, Any]) -> None:
    assert str(a) == str(b)
    _, ctx_a = views.print_with_context(a)
    _, ctx_b = views.print_with_context(b)
    for x, y in m.items():
        assert str(core.pp_var(x, ctx_a)) == str(core.pp_var(y, ctx_b))


@pytest.mark.parametrize("source", [*PROGRAMS, "mlp"])
def test_the_interpretation_prints_as_jaxs_jvp_jaxpr(source: str) -> None:
    """On the shipped jvp programs and an MLP with layer norm's mean, GELU and a matmul (the
    bench's kind: dot_general, broadcast_in_dim, mul, tanh, each with its own printing rule),
    the capture's interpretation and JAX's JVP jaxpr are decided alike, and their texts and
    every mapped var's name agree; the capture's attribution says the same."""
    code = MLP if source == "mlp" else (ROOT / source).read_text()
    plan = plan_call(load_snippet(code))
    capture = jvp_steps.capture_jvp(plan, plan.make_jaxpr())
    a, b = capture.interpreted_jaxpr.jaxpr, capture.jvp_jaxpr.jaxpr
    m = views.printed_alike(a, b)
    if source in ("mlp", PROGRAMS[0]):  # the others hold custom_jvp eqns (inner jaxprs)
        assert m is not None  # decided without printing the interpretation
    if m is not None:
        _assert_printed_alike(a, b, m)
    assert capture.staged.attributed == (str(a) == str(b))
    assert capture.staged.attributed


def test_the_steps_are_those_of_the_printed_comparison(monkeypatch: pytest.MonkeyPatch) -> None:
    """The MLP's jvp capture with ``printed_alike`` deciding (names from JAX's JVP jaxpr's
    printout through the map) and with it never deciding (the interpretation printed, as
    before), and with the traced values returned as outputs of the trace (as before): every step
    record and the verdict serialise the same."""
    from exhibits.jvp.probe import staged_event, step_event

    def lines() -> list[str]:
        plan = plan_call(load_snippet(MLP))
        capture = jvp_steps.capture_jvp(plan, plan.make_jaxpr())
        events = [step_event(step) for step in capture.steps]
        return [e.model_dump_json() for e in [*events, staged_event(capture.staged)]]

    decided = lines()
    monkeypatch.setattr(jvp_steps, "printed_alike", lambda a, b: None)
    assert lines() == decided
    # The values read from each tracer's atom in the interpretation's jaxpr, or (where those
    # are not its atoms) from a second trace returning them as outputs: the same events.
    monkeypatch.undo()
    monkeypatch.setattr(jvp_steps, "_atoms_of", lambda tracers, jaxpr: None)
    assert lines() == decided


def _pair(f: Callable[..., Any], g: Callable[..., Any], *args: Any) -> tuple[Any, Any]:
    return jax.make_jaxpr(f)(*args).jaxpr, jax.make_jaxpr(g)(*args).jaxpr


X = np.ones((2, 3), np.float32)
DIFFERENT = {
    "literal": (lambda x: x * 2.0, lambda x: x * 3.0),
    "param": (lambda x: jnp.sum(x, axis=0), lambda x: jnp.sum(x, axis=1)),
    "wiring": (lambda x: jnp.sin(x) - jnp.cos(x), lambda x: jnp.cos(x) - jnp.sin(x)),
    "operand order": (lambda x: jnp.sin(x) - x, lambda x: x - jnp.sin(x)),
    "aval": (lambda x: x + 1.0, lambda x: x.astype(jnp.float16) + 1.0),
    "primitive": (lambda x: jnp.sin(x), lambda x: jnp.cos(x)),
    "unread output": (
        lambda x: jnp.sin(x) + (jnp.cos(x), x)[1],
        lambda x: jnp.sin(x) + (jnp.cos(x), jnp.cos(x))[1],
    ),
    "output": (lambda x: (jnp.sin(x), x), lambda x: (x, jnp.sin(x))),
}


@pytest.mark.parametrize("name", list(DIFFERENT))
def test_jaxprs_that_print_apart_are_never_mapped(name: str) -> None:
    a, b = _pair(*DIFFERENT[name], X)
    assert str(a) != str(b)
    assert views.printed_alike(a, b) is None


def test_the_same_program_traced_twice_is_mapped() -> None:
    def program() -> Callable[[jax.Array], jax.Array]:
        def f(x: jax.Array) -> jax.Array:  # a new function each time: traced afresh
            y = jnp.tanh(x @ x.T) * 2.0
            return jnp.sum(jnp.broadcast_to(y[:, :1], (2, 2)) + y.astype(jnp.float16))

        return f

    a, b = _pair(program(), program(), X)
    assert a is not b
    m = views.printed_alike(a, b)
    assert m is not None
    _assert_printed_alike(a, b, m)


def test_eqns_with_inner_jaxprs_are_left_to_the_texts() -> None:
    """An inner jaxpr (here a ``jit`` eqn's) is not compared structurally: ``None``, even
    where the texts agree."""

    def program() -> Callable[[jax.Array], Any]:
        def f(x: jax.Array) -> Any:
            return jax.jit(lambda y: jnp.sin(y) * 2.0)(x)

        return f

    a, b = _pair(program(), program(), X)
    assert a is not b and str(a) == str(b)
    assert views.printed_alike(a, b) is None


def test_the_printing_rules_taken_as_default_read_only_params() -> None:
    """Each ``lax`` printing rule ``printed_alike`` accepts prints the eqn with JAX's default
    rule after dropping or reshaping params: it reads nothing of the eqn but its params (so equal
    params, vars and primitive print alike)."""
    rules = {
        getattr(r, "__name__", ""): r
        for r in core.pp_eqn_rules.values()
        if getattr(r, "__module__", "") == "jax._src.lax.lax"
    }
    assert views._DEFAULT_LIKE_PP_RULES <= rules.keys()
    for name in views._DEFAULT_LIKE_PP_RULES:
        src = inspect.getsource(rules[name])
        assert src.count("core._pp_eqn(eqn.replace(params=") == 1, name
        assert set(re.findall(r"\beqn\.(\w+)", src)) == {"params", "replace"}, name
    # The default rule prints vars through the context and literals without it.
    assert "del context" in inspect.getsource(core.Literal.pretty_print)
    assert "context.var_names[self]" in inspect.getsource(core.Var.pretty_print)
