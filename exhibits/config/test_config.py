"""The config exhibit against JAX itself: the table against ``jax.config`` (public values and
context managers), and the "forces a retrace" column against a retrace experiment observed
through ``jax.monitoring`` (JAX's own trace-duration event)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import jax.monitoring
import jax.numpy as jnp
import pytest
from jaxscope.protocol import RunOptions
from jaxscope.sandbox.snippet import load_snippet

from exhibits.config import probe
from exhibits.config.events import ConfigOptionsListed, ConfigRetraceChecked
from exhibits.conftest import FakeContext
from testkit import run_cli

EXAMPLES = Path(__file__).resolve().parent / "examples"
REPO = Path(__file__).resolve().parents[2]
CONFIG: Any = jax.config
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"


def run_config(source: str) -> FakeContext:
    """Run the probe in-process on ``source`` loaded as the runner does for an exhibit that
    needs no snippet."""
    ctx = FakeContext(snippet=load_snippet(source, require_f=False), options=RunOptions())
    probe.run(ctx)
    return ctx


def test_every_option_with_its_value() -> None:
    ctx = run_config("")
    listed = ctx.one(ConfigOptionsListed)
    values = jax.config.values
    assert [o.name for o in listed.options] == sorted(values)
    for o in listed.options:
        assert o.value == repr(values[o.name]), o.name
    by_name = {o.name: o for o in listed.options}
    assert by_name["jax_enable_x64"].value == repr(CONFIG.jax_enable_x64)
    assert by_name["jax_enable_x64"].help == "Enable 64-bit types to be used"


def _scopable(name: str) -> bool:
    """Truth: does the public ``jax.<short name>`` context manager exist and work?"""
    cm = getattr(jax, name.removeprefix("jax_"), None)
    if cm is None or not callable(cm):
        return False
    try:
        with cm(getattr(jax.config, name)):
            return True
    except TypeError:
        return False


@pytest.mark.parametrize(
    "name",
    [
        "jax_enable_x64",
        "jax_default_matmul_precision",
        "jax_numpy_rank_promotion",
        "jax_debug_nans",
        "jax_log_compiles",
        "jax_platform_name",
        "jax_dump_ir_to",
    ],
)
def test_scoped_column_against_jax_context_managers(name: str) -> None:
    by_name = {o.name: o for o in run_config("").one(ConfigOptionsListed).options}
    if _scopable(name):
        assert by_name[name].scoped, name
    if name in ("jax_platform_name", "jax_dump_ir_to"):
        assert not by_name[name].scoped and by_name[name].kind == "Flag"


def _retraces(option: str, value: Any) -> bool:
    """Truth via jax.monitoring: does a jitted call inside ``with option(value)`` trace again?"""
    fired: list[str] = []

    def on(event: str, duration_secs: float, **kwargs: str | int) -> None:
        if event == TRACE_EVENT and kwargs.get("fun_name") == "g":
            fired.append(event)

    def g(x: jax.Array) -> jax.Array:
        return jnp.dot(x, x) * jnp.arange(3.0)

    jitted = jax.jit(g)
    jax.monitoring.register_event_duration_secs_listener(on)
    try:
        jitted(jnp.ones(3)).block_until_ready()
        before = len(fired)
        cm = getattr(jax, option.removeprefix("jax_"))
        with cm(value):
            jitted(jnp.ones(3)).block_until_ready()
        return len(fired) > before
    finally:
        jax.monitoring.unregister_event_duration_listener(on)


def test_retrace_experiment_matches_jax_monitoring_and_the_column() -> None:
    source = (EXAMPLES / "options.py").read_text()
    ctx = run_config(source)
    checks = ctx.of_type(ConfigRetraceChecked)
    assert [(c.option, c.value) for c in checks] == [(o, repr(v)) for o, v in probe.FLIPS]
    listed = {o.name: o for o in ctx.one(ConfigOptionsListed).options}
    assert any(c.retraced for c in checks) and any(not c.retraced for c in checks)
    for (option, value), c in zip(probe.FLIPS, checks, strict=True):
        # the experiment agrees with JAX's own trace events, and with the table's column
        assert c.retraced == _retraces(option, value), option
        assert c.retraced == c.trace_context == listed[option].trace_context, option
        assert c.fun_name == "f" and c.jaxpr is not None
    x64 = next(c for c in checks if c.option == "jax_enable_x64")
    assert x64.jaxpr is not None and "f64[3]" in x64.jaxpr.text


def test_no_snippet_needed_and_same_answer_twice() -> None:
    first = run_config("")
    second = run_config("# nothing here\n")
    assert first.one(ConfigOptionsListed) == second.one(ConfigOptionsListed)
    assert [c.retraced for c in first.of_type(ConfigRetraceChecked)] == [
        c.retraced for c in second.of_type(ConfigRetraceChecked)
    ]
    assert first.of_type(ConfigRetraceChecked)[0].fun_name == "default_fun"


def test_cli_options_without_a_file() -> None:
    done = run_cli("run", "config", "-", "--print", "options", cwd=REPO)
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout)
    assert sorted(table) == sorted(jax.config.values)
    assert table["jax_enable_x64"] == {"value": False, "scoped": True, "trace_context": True}
    assert table["jax_platform_name"]["scoped"] is False
    # values as JSON values where JSON has them (checked against jax.config itself), else repr
    kinds = set()
    for name, value in jax.config.values.items():
        printed = table[name]["value"]
        if value is None or type(value) in (bool, int, str, float):
            assert printed == value and type(printed) is type(value), name
        else:
            assert printed == repr(value), name
        kinds.add(type(printed))
    assert {bool, int, str, type(None)} <= kinds
    assert table["jax_default_matmul_precision"]["value"] is None


def test_golden_retraces_from_plain_jax() -> None:
    golden = json.loads((Path(__file__).parent / "golden" / "options.json").read_text())
    checks = run_config((EXAMPLES / "options.py").read_text()).of_type(ConfigRetraceChecked)
    assert {c.option: c.retraced for c in checks} == golden["retraced"]


def test_a_tracer_error_names_f_not_the_probes_counting_wrapper() -> None:
    # Before: "tracing the function f at .../exhibits/config/probe.py:91" (the wrapper that
    # counts traces) and its `*a` arguments. Now JAX's own words for f, as jax.jit(f) says them.
    from exhibits.conftest import run_probe

    source = (
        "import jax.numpy as jnp\n"
        "def f(x, w):\n"
        "    if x[0] > w:\n"
        "        return jnp.sum(x)\n"
        "    return w\n"
        "args = (jnp.ones(3), 0.5)\n"
    )
    snippet = load_snippet(source)
    with pytest.raises(jax.errors.TracerBoolConversionError) as info:
        run_probe("config", source)
    with pytest.raises(jax.errors.TracerBoolConversionError) as truth:
        jax.jit(snippet.f)(*snippet.args)
    assert str(info.value) == str(truth.value)
    assert "tracing the function f at <snippet>:2 for jit" in str(info.value)
    assert "probe.py" not in str(info.value)
