"""Error classification (``sandbox/errors.py``) on real exceptions raised by JAX and Python, and
the supervisor's classification of worker deaths (``sandbox/worker.classify_death``)."""

from __future__ import annotations

import dataclasses
import signal
import sys
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jaxscope.protocol import RunFailed
from jaxscope.sandbox.errors import classify
from jaxscope.sandbox.snippet import InvalidSnippet, load_snippet
from jaxscope.sandbox.worker import classify_death, worker_env
from jaxscope.settings import Limits


def failure_of(code: str) -> RunFailed:
    """Load ``code`` as a snippet and trace ``f`` with ``jax.jit``; classify what escapes."""
    try:
        snippet = load_snippet(code)
        jax.jit(snippet.f, static_argnums=snippet.static_argnums)(*snippet.args)
    except Exception as exc:
        return classify(exc, "trace")
    raise AssertionError("no exception")


HEAD = "import jax, jax.numpy as jnp\nfrom jax import lax\n"


@pytest.mark.parametrize(
    ("body", "error_class", "line", "fix_needle"),
    [
        (
            "def f(x):\n    if x > 0:\n        return x\n    return -x\nargs = (1.0,)\n",
            "TracerBoolConversionError",
            4,
            "jnp.where",
        ),
        (
            "def f(x, n):\n    return x * int(n)\nargs = (1.0, 3)\n",
            "ConcretizationTypeError",
            4,
            "static_argnums",
        ),
        (
            "def f(x, n):\n    for i in range(n):\n        x = x * 2\n    return x\n"
            "args = (1.0, 3)\n",
            "TracerIntegerConversionError",
            4,
            "static_argnums",
        ),
        (
            "def f(n):\n    return jnp.arange(n)\nargs = (3,)\n",
            "ConcretizationTypeError",
            4,
            "static_argnums",
        ),
        (
            "import numpy as np\ndef f(x):\n    return np.asarray(x)\nargs = (jnp.ones(2),)\n",
            "TracerArrayConversionError",
            5,
            "jax.numpy",
        ),
        (
            "def f(x):\n    return x[x > 0]\nargs = (jnp.ones(3),)\n",
            "NonConcreteBooleanIndexError",
            4,
            "jnp.where",
        ),
    ],
    ids=["if", "int", "range", "arange", "np_asarray", "bool_index"],
)
def test_tracer_errors(body: str, error_class: str, line: int, fix_needle: str) -> None:
    failed = failure_of(HEAD + body)
    assert failed.kind == "tracer_error"
    assert failed.error_class == error_class
    assert failed.source is not None and failed.source.line == line
    assert failed.fix is not None and fix_needle in failed.fix
    assert failed.explanation
    assert failed.stage == "trace"


def test_leaked_tracer() -> None:
    code = HEAD + (
        "saved = []\n"
        "def g(x):\n"
        "    saved.append(x)\n"
        "    return x\n"
        "def f(x):\n"
        "    jax.jit(g)(x)\n"
        "    return saved[0] + 1\n"
        "args = (1.0,)\n"
    )
    snippet = load_snippet(code)
    with pytest.raises(jax.errors.UnexpectedTracerError) as info:
        snippet.f(*snippet.args)
    failed = classify(info.value, "trace")
    assert failed.kind == "tracer_error"
    assert failed.fix is not None and "Return values" in failed.fix


_CUSTOM_INT_SIZE = """
import jax, jax.numpy as jnp

@jax.custom_vjp
def pad(x, n):
    return jnp.zeros((n,)).at[:3].set(x)

pad.defvjp(lambda x, n: (pad(x, n), None), lambda r, g: (g[:3], None))

def f(x):
    return pad(x, 5).sum()

args = (jnp.ones(3),)
"""


def test_a_traced_shape_is_explained_for_its_context() -> None:
    """The real errors JAX raises: a custom_vjp's int argument used as a shape when the function
    is traced, and a plain traced size; neither explanation blames a transformation not used."""
    snippet = load_snippet(_CUSTOM_INT_SIZE)
    with pytest.raises(TypeError) as info:
        jax.make_jaxpr(snippet.f)(*snippet.namespace["args"])
    assert "for custom_vjp fun" in str(info.value)
    failed = classify(info.value, "trace", snippet.f)
    assert failed.kind == "user_exception" and failed.source is not None
    assert failed.source.line == 6  # jnp.zeros((n,)) inside the custom_vjp function
    assert (
        failed.explanation is not None and "`custom_vjp` function gets every" in failed.explanation
    )
    assert failed.fix is not None and "nondiff_argnums" in failed.fix
    with pytest.raises(TypeError) as plain:
        jax.make_jaxpr(lambda n: jnp.zeros((n,)))(3)
    generic = classify(plain.value, "trace")
    assert generic.explanation is not None and "custom_vjp" not in generic.explanation
    assert "array shape must be concrete" in generic.explanation
    for text in (failed.explanation, generic.explanation):
        assert "grad" not in text


def test_jvp_of_a_custom_vjp_is_explained_as_forward_mode() -> None:
    snippet = load_snippet(_CUSTOM_INT_SIZE.replace("jnp.zeros((n,))", "jnp.zeros((5,))"))
    x = snippet.namespace["args"][0]
    with pytest.raises(TypeError) as info:
        jax.jvp(snippet.f, (x,), (jnp.ones(3),))
    failed = classify(info.value, "run", snippet.f)
    assert failed.explanation is not None and "Forward mode (`jax.jvp`" in failed.explanation
    assert failed.fix is not None and "jax.custom_jvp" in failed.fix


def test_invalid_snippet_and_memory_and_plain() -> None:
    assert classify(InvalidSnippet("no f"), "load").kind == "invalid_snippet"
    assert classify(MemoryError(), "trace").kind == "memory"
    oom = jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 4294967296")
    assert classify(oom, "run").kind == "memory"
    other = classify(KeyError("k"), "run")
    assert (other.kind, other.error_class, other.traceback, other.source) == (
        "user_exception",
        "KeyError",
        [],
        None,
    )


def test_syntax_error_outside_snippet_is_user_exception() -> None:
    # A SyntaxError from code the user compiles at run time is not a syntax error of the snippet.
    failed = failure_of(HEAD + "def f(x):\n    eval('1 +')\n    return x\nargs = (1.0,)\n")
    assert failed.kind == "user_exception"
    assert failed.error_class == "SyntaxError"
    assert failed.source is not None and failed.source.line == 4


LIMITS = Limits(cpu_s=7.0, address_space_bytes=3 * 2**30)


@pytest.mark.parametrize(
    ("returncode", "stderr", "kind", "needle"),
    [
        (-signal.SIGXCPU, "", "timeout", "CPU-time limit of 7 s"),
        (
            -signal.SIGABRT,
            "terminate called after throwing an instance of 'std::bad_alloc'\n",
            "memory",
            "3 GiB",
        ),
        (1, "MemoryError\n", "memory", "MemoryError"),
        (3, "", "worker_crashed", "exited with code 3"),
        (-signal.SIGSEGV, "", "worker_crashed", "killed by SIGSEGV"),
        (-signal.SIGALRM, "", "worker_crashed", "a timer the snippet set, `signal.alarm`"),
        (None, "", "worker_crashed", "unknown exit status"),
    ],
)
def test_classify_death(returncode: int | None, stderr: str, kind: str, needle: str) -> None:
    got_kind, message = classify_death(returncode, stderr, limits=LIMITS)
    assert got_kind == kind
    assert needle in message


# What the runner writes when user code calls os._exit: the exiting thread's stack (faulthandler).
_EXIT_STACK = (
    "Stack (most recent call first):\n"
    '  File "/venv/jax/_src/api.py", line 10 in cache_miss\n'
    '  File "<snippet>", line 7 in f\n'
    '  File "<snippet>", line 12 in <module>\n'
)
_JAX_LOG = "Writing jit_f to persistent compilation cache with key 'jit_f-377b5e'\n"


@pytest.mark.parametrize(
    ("returncode", "stderr", "message"),
    [
        # JAX's log lines (bare through logging's last resort, "LEVEL:" formatted, absl's I/W)
        # are not a cause of death; the line that called os._exit is named.
        (
            3,
            _JAX_LOG + _EXIT_STACK,
            "the worker process exited with code 3 (it was running line 7, in f)",
        ),
        (3, _JAX_LOG, "the worker process exited with code 3"),
        (
            3,
            "WARNING:2026-11-29 17:11:24,280:jax._src.compiler:90: Error writing the cache\n"
            "I1129 17:11:24.123456  77 cpu_client.cc:12] TfrtCpuClient destroyed.\n",
            "the worker process exited with code 3",
        ),
        # A line that says why the process died is still quoted: absl's FATAL check, Python's
        # fatal error (with the snippet line from faulthandler's dump of the current thread).
        (
            -signal.SIGABRT,
            "F1129 17:11:24.123456  77 pjrt.cc:12] Check failed: ok\n"
            "W1129 17:11:24.123457  77 pjrt.cc:13] shutting down\n",
            "the worker process was killed by SIGABRT: F1129 17:11:24.123456  77 pjrt.cc:12]"
            " Check failed: ok",
        ),
        (
            -signal.SIGSEGV,
            "Fatal Python error: Segmentation fault\n\nCurrent thread 0x7f (most recent call"
            ' first):\n  File "<snippet>", line 2 in <module>\n',
            "the worker process was killed by SIGSEGV (it was running line 2, in <module>):"
            " Fatal Python error: Segmentation fault",
        ),
        (
            1,
            "MemoryError: the last words\n" + _EXIT_STACK,
            "the worker ran out of memory (address-space limit 3 GiB): MemoryError: the last words",
        ),
    ],
    ids=["exit_after_log", "exit_log_only", "formatted_logs", "absl_fatal", "segv", "memory"],
)
def test_death_message_quotes_a_cause_never_a_log_line(
    returncode: int, stderr: str, message: str
) -> None:
    assert classify_death(returncode, stderr, limits=LIMITS)[1] == message


def test_worker_env_keeps_flags_and_platforms() -> None:
    env = worker_env({"XLA_FLAGS": "--xla_dump_to=/tmp/x", "PATH": "/bin"})
    assert env["XLA_FLAGS"] == "--xla_dump_to=/tmp/x --xla_force_host_platform_device_count=8"
    assert "JAX_PLATFORMS" not in env
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert (
        worker_env({"XLA_PYTHON_CLIENT_PREALLOCATE": "true"})["XLA_PYTHON_CLIENT_PREALLOCATE"]
        == "true"
    )
    assert (
        worker_env({"XLA_FLAGS": "--xla_force_host_platform_device_count=4"})["XLA_FLAGS"]
        == "--xla_force_host_platform_device_count=4"
    )


def test_snippet_runs_as_a_module_dataclasses_and_future_annotations_work() -> None:
    """A snippet with ``from __future__ import annotations`` and a dataclass loads: the standard
    library finds the snippet's module in ``sys.modules`` (it used to fail with AttributeError)."""
    source = (
        "from __future__ import annotations\n"
        "import dataclasses\n"
        "import jax.numpy as jnp\n\n"
        "@dataclasses.dataclass\n"
        "class Params:\n"
        "    w: jnp.ndarray\n"
        "    b: float = 0.0\n\n"
        "def f(p):\n"
        "    return jnp.sum(p.w) + p.b\n\n"
        "args = (Params(jnp.ones(3), 1.0),)\n"
    )
    snippet = load_snippet(source)
    assert float(snippet.f(*snippet.args)) == 4.0
    assert type(snippet.args[0]).__module__ == "snippet"
    assert dataclasses.fields(snippet.args[0])[0].type == "jnp.ndarray"


def test_during_names_where_the_exception_escaped_innermost_first() -> None:
    from jaxscope.sandbox.probe_api import during, mark_during

    with pytest.raises(ValueError) as info, during("while batching"), during("while mapping"):
        raise ValueError("bad axes")
    failed = classify(info.value, "trace")
    assert (failed.stage, failed.during) == ("trace", "while mapping")  # the innermost mark
    assert classify(ValueError("plain"), "run").during is None
    exc = mark_during(KeyError("k"), "while placing args[0]")
    assert classify(exc, "call").during == "while placing args[0]"


def test_an_exhibits_explanation_rides_on_the_error_at_its_own_line() -> None:
    """``probe_api.explain``: JAX's error (class, message, the snippet line it came from) kept,
    the exhibit's words as the explanation; an explanation the runner finds itself wins."""
    from jaxscope.sandbox.probe_api import blame_line, explain

    snippet = load_snippet("def f(x):\n    assert x > 1\n    return x\nargs = (1,)\n")
    with pytest.raises(AssertionError) as info:
        snippet.f(*snippet.args)
    assert classify(info.value, "run", snippet.f).explanation is None
    failed = classify(explain(info.value, "axis 'z' is not a mesh axis"), "run", snippet.f)
    assert (failed.error_class, failed.message) == ("AssertionError", "AssertionError")
    assert failed.source is not None and failed.source.line == 2
    assert failed.explanation == "axis 'z' is not a mesh axis"
    blamed = blame_line(explain(ValueError("v"), "mine"), 4, explanation="the line's")
    assert classify(blamed, "run").explanation == "the line's"


# ---- a snippet setting JAX or the exhibit rejects: the line that sets it ------------------

SETTINGS_HEAD = (
    "import jax.numpy as jnp\n"
    "def f(x, mode=1):\n"
    "    return x * 2\n"
    "args = (jnp.ones(3),)\n"
    "kwargs = {'mode': 2}\n"
)


@pytest.mark.parametrize(
    ("setting", "jit_kwargs"),
    [
        ("static_argnums = (5,)", {"static_argnums": (5,)}),
        ("static_argnames = ('mode', 'nope')", {"static_argnames": ("mode", "nope")}),
        ("static_argnums = (0,)\nstatic_argnames = ('nope',)", {"static_argnames": ("nope",)}),
        ("static_argnums = '0'", None),
        ("static_argnames = (1,)", None),
        ("kwargs = [1]", None),
        ("args = 3", None),
    ],
)
def test_a_rejected_setting_points_at_its_line(
    setting: str, jit_kwargs: dict[str, Any] | None
) -> None:
    source = SETTINGS_HEAD + setting + "\n"
    with pytest.raises(Exception) as info:
        load_snippet(source)
    failed = classify(info.value, "load")
    if jit_kwargs is not None:  # JAX's own check (jax.jit wrapping f), its class and words
        ns: dict[str, Any] = {}
        exec(SETTINGS_HEAD, ns)
        with pytest.raises(ValueError) as truth:
            jax.jit(ns["f"], **jit_kwargs)
        assert (failed.kind, failed.error_class) == ("user_exception", "ValueError")
        assert failed.message == str(truth.value)
    else:
        assert failed.kind == "invalid_snippet"
    name = failed.message.split("`")[1] if jit_kwargs is None else next(iter(jit_kwargs))
    assert failed.source is not None
    assert source.splitlines()[failed.source.line - 1].startswith(f"{name} =")
    assert failed.explanation is None  # not "JAX raised this while handling f as a whole"


def test_valid_static_settings_still_load() -> None:
    # args[0] made static must be hashable (an array is not: see the test below), so a 3 here
    snippet = load_snippet(
        SETTINGS_HEAD + "args = (3,)\nstatic_argnums = (0,)\nstatic_argnames = 'mode'\n"
    )
    assert (snippet.static_argnums, snippet.static_argnames) == ((0,), ("mode",))


@pytest.mark.parametrize("argnums", ["(0, 7)", "'x'", "()", "(0, 1)"])
def test_rejected_argnums_point_at_their_line(argnums: str) -> None:
    from jaxscope.grad_argnums import choose_argnums

    source = (
        "import jax.numpy as jnp\n"
        "def f(x, n):\n"
        "    return jnp.sum(x) * n\n"
        f"argnums = {argnums}\n"
        "args = (jnp.ones(3), 2)\n"
        "static_argnums = 1\n"
    )
    snippet = load_snippet(source)
    with pytest.raises(InvalidSnippet) as info:
        choose_argnums(snippet.args, snippet.static_argnums, snippet.namespace["argnums"])
    failed = classify(info.value, "trace", snippet.f)
    assert failed.kind == "invalid_snippet"
    assert failed.source is not None and failed.source.line == 4
    assert failed.explanation is None


# ---- errors at the line the user got wrong (break-it and user reviews, s11c) ---------------

STATIC_HEAD = "import jax.numpy as jnp\ndef f(x, y):\n    return x * y\n"


@pytest.mark.parametrize(
    ("settings", "jit_kwargs"),
    [
        ("args = (jnp.ones(3), jnp.ones(3))\nstatic_argnums = 1\n", {"static_argnums": 1}),
        ("args = (jnp.ones(3), jnp.ones(3))\nstatic_argnums = -1\n", {"static_argnums": -1}),
        (
            "args = (jnp.ones(3),)\nkwargs = {'y': jnp.ones(3)}\nstatic_argnames = 'y'\n",
            {"static_argnames": "y"},
        ),
    ],
)
def test_an_unhashable_static_argument_points_at_the_setting(
    settings: str, jit_kwargs: dict[str, Any]
) -> None:
    # Before: JAX's "Non-hashable static arguments" at the call, blamed on `def f` with the
    # "f as a whole" note. Now: at load, JAX's own error and words, on the setting's line.
    source = STATIC_HEAD + settings
    with pytest.raises(ValueError) as info:
        load_snippet(source)
    ns: dict[str, Any] = {}
    exec(source, ns)
    with pytest.raises(ValueError) as truth:
        jax.jit(ns["f"], **jit_kwargs)(*ns["args"], **ns.get("kwargs", {}))
    failed = classify(info.value, "load")
    assert (failed.error_class, failed.message) == ("ValueError", str(truth.value))
    assert "Non-hashable static arguments" in failed.message
    assert failed.source is not None
    name = next(iter(jit_kwargs))
    assert source.splitlines()[failed.source.line - 1].startswith(f"{name} =")
    assert failed.explanation is not None and "as a whole" not in failed.explanation
    assert f"`{name}` makes" in failed.explanation and "float32[3]" in failed.explanation


def test_hashable_static_arguments_still_load() -> None:
    snippet = load_snippet(STATIC_HEAD + "args = (jnp.ones(3), 2.0)\nstatic_argnums = 1\n")
    assert snippet.static_argnums == (1,)


ARGNUMS_SOURCE = (
    "import jax.numpy as jnp\n"
    "def f(x, n):\n"
    "    return jnp.sum(x) * n\n"
    "args = (jnp.ones(3), 2)\n"
    "argnums = {argnums}\n"
)


@pytest.mark.parametrize("exhibit", ["transpose", "nan_finder"])
@pytest.mark.parametrize("argnums", ["1", "-1", "(0, 1)"])
def test_argnums_on_an_int_argument_points_at_argnums(exhibit: str, argnums: str) -> None:
    # Before: JAX's int-input TypeError at `def f` ("f as a whole"). Now: the same error, at
    # the argnums line.
    from jaxscope.protocol import RunOptions

    from exhibits.conftest import run_probe

    source = ARGNUMS_SOURCE.format(argnums=argnums)
    snippet = load_snippet(source)
    with pytest.raises(TypeError) as info:
        run_probe(exhibit, source, RunOptions())
    with pytest.raises(TypeError) as truth:
        jax.grad(snippet.f, argnums=snippet.namespace["argnums"])(*snippet.args)
    failed = classify(info.value, "trace", snippet.f)
    assert (failed.error_class, failed.message) == ("TypeError", str(truth.value))
    assert "int32" in failed.message
    assert failed.source is not None and failed.source.line == 5
    assert failed.explanation is not None and "as a whole" not in failed.explanation


@pytest.mark.parametrize("exhibit", ["transpose", "nan_finder"])
@pytest.mark.parametrize(("argnums", "note"), [("(0, 0)", False), ("(1, -1)", True)])
def test_argnums_repeating_a_position_is_refused_at_its_line(
    exhibit: str, argnums: str, note: bool
) -> None:
    # Before: transpose failed in jax.grad's bookkeeping ("unsupported operand type(s) for *:
    # 'NoneType' and 'int'", as plain JAX does) and nan_finder ran and found nothing.
    from jaxscope.protocol import RunOptions

    from exhibits.conftest import run_probe

    source = (
        "import jax.numpy as jnp\n"
        "def f(x, y):\n"
        "    return jnp.sum(x * y)\n"
        "args = (jnp.ones(3), jnp.ones(3))\n"
        f"argnums = {argnums}\n"
    )
    snippet = load_snippet(source)
    with pytest.raises(InvalidSnippet) as info:
        run_probe(exhibit, source, RunOptions())
    failed = classify(info.value, "trace", snippet.f)
    assert failed.kind == "invalid_snippet"
    position = 0 if argnums == "(0, 0)" else 1
    assert f"repeats position {position}" in failed.message
    assert ("counts from the end" in failed.message) is note
    assert failed.source is not None and failed.source.line == 5


def test_a_rejected_bwd_output_names_the_bwd_in_the_transpose_explanation() -> None:
    # C20: JAX's traceback ends at the call in f (line 27); the explanation names the bwd rule
    # and its return line (19), which JAX's message and traceback never do.
    from jaxscope.protocol import RunOptions

    from exhibits.conftest import EXHIBITS, run_probe

    source = (EXHIBITS / "custom_vjp" / "examples" / "c20_bwd_arity_broken.py").read_text()
    snippet = load_snippet(source)
    with pytest.raises(TypeError) as info:
        run_probe("transpose", source, RunOptions())
    failed = classify(info.value, "trace", snippet.f)
    assert failed.message.startswith("Custom VJP bwd rule must produce an output")
    assert failed.source is not None and failed.source.line == 27
    assert failed.explanation is not None
    assert "The rule at fault is `bwd`, defined at line 16 (the bwd of `pad_scale`)" in (
        failed.explanation
    )
    assert "it returns at line 19" in failed.explanation
    assert source.splitlines()[18].strip().startswith("return gd * s, jnp.sum(gd * data)")


def test_a_bwd_output_of_the_wrong_shape_is_explained_and_names_the_bwd() -> None:
    from jaxscope.protocol import RunOptions

    from exhibits.conftest import run_probe

    source = (
        "import jax\n"
        "import jax.numpy as jnp\n"
        "@jax.custom_vjp\n"
        "def scale(x, s):\n"
        "    return x * s\n"
        "def fwd(x, s):\n"
        "    return scale(x, s), (x, s)\n"
        "def my_bwd(res, g):\n"
        "    x, s = res\n"
        "    return jnp.ones(2), jnp.sum(g * x)\n"
        "scale.defvjp(fwd, my_bwd)\n"
        "def f(x, s):\n"
        "    return scale(x, s).sum()\n"
        "args = (jnp.array([1.0, 2.0, 3.0]), 2.0)\n"
    )
    snippet = load_snippet(source)
    with pytest.raises(ValueError) as info:
        run_probe("transpose", source, RunOptions())
    with pytest.raises(ValueError) as truth:
        jax.grad(snippet.f)(*snippet.args)
    failed = classify(info.value, "trace", snippet.f)
    assert failed.message == str(truth.value)
    assert failed.source is not None and failed.source.line == 13
    assert failed.explanation is not None and failed.fix is not None
    assert "shape and dtype of the primal argument" in failed.explanation
    assert "`my_bwd`, defined at line 8 (the bwd of `scale`): it returns at line 10" in (
        failed.explanation
    )


_TWO_ARGS = """
def f(x, w):
    return x * w

args = (1.0,)
"""


def test_f_called_wrongly_names_jax_only_where_jax_is_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A missing argument has no frame in the snippet: the error points at ``def f``. In a JAX
    worker the note names JAX's options; in a torch worker (no ``jax`` module, the PyTorch/XLA
    track) it must not blame JAX, which the run never imported."""
    snippet = load_snippet(_TWO_ARGS)
    with pytest.raises(TypeError) as info:
        snippet.f(*snippet.namespace["args"])
    with_jax = classify(info.value, "trace", snippet.f)
    assert with_jax.source is not None and with_jax.source.line == 2
    assert with_jax.explanation is not None and "JAX raised this" in with_jax.explanation
    monkeypatch.delitem(sys.modules, "jax")
    without = classify(info.value, "trace", snippet.f)
    assert without.source is not None and without.source.line == 2
    assert without.explanation is not None and "as a whole" in without.explanation
    assert "JAX" not in without.explanation and "static_argnums" not in without.explanation


def test_resource_exhausted_of_any_class_is_memory_with_a_fix() -> None:
    """XLA's out-of-memory text reaches the snippet as a ValueError (``jnp.ones`` past the
    device's memory): memory, with the explanation and fix of the other memory failures."""
    oom = ValueError("RESOURCE_EXHAUSTED: Out of memory allocating 200000000 bytes.")
    failed = classify(oom, "load")
    assert failed.kind == "memory"
    assert failed.explanation == classify(MemoryError(), "load").explanation
    assert failed.fix and "smaller" in failed.fix
    assert classify(ValueError("out of memory, says the user"), "load").kind == "user_exception"


def test_is_memory_error_never_raises() -> None:
    """An exception whose __str__ raises is not a memory error (the exhibits ask first, in
    their except clauses: it must not replace the user's exception with the __str__'s)."""
    from jaxscope.sandbox.errors import is_memory_error

    class Undescribable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("str fails")

    assert not is_memory_error(Undescribable())


def test_describe_failure_cuts_the_message_and_class_name() -> None:
    from jaxscope.sandbox.errors import describe_failure
    from jaxscope.user_text import MAX_MESSAGE_CHARS, MESSAGE_CUT_NOTE

    long_class = type("E" * 100_000, (Exception,), {})
    failed = describe_failure(long_class("A" * 100_000), "run")
    assert failed.error_class == "E" * MAX_MESSAGE_CHARS + MESSAGE_CUT_NOTE
    assert failed.message == "A" * MAX_MESSAGE_CHARS + MESSAGE_CUT_NOTE
