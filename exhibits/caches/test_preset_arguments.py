"""The caches presets on argument structures an adversarial review found them to mishandle:
a typed PRNG key, data passed in ``kwargs``, a preset that would change nothing, and
``static_changed`` with ``static_argnames`` or a static it cannot change.

The truth is JAX's: each test writes the calls the preset should make by hand, replays them on a
fresh ``jax.jit(f)`` from ``jax.clear_caches()`` and reads, per call, the avals JAX sees
(``jax.typeof`` of each leaf, by f's parameter names as ``inspect.signature.bind`` names them)
and which layer answered from public signals (``jax.monitoring`` trace/lower/compile events of
``f``, the C++ cache size), as ``test_caches.test_presets_match_plain_jax`` does.
"""

from __future__ import annotations

import inspect
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxscope.protocol import RunOptions
from jaxscope.sandbox.errors import classify
from jaxscope.sandbox.snippet import InvalidSnippet, load_snippet

from exhibits.caches.events import JitCallObserved
from exhibits.caches.golden import regen
from exhibits.conftest import run_probe

Call = tuple[tuple[Any, ...], dict[str, Any]]


def _aval(x: Any) -> str:
    aval = jax.typeof(x)
    return str(aval.str_short(short_dtypes=True)) + (" weak" if aval.weak_type else "")


def plain_jax(source: str, calls: list[Call]) -> list[tuple[str, dict[str, str]]]:
    """Per call of ``jax.jit(f, statics)`` on ``calls`` from cleared caches: the layer that
    answered (compile, executable, lowering, cpp) and ``{leaf: aval}`` of the traced leaves."""
    snippet = load_snippet(source)
    f = snippet.f
    jitted: Any = jax.jit(
        f, static_argnums=snippet.static_argnums, static_argnames=snippet.static_argnames
    )
    params = list(inspect.signature(f).parameters)
    statics = {params[i] for i in snippet.static_argnums} | set(snippet.static_argnames)
    jax.clear_caches()  # type: ignore[no-untyped-call]
    out = []
    for args, kwargs in calls:
        events = regen.Events()
        jax.monitoring.register_event_duration_secs_listener(events)
        size = jitted._cache_size()
        try:
            jax.block_until_ready(jitted(*args, **kwargs))  # type: ignore[no-untyped-call]
        finally:
            jax.monitoring.unregister_event_duration_listener(events)
        kinds = {e for e, n in events.seen if n in (f.__name__, f"jit({f.__name__})")}
        grew = jitted._cache_size() > size
        if regen.COMPILE in kinds:
            layer = "compile"
        elif regen.LOWER in kinds:
            layer = "executable"
        else:
            layer = "lowering" if regen.TRACE in kinds or grew else "cpp"
        bound = inspect.signature(f).bind(*args, **kwargs).arguments
        avals = {
            name + jax.tree_util.keystr(path): _aval(leaf)
            for name, value in bound.items()
            if name not in statics
            for path, leaf in jax.tree_util.tree_leaves_with_path(value)
        }
        out.append((layer, avals))
    return out


def probe_calls(source: str, preset: str) -> list[tuple[str, dict[str, str]]]:
    ctx = run_probe("caches", source, RunOptions(preset=preset))
    calls = [e for e in ctx.events if isinstance(e, JitCallObserved)]
    return [
        (c.layer, {d.name[: -len(" aval")]: d.now for d in c.entries if d.name.endswith(" aval")})
        for c in calls
    ]


def refusal(source: str, preset: str) -> tuple[str, int | None]:
    """The preset's refusal (an InvalidSnippet before any call): its message and blamed line."""
    with pytest.raises(InvalidSnippet) as info:
        run_probe("caches", source, RunOptions(preset=preset))
    failed = classify(info.value, "call", load_snippet(source).f)
    assert failed.kind == "invalid_snippet"
    assert "JAX raised this" not in (failed.explanation or "")
    return failed.message, failed.source.line if failed.source else None


# a. A typed PRNG key argument: kept (numpy cannot hold it, it is not data), the array changed.
KEY_SOURCE = (
    "import jax\nimport jax.numpy as jnp\n\n"
    "def f(k, x):\n"
    "    return jax.random.normal(k, jnp.shape(x)) * x\n\n"
    "args = (jax.random.key(0), jnp.ones(3))\n"
)
KEY = jax.random.key(0)
X3 = jnp.ones(3)


@pytest.mark.parametrize(
    ("preset", "changed"),
    [
        ("new_shape", [((KEY, X3), {}), ((KEY, jnp.ones(4)), {})]),
        ("numpy", [((KEY, np.ones(3, np.float32)), {})]),
        ("new_dtype", [((KEY, jnp.ones(3, jnp.float16)), {})]),
        ("weak_type", [((KEY, 1.0), {})]),
    ],
)
def test_presets_keep_a_prng_key_and_change_the_other_arrays(
    preset: str, changed: list[Call]
) -> None:
    truth = plain_jax(KEY_SOURCE, [((KEY, X3), {}), *changed])
    assert probe_calls(KEY_SOURCE, preset) == truth
    assert all(avals["k"] == "key<fry>[]" for _, avals in truth)
    assert truth[-1][0] != "cpp"  # JAX did new work: the preset's call is not the same call


# b. Data in kwargs: grown, cast, replaced like a positional argument.
KWARG_SOURCE = (
    "import jax.numpy as jnp\n\n"
    "def f(*, x):\n"
    "    return jnp.sum(x * 2)\n\n"
    "args = ()\n"
    "kwargs = {'x': jnp.ones((8, 3))}\n"
)
X83 = jnp.ones((8, 3))


@pytest.mark.parametrize(
    ("preset", "changed"),
    [
        ("new_shape", [((), {"x": X83}), ((), {"x": jnp.ones((9, 3))})]),
        ("numpy", [((), {"x": np.ones((8, 3), np.float32)})]),
        ("new_dtype", [((), {"x": jnp.ones((8, 3), jnp.float16)})]),
        ("weak_type", [((), {"x": 1.0})]),
    ],
)
def test_presets_change_keyword_arguments_as_positional_ones(
    preset: str, changed: list[Call]
) -> None:
    truth = plain_jax(KWARG_SOURCE, [((), {"x": X83}), *changed])
    assert probe_calls(KWARG_SOURCE, preset) == truth
    assert truth[-1][0] != "cpp"  # JAX did new work: the preset's call is not the same call


def test_new_shape_grows_a_keyword_batch_and_keeps_positional_params() -> None:
    source = (
        "import jax.numpy as jnp\n\n"
        "def f(params, x):\n"
        "    return jnp.sum(x @ params['w'])\n\n"
        "args = ({'w': jnp.ones((3, 2))},)\n"
        "kwargs = {'x': jnp.ones((8, 3))}\n"
    )
    params = {"w": jnp.ones((3, 2))}
    first: Call = ((params,), {"x": X83})
    truth = plain_jax(source, [first, first, ((params,), {"x": jnp.ones((9, 3))})])
    assert [layer for layer, _ in truth] == ["compile", "cpp", "compile"]
    assert probe_calls(source, "new_shape") == truth


# c. A preset that would change nothing: grown instead when the tracing exhibit's rule has
# something to grow (a Python number becomes shape (1,)), else refused before any call.
SCALAR_SOURCE = "def f(x):\n    return x * 2\n\nargs = (2.0,)\n"


def test_new_shape_grows_a_python_number_as_the_tracing_exhibit_does() -> None:
    truth = plain_jax(SCALAR_SOURCE, [((2.0,), {}), ((2.0,), {}), ((np.asarray([2.0]),), {})])
    assert [layer for layer, _ in truth] == ["compile", "cpp", "compile"]
    assert [avals["x"] for _, avals in truth] == ["f32[] weak", "f32[] weak", "f32[1]"]
    assert probe_calls(SCALAR_SOURCE, "new_shape") == truth


@pytest.mark.parametrize(
    ("source", "preset", "line", "words"),
    [
        (SCALAR_SOURCE, "weak_type", None, "args[0] is a Python float (2.0, weakly typed)"),
        (
            "import numpy as np\n\ndef f(x):\n    return x * 2\n\nargs = (np.ones(3),)\n",
            "numpy",
            None,
            "no traced argument is a jax.Array (args[0] is a numpy array f32[3])",
        ),
        (
            "import jax.numpy as jnp\n\ndef f(w, x):\n    return w * x\n\n"
            "args = (jnp.ones(3), jnp.ones(3))\nin_axes = (None, 7)\n",
            "new_shape",
            7,
            "in_axes = (None, 7) names: args[1] is f32[3], with no axis 7",
        ),
    ],
    ids=["weak_type-python-float", "numpy-numpy-arrays", "new_shape-in_axes-past-rank"],
)
def test_a_preset_that_would_change_nothing_says_so_before_calling(
    source: str, preset: str, line: int | None, words: str
) -> None:
    # What the old preset called: the first arguments again, which JAX answers from its C++
    # cache (no trace, no new entry): a call that shows nothing.
    snippet = load_snippet(source)
    first: Call = (tuple(snippet.args), {})
    assert [layer for layer, _ in plain_jax(source, [first, first])] == ["compile", "cpp"]
    message, blamed = refusal(source, preset)
    assert message.startswith(f"the {preset} preset") and words in message
    assert blamed == line


# d. static_changed: static_argnames, and a static it cannot change.
def test_static_changed_changes_a_static_keyword_argument() -> None:
    source = (
        "import jax.numpy as jnp\n\n"
        "def f(x, mode):\n"
        "    return x * (2 if mode == 'a' else 3)\n\n"
        "args = (jnp.ones(3),)\n"
        "kwargs = {'mode': 'a'}\n"
        "static_argnames = ('mode',)\n"
    )
    calls: list[Call] = [((X3,), {"mode": m}) for m in ("a", "a_", "a")]
    truth = plain_jax(source, calls)
    assert [layer for layer, _ in truth] == ["compile", "compile", "cpp"]
    ctx = run_probe("caches", source, RunOptions(preset="static_changed"))
    observed = [e for e in ctx.events if isinstance(e, JitCallObserved)]
    assert [c.layer for c in observed] == [layer for layer, _ in truth]
    assert [d.now for d in observed[1].entries if d.differs] == ["'a_'"]
    assert [d.name for d in observed[1].entries if d.differs] == ["static mode"]


@pytest.mark.parametrize(
    ("settings", "line", "words"),
    [
        (
            "args = (jnp.ones(6), (2, 3))\nstatic_argnums = (-1,)\n",
            6,
            "`shape` (args[1], static_argnums -1) automatically: it is (2, 3), a tuple",
        ),
        (
            "args = (jnp.ones(6),)\nkwargs = {'shape': (2, 3)}\nstatic_argnames = ('shape',)\n",
            7,
            "`shape` (kwargs['shape'], static_argnames) automatically: it is (2, 3), a tuple",
        ),
    ],
    ids=["static_argnums-negative", "static_argnames"],
)
def test_static_changed_names_the_static_it_cannot_change(
    settings: str, line: int, words: str
) -> None:
    source = (
        "import jax.numpy as jnp\n\ndef f(x, shape):\n    return x.reshape(shape)\n\n" + settings
    )
    message, blamed = refusal(source, "static_changed")
    assert words in message and "`calls`" in message and "-1 ((2, 3))" not in message
    assert blamed == line
