"""The private JAX facts ``internals/review_hooks.py`` relies on (the review exhibit), one test
each: a JAX upgrade that changes one fails here by name.
"""

from __future__ import annotations

import linecache
import random
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import core, jaxpr_util
from jax._src.array import ArrayImpl
from jaxscope.internals import review_hooks
from jaxscope.snippet_model import SNIPPET_FILENAME

SNIPPET = """
import random
import jax
import jax.numpy as jnp
import numpy as np

TABLE = np.arange(512, dtype=np.float32)


def reads(x):
    a = float(x)
    b = x.item()
    c = np.asarray(x)
    print(x)
    return a, b, c


def draws(x):
    return x + np.random.normal() + random.random()


def uses_table(x):
    return x + TABLE


def eager(x):
    y = x * 1.0
    return y + 0


def loss(x):
    y = jnp.sin(x) * 2.0
    return jnp.sum(y)


def grad_step(x):
    g = jax.grad(loss)(x)
    return g
"""


def _load() -> dict[str, Any]:
    linecache.cache[SNIPPET_FILENAME] = (
        len(SNIPPET),
        None,
        SNIPPET.splitlines(True),
        SNIPPET_FILENAME,
    )
    ns: dict[str, Any] = {}
    exec(compile(SNIPPET, SNIPPET_FILENAME, "exec"), ns)
    return ns


def _line(text: str) -> int:
    (hit,) = [i + 1 for i, line in enumerate(SNIPPET.splitlines()) if text in line]
    return hit


def test_array_impl_has_the_read_methods() -> None:
    for name in review_hooks.READ_METHODS:
        assert name in vars(ArrayImpl), name


def test_device_to_host_reads_are_seen_at_the_snippet_line_and_undone() -> None:
    ns = _load()
    originals = {n: getattr(ArrayImpl, n) for n in review_hooks.READ_METHODS}
    with review_hooks.device_to_host_reads() as reads:
        ns["reads"](jnp.float32(2.0))
    got = [(r.op, r.line) for r in reads]
    assert got == [
        ("float()", _line("a = float(x)")),
        (".item()", _line("b = x.item()")),
        ("np.asarray()", _line("c = np.asarray(x)")),
        ("str()/print()", _line("print(x)")),
    ]
    assert {n: getattr(ArrayImpl, n) for n in review_hooks.READ_METHODS} == originals
    assert np.asarray.__module__ == "numpy"


def test_random_calls_know_whether_jax_traces() -> None:
    ns = _load()
    with review_hooks.random_calls() as calls:
        ns["draws"](1.0)
        jax.jit(ns["draws"])(1.0)
    assert [(c.api, c.tracing) for c in calls] == [
        ("np.random.normal", False),
        ("random.random", False),
        ("np.random.normal", True),
        ("random.random", True),
    ]
    assert getattr(random.random, "__self__", None) is not None  # the bound method is back


def test_trace_ctx_and_eval_trace() -> None:
    assert isinstance(core.trace_ctx.trace, core.EvalTrace)
    assert not review_hooks.is_tracing()


def test_the_guard_stops_a_python_scalar_and_allowed_lines_pass() -> None:
    ns = _load()
    x = jnp.ones(3)
    ns["eager"](x)
    with pytest.raises(Exception) as info, review_hooks.guarded(set()):
        ns["eager"](x)
    assert review_hooks.is_transfer_guard_error(info.value)
    with review_hooks.guarded({_line("y = x * 1.0"), _line("return y + 0")}):
        ns["eager"](x)
    config: Any = jax.config
    assert config.jax_transfer_guard_host_to_device is None


def test_profiler_counts_one_execution_per_jitted_call_and_eager_op() -> None:
    ns = _load()
    x = jnp.ones(3)
    g = jax.jit(lambda v: v * 2 + 1)
    g(x)
    ns["eager"](x)
    assert review_hooks.executions(lambda: g(x))[1] == 1
    assert review_hooks.executions(lambda: ns["eager"](x))[1] == 2


def test_baked_constants_with_the_line_that_reads_them() -> None:
    ns = _load()
    closed = jax.jit(ns["uses_table"]).trace(jnp.ones(512)).jaxpr
    (c,) = review_hooks.baked_constants(closed)
    assert (c.aval, c.nbytes, c.numpy) == ("f32[512]", 2048, True)
    assert c.line == _line("return x + TABLE")
    assert np.shares_memory(c.value, ns["TABLE"])
    assert list(jaxpr_util.eqns_using_var(closed.jaxpr, closed.jaxpr.constvars[0]))


def test_the_guard_follows_the_line_back_from_a_function_jax_called() -> None:
    """``jax.grad`` calls the snippet's ``loss``, then uploads in its backward pass after
    ``loss`` returned: the transfer belongs to ``grad_step``'s line (the innermost snippet frame),
    so allowing the two lines found lets the step finish."""
    ns = _load()
    x = jnp.ones(3)
    ns["grad_step"](x)
    found: set[int] = set()
    for _ in range(4):
        try:
            with review_hooks.guarded(found):
                ns["grad_step"](x)
            break
        except Exception as exc:
            assert review_hooks.is_transfer_guard_error(exc)
            tb, lines = exc.__traceback__, []
            while tb is not None:
                if tb.tb_frame.f_code.co_filename == SNIPPET_FILENAME:
                    lines.append(tb.tb_lineno)
                tb = tb.tb_next
            assert lines[-1] not in found
            found.add(lines[-1])
    assert found == {_line("y = jnp.sin(x) * 2.0"), _line("g = jax.grad(loss)(x)")}


def test_executions_counts_launches_without_the_python_tracer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The profiler runs with ``python_tracer_level`` 0 (the default 1 records every Python call:
    an eager step of 20,000 ops ran 27x slower and a long one ran the worker out of memory), and
    the launches are still counted: one per eager op, one per jitted call."""
    seen: list[Any] = []
    start = jax.profiler.start_trace

    def spy(log_dir: Any, **kw: Any) -> None:
        seen.append(kw.get("profiler_options"))
        start(log_dir, **kw)

    monkeypatch.setattr(jax.profiler, "start_trace", spy)
    double = jax.jit(lambda v: v * 2)
    x = jnp.ones(3)
    double(x)

    def step() -> Any:
        y = x
        for _ in range(50):
            y = y + 1
        return double(y)

    step()
    out, n = review_hooks.executions(step)
    assert n == 51
    np.testing.assert_array_equal(np.asarray(out), np.full(3, 102.0))
    (options,) = seen
    assert options is not None and options.python_tracer_level == 0


def test_numpy_reads_by_keyword_are_recorded_and_still_work() -> None:
    """``np.asarray(a=x)`` and ``np.array(object=x)`` (numpy's own keywords) went to the hook's
    positional ``obj`` and raised TypeError under the review exhibit only."""
    ns = _load()
    x = jnp.arange(3.0)
    code = compile(
        "def kw_reads(x):\n    a = np.asarray(a=x)\n    b = np.array(object=x)\n    return a, b\n",
        SNIPPET_FILENAME,
        "exec",
    )
    exec(code, ns)
    with review_hooks.device_to_host_reads() as reads:
        a, b = ns["kw_reads"](x)
    np.testing.assert_array_equal(a, np.asarray(x))
    np.testing.assert_array_equal(b, np.asarray(x))
    assert [(r.op, r.line) for r in reads] == [("np.asarray()", 2), ("np.array()", 3)]
