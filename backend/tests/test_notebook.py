"""``jaxscope.notebook.snippet_for``: the snippet ``jaxscope.show`` runs in the sandbox is
``f`` and its arguments written as source (design 0034). Checked by running the snippet's text
in a fresh namespace, as the sandbox does, against the objects it was written from: the same
arguments (dtype, shape, bytes; on device or numpy), the same ``f`` (its jaxpr). What cannot be
written is refused with the name at fault. The notebook itself, executed and rendered in
Chromium, is ``e2e/test_notebook.py``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import jaxscope
import ml_dtypes
import numpy as np
import pytest
from jaxscope.notebook import NotRepresentable, Shown, snippet_for, snippet_parts

OFFSET = 0.5


def _inner(x: jax.Array) -> jax.Array:
    return jnp.cos(x) + OFFSET


@jax.jit
def wrapped(x: jax.Array, params: dict[str, Any], n: int = 2) -> jax.Array:
    return jnp.sum(_inner(x) * params["w"]) + n


def loaded(code: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "snippet"}
    exec(compile(code, "<snippet>", "exec"), namespace)
    return namespace


def test_the_snippet_rebuilds_f_and_args_exactly() -> None:
    x = jnp.arange(6.0, dtype=jnp.bfloat16).reshape(2, 3)
    params = {"w": np.array([[1, -2, 3]], dtype=np.int32), "s": (1.5, True, None)}
    code = snippet_for(wrapped, (x, params))
    ns = loaded(code)
    got_x, got_params = ns["args"]
    assert isinstance(got_x, jax.Array) and got_x.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(np.asarray(got_x), np.asarray(x))
    assert isinstance(got_params["w"], np.ndarray) and got_params["w"].dtype == np.int32
    np.testing.assert_array_equal(got_params["w"], params["w"])
    assert got_params["s"] == (1.5, True, None)
    # The same function: the jaxpr of the snippet's f equals the original's.
    assert str(jax.make_jaxpr(ns["f"])(*ns["args"])) == str(jax.make_jaxpr(wrapped)(x, params))
    # What it needed came along: the helper, the constant, the decorator's module.
    assert "def _inner(x" in code and "OFFSET = 0.5" in code and "import jax\n" in code


def test_shape_dtype_structs_and_scalars() -> None:
    def g(a: jax.Array, b: float) -> jax.Array:
        return a * b

    spec = jax.ShapeDtypeStruct((4, 2), jnp.float16)  # type: ignore[no-untyped-call]
    code = snippet_for(g, (spec, 3))
    assert "f = g" in code
    assert loaded(code)["args"] == (spec, 3)


LIMIT = float("inf")


def _scaled(x: Any, s: Any) -> Any:
    return jnp.minimum(x * s, LIMIT)


def test_non_finite_floats_and_numpy_scalars_are_written_as_they_are() -> None:
    # repr(nan) is 'nan', a name the snippet lacks (NameError before the run); a numpy scalar
    # written as a Python float became a weak-typed f32 (another jaxpr than f16 / strong f32).
    cases: list[tuple[Any, ...]] = [
        (float("nan"), -float("inf")),
        (np.float16(1.5), np.ones(2, np.float16)),
        (np.ones(3, np.float32), np.float32(2.0)),
        (complex(float("nan"), 1.0), np.bool_(True)),
    ]
    for args in cases:
        ns = loaded(snippet_for(_scaled, args))
        got = ns["args"]
        for a, b in zip(got, args, strict=True):
            assert type(a) is type(b) and np.asarray(a).dtype == np.asarray(b).dtype
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert ns["LIMIT"] == float("inf")
        want = jax.make_jaxpr(_scaled)(*args)
        assert str(jax.make_jaxpr(ns["f"])(*got)) == str(want)


WEIGHTS = jnp.arange(3.0)
TABLE = np.array([[1, 2], [3, 4]], np.int8)


def _weighted(x: jax.Array) -> Any:
    return x * WEIGHTS + TABLE.sum()


def test_a_global_array_constant_is_rebuilt_before_it_is_used() -> None:
    # The constants were written above the helper that rebuilds arrays: NameError on
    # _jaxscope_array before anything ran.
    x = jnp.ones(3)
    ns = loaded(snippet_for(_weighted, (x,)))
    assert isinstance(ns["WEIGHTS"], jax.Array) and isinstance(ns["TABLE"], np.ndarray)
    np.testing.assert_array_equal(np.asarray(ns["WEIGHTS"]), np.asarray(WEIGHTS))
    np.testing.assert_array_equal(ns["TABLE"], TABLE)
    np.testing.assert_array_equal(np.asarray(ns["f"](*ns["args"])), np.asarray(_weighted(x)))


def _noisy(key: jax.Array, x: jax.Array) -> jax.Array:
    return jax.random.normal(key, x.shape) + x


def test_a_typed_prng_key_argument_is_written_by_its_key_data_and_impl() -> None:
    # np.asarray of a jax.random.key raised TypeError out of jaxscope.show before.
    x = jnp.ones(3)
    for key in (
        jax.random.key(7),
        jax.random.key(7, impl="rbg"),
        jax.random.split(jax.random.key(1)),
    ):
        ns = loaded(snippet_for(_noisy, (key, x)))
        got = ns["args"][0]
        assert got.dtype == key.dtype and got.shape == key.shape
        np.testing.assert_array_equal(jax.random.key_data(got), jax.random.key_data(key))
        if key.shape == ():
            np.testing.assert_array_equal(np.asarray(ns["f"](got, x)), np.asarray(_noisy(key, x)))


@jax.custom_vjp
def _clip_grad(x: Any) -> Any:
    return x


def _clip_fwd(x: Any) -> Any:
    return x, None


def _clip_bwd(_: Any, g: Any) -> Any:
    return (jnp.clip(g, -1.0, 1.0),)


_clip_grad.defvjp(_clip_fwd, _clip_bwd)


@jax.custom_jvp
def _soft(x: Any) -> Any:
    return jnp.log1p(jnp.exp(x))


@_soft.defjvp
def _soft_jvp(primals: Any, tangents: Any) -> Any:
    (x,), (t,) = primals, tangents
    return _soft(x), t * 10.0  # a rule unlike the true derivative: the test sees it is used


def _custom_loss(x: Any) -> Any:
    return jnp.sum(_clip_grad(x) * 3.0 + _soft(x))


def test_custom_vjp_and_custom_jvp_rules_come_along() -> None:
    # defvjp/defjvp are statements apart from the def: without them the snippet's functions
    # had no rule ('No VJP defined for custom_vjp function _clip_grad using defvjp').
    x = jnp.ones(3)
    ns = loaded(snippet_for(_custom_loss, (x,)))
    want = jax.grad(_custom_loss)(x)
    np.testing.assert_array_equal(np.asarray(want), np.full(3, 1.0 + 10.0))  # clipped 3, rule 10
    np.testing.assert_array_equal(np.asarray(jax.grad(ns["f"])(*ns["args"])), np.asarray(want))


_double = lambda x: x * 2.0  # noqa: E731 - a lambda on purpose
_lambdas = (lambda x: jnp.sin(x) + OFFSET, lambda x: jnp.cos(x) + OFFSET)


def test_a_lambda_is_written_as_its_expression() -> None:
    # Refused before: 'f is a lambda: define it with def'.
    x = jnp.arange(3.0)
    f = jax.jit(lambda x, k=2: jnp.sum(_double(x) ** k))  # type: ignore[no-untyped-call]
    code = snippet_for(f, (x,))
    assert "f = jax.jit(lambda x, k=2: jnp.sum(_double(x) ** k))\n" in code
    assert "_double = lambda x: x * 2.0\n" in code
    ns = loaded(code)
    assert str(jax.make_jaxpr(ns["f"])(*ns["args"])) == str(jax.make_jaxpr(f)(x))
    # Two lambdas on one line: the one that is f.
    for g, want in zip(_lambdas, ("jnp.sin(x)", "jnp.cos(x)"), strict=True):
        code = snippet_for(g, (x,))
        assert f"f = lambda x: {want} + OFFSET\n" in code and "OFFSET = 0.5" in code
        ns = loaded(code)
        assert str(jax.make_jaxpr(ns["f"])(*ns["args"])) == str(jax.make_jaxpr(g)(x))
    # A lambda written over lines inside a call.
    h = jax.vmap(
        lambda x: (  # over lines
            x + 1.0
        )
    )
    assert "f = (jax.vmap(\n        lambda x: (  # over lines\n" in snippet_for(h, (x,))
    np.testing.assert_array_equal(np.asarray(loaded(snippet_for(h, (x,)))["f"](x)), x + 1.0)


def test_a_lambda_without_source_is_refused() -> None:
    made = eval("lambda x: x + 1")  # a lambda Python has no source for
    with pytest.raises(NotRepresentable, match="lambda whose source Python cannot find"):
        snippet_for(made, (1.0,))


def test_what_cannot_be_written_is_refused_with_its_name() -> None:
    scale = 2.0

    def closure(x: float) -> float:
        return x * scale

    with pytest.raises(NotRepresentable, match=r"enclosing function .*scale"):
        snippet_for(closure, (1.0,))

    def plain(x: Any) -> Any:
        return x

    with pytest.raises(NotRepresentable, match=r"args\[0\]\['k'\] is of type object"):
        snippet_for(plain, ({"k": object()},))
    with pytest.raises(NotRepresentable, match="more than"):
        snippet_for(plain, (np.zeros(200_000, np.float32),))


def test_the_editor_shows_the_users_code_not_the_generated_arguments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The recording's code was the whole snippet: the editor showed _jaxscope_array and the
    # arguments' base64 under the user's function.
    import jaxscope.notebook as notebook
    import jaxscope.standalone as standalone

    x = jnp.arange(6.0).reshape(2, 3)
    parts = snippet_parts(_weighted, (x, {"n": np.int8(3)}))
    assert "_jaxscope_array" not in parts.shown and "base64" not in parts.shown
    assert "def _weighted(x" in parts.shown and "f = _weighted" in parts.shown
    assert parts.shown.endswith(
        "# args = (float32[2,3], {'n': int8[]}): the notebook's arguments (jaxscope.show)\n"
    )
    # The run's line numbers are the shown code's: it is a prefix of what runs.
    assert parts.code.startswith(parts.shown.rsplit("\n# args", 1)[0])
    assert "_jaxscope_array" in parts.code and "WEIGHTS = _jaxscope_array" in parts.code
    ran: list[str] = []
    embedded: list[str] = []

    def run(exhibit: str, code: str, options: Any) -> list[Any]:
        ran.append(code)
        return []

    def embed(template: str, payload: dict[str, Any]) -> str:
        embedded.append(payload["code"])
        return "<p>"

    monkeypatch.setattr(notebook, "_run", run)
    monkeypatch.setattr(standalone, "read_template", lambda: "<body></body>")
    monkeypatch.setattr(standalone, "embed", embed)
    shown = jaxscope.show(_weighted, x, {"n": np.int8(3)})
    assert ran == [parts.code] and embedded == [parts.shown]
    assert shown.code == parts.code and shown.shown_code == parts.shown
    assert shown.recording is not None and shown.recording["code"] == parts.shown


def _shown(template: str, code: str) -> Shown:
    payload = {"format": "jaxscope-recording/1", "code": code, "events": [{"type": "x"}]}
    return Shown("tracing", code, [], "", template=template, recording=payload)


def test_the_app_is_sent_once_per_notebook_and_each_output_sends_its_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each output was the whole standalone file in an iframe's srcdoc (1.6 MB for any run).
    import jaxscope.notebook as notebook

    monkeypatch.setattr(notebook, "_CARRIERS", {})
    cell = ["cell-1"]
    monkeypatch.setattr(notebook, "_cell_id", lambda: cell[0])
    app = "<html><head><script>/* the app " + "x" * 500_000 + " </script>*/</script></head>"
    app += "<body></body></html>"
    outputs: list[str] = []
    for c in ("cell-1", "cell-2", "cell-3"):
        cell[0] = c
        outputs.append(_shown(app, f"# {c} </script>")._repr_html_())
    first, second, third = outputs
    assert len(first) > 500_000 and len(second) < 5_000 and len(third) < 5_000
    # The output's text/plain (the notebook keeps it too) was the dataclass's repr: all of it.
    assert repr(_shown(app, "r")) == "<jaxscope.show tracing: 0 events, no events>"
    for out in outputs:
        # static parts a parser keeps apart: no "</script>" of the data or app ends an element
        assert out.count("</script>") == (3 if out is first else 2)
        assert 'class="jaxscope-data"' in out and "jaxscope-app" in out
    assert 'class="jaxscope-app"' in first and 'class="jaxscope-app"' not in second
    # The same Shown shown again decides as before; a rerun of the carrying cell carries again
    # (its old output, the carrier, is replaced); another cell does not.
    cell[0] = "cell-1"
    assert 'class="jaxscope-app"' in _shown(app, "again")._repr_html_()
    cell[0] = "cell-4"
    assert 'class="jaxscope-app"' not in _shown(app, "other")._repr_html_()
    # JupyterLab says which cells were deleted: once the carrier's is, the next output carries.
    deleted: list[str] = ["cell-9"]
    monkeypatch.setattr(notebook, "_deleted_cells", lambda: deleted)
    assert 'class="jaxscope-app"' not in _shown(app, "other")._repr_html_()
    deleted.append("cell-1")
    assert 'class="jaxscope-app"' in _shown(app, "after deletion")._repr_html_()
    deleted.clear()
    cell[0] = "cell-6"
    assert 'class="jaxscope-app"' not in _shown(app, "after that")._repr_html_()
    cell[0] = "cell-4"
    # Another app (another jaxscope version): its first output carries it.
    assert 'class="jaxscope-app"' in _shown(app + " ", "new")._repr_html_()
    # An app-only output, for a notebook whose carrier was deleted.
    monkeypatch.setattr(notebook, "_CARRIERS", {})
    assert 'class="jaxscope-app"' in notebook._App(app)._repr_html_()
    cell[0] = "cell-5"
    assert 'class="jaxscope-app"' not in _shown(app, "after")._repr_html_()


def test_show_is_reachable_as_jaxscope_show_and_renders_an_iframe() -> None:
    assert jaxscope.show.__module__ == "jaxscope.notebook"
    shown = Shown("tracing", "", [], '<p a="1">x</p>\n</body>')
    assert shown._repr_html_().startswith('<iframe class="jaxscope-show"')
    assert 'srcdoc="&lt;p a=&quot;1&quot;&gt;x&lt;/p&gt;\n&lt;/body&gt;"' in shown._repr_html_()


def test_the_cell_and_deleted_cells_are_read_from_the_kernel_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import types

    import IPython
    import jaxscope.notebook as notebook

    metadata = {"cellId": "c-2", "deletedCells": ["c-1", 3]}
    shell = types.SimpleNamespace(parent_header={"metadata": metadata})
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    assert notebook._cell_id() == "c-2" and notebook._deleted_cells() == ["c-1"]
    shell.parent_header = {}  # nbclient sends no metadata
    assert notebook._cell_id() is None and notebook._deleted_cells() == []
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)  # not in a kernel
    assert notebook._cell_id() is None
