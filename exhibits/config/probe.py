"""The config exhibit: every ``jax.config`` option (value, scoping, tracing context) from JAX's
own config objects (``internals.config_table``), and an experiment that flips a few options
around an already-traced ``jax.jit`` function to show which ones force a retrace.

The exhibit needs no snippet (``Exhibit.needs_snippet=False``): with ``f`` and ``args`` in the
snippet the experiment uses them, else :func:`default_fun` on ``jnp.ones(3)``.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jaxscope.exhibit_api import (
    ProbeContext,
    block_until_ready,
    config_flipped,
    config_options,
    fresh_caches,
    jaxpr_view,
    plan_call,
    trace_context_names,
)

from exhibits.config.events import ConfigOptionsListed, ConfigOptionView, ConfigRetraceChecked

# (option, value to flip to): the first three are in the tracing context, the last two not.
FLIPS: tuple[tuple[str, Any], ...] = (
    ("jax_enable_x64", True),
    ("jax_default_matmul_precision", "highest"),
    ("jax_numpy_rank_promotion", "warn"),
    ("jax_debug_nans", True),
    ("jax_log_compiles", True),
)


def default_fun(x: jax.Array) -> jax.Array:
    """The experiment's function when the snippet defines none."""
    return jnp.dot(x, x) * jnp.arange(3.0)


def show(value: Any) -> str:
    """An option's value as the table prints it (``repr``)."""
    return repr(value)


def as_json(value: Any) -> str | None:
    """The value as JSON text when JSON has it exactly (bool, int, finite float, str, None;
    not their subclasses, such as an enum member), else ``None``."""
    if value is None or type(value) in (bool, int, str):
        return json.dumps(value)
    if type(value) is float and math.isfinite(value):
        return json.dumps(value)
    return None


def _experiment_subject(ctx: ProbeContext) -> tuple[str, Callable[..., Any], tuple[Any, ...], Any]:
    snippet = ctx.snippet
    if snippet.defines_f:
        plan = plan_call(snippet)
        name = getattr(snippet.f, "__name__", "f")
        return name, plan.fun, plan.args, plan
    return "default_fun", default_fun, (jnp.ones(3),), None


def run(ctx: ProbeContext) -> None:
    """List every option, then flip each of :data:`FLIPS` around a traced jit call."""
    options = config_options()
    ctx.emit(
        ConfigOptionsListed(
            options=[
                ConfigOptionView(
                    name=o.name,
                    value=show(o.value),
                    value_json=as_json(o.value),
                    scoped=o.scoped,
                    trace_context=o.trace_context,
                    help=o.help,
                    kind=o.kind,
                    option_type=o.option_type,
                )
                for o in options
            ],
            trace_context_names=list(trace_context_names()),
        )
    )
    in_context = {o.name: o.trace_context for o in options}
    name, fun, args, plan = _experiment_subject(ctx)
    static = plan.static_argnums if plan is not None else ()
    kwargs = plan.kwargs if plan is not None else {}
    traces = [0]

    # wraps: JAX's messages name the user's function, its line and its parameters ("tracing
    # the function f at <snippet>:2 ... the argument x"), not this wrapper in probe.py.
    @functools.wraps(fun)
    def counted(*a: Any, **k: Any) -> Any:
        traces[0] += 1
        return fun(*a, **k)

    counted.__name__ = name
    fresh_caches()
    jitted = jax.jit(counted, static_argnums=static)
    with ctx.stage("call", 0):
        block_until_ready(jitted(*args, **kwargs))
    for i, (option, value) in enumerate(FLIPS, start=1):
        before = traces[0]
        with ctx.stage("call", i), config_flipped(option, value):
            block_until_ready(jitted(*args, **kwargs))
            retraced = traces[0] > before
            closed = jax.make_jaxpr(fun, static_argnums=static)(*args, **kwargs)
        ctx.emit(
            ConfigRetraceChecked(
                option=option,
                value=show(value),
                trace_context=in_context.get(option, False),
                retraced=retraced,
                traces=traces[0],
                fun_name=name,
                jaxpr=jaxpr_view(closed),
            )
        )
