"""Warm JAX's tracing caches in a worker template with the shipped examples, no backend started.

A forked worker (``sandbox/zygote.py``) starts with what its template holds. Its first trace of a
snippet was cold: each ``jnp`` helper is a nested ``jit`` whose Python body JAX traces on the
first call with given argument types (``pjit._infer_params_cached``, ``pe.trace_to_jaxpr``: the
weakref caches keyed by the helper's function and the avals), and on 2 cores that made the
tracing exhibit's ``jaxpr_staged`` of ``mlp_loss`` 40-70 ms instead of ~15 (design 0076). The
template cannot run a snippet as a worker does (the backend's threads would not survive its
forks), but it can trace one: :func:`warm_example` runs an example's module body and traces its
``f`` with :func:`jax.make_jaxpr` (and makes its view, ``views.jaxpr_view``), while
:func:`no_backend` refuses to create a backend (``xla_bridge.backends``, the one function
through which JAX creates its clients). Every fork
then finds those helpers' traces cached, for the argument types of the shipped examples (what a
user opens first); a pasted program with other shapes gets the helpers' Python warm only.

What it leaves: cache entries of JAX's own functions (the example's ``f`` and its namespace are
dropped, so their weakly keyed entries go with them). No event differs: ``make_jaxpr``'s output
does not depend on a cache hit, and the probes that count traces or read cache misses empty
these caches first (``cache.fresh_caches``); ``exhibits/test_template_warm.py`` compares the
events of warm and cold forks.
"""

from __future__ import annotations

import ast
import contextlib
import io
import os
import sys
from collections.abc import Iterator
from typing import Any

import jax
from jax._src import xla_bridge

from jaxscope.internals import rule_tables
from jaxscope.internals.recording import recording_eqns
from jaxscope.internals.views import jaxpr_view


class BackendRefused(RuntimeError):
    """Raised inside :func:`no_backend` where JAX would have created a backend."""


@contextlib.contextmanager
def no_backend() -> Iterator[None]:
    """Within the block, creating a JAX backend raises :class:`BackendRefused` (a backend made
    before the block stays usable). Not thread-safe: for a single-threaded template."""
    original = xla_bridge.backends

    def refuse() -> dict[str, Any]:
        if xla_bridge._backends:
            return original()
        raise BackendRefused("no backend in a worker template")

    xla_bridge.backends = refuse
    try:
        yield
    finally:
        xla_bridge.backends = original


def _rule_tables() -> dict[str, dict[Any, Any]]:
    """The rule tables the rules exhibit reads (``rule_tables._tables``), by name."""
    return {name: table for name, table in rule_tables._tables().items() if isinstance(table, dict)}


def backend_started() -> bool:
    """Whether this process has created a JAX backend (``xla_bridge._backends``)."""
    return bool(xla_bridge._backends)


def _abstract(value: Any) -> Any:
    """A traced array as a ``ShapeDtypeStruct`` of its aval; anything else as it is."""
    if isinstance(value, jax.core.Tracer):
        aval: Any = value.aval
        return jax.ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type)
    return value


def _run_body(code: str, filename: str) -> dict[str, Any]:
    """The example's module namespace after its body ran: eagerly when it needs no backend
    (numpy values, the common case), else traced (its eager ``jnp`` values become tracers, and
    ``args``/``kwargs`` hold ``ShapeDtypeStruct`` of them)."""
    compiled = compile(code, filename, "exec")
    namespace: dict[str, Any] = {"__name__": "jaxscope_warm"}
    try:
        exec(compiled, namespace)
        return namespace
    except BackendRefused:
        pass
    namespace = {"__name__": "jaxscope_warm"}

    def body() -> int:
        exec(compiled, namespace)
        for name in ("args", "kwargs"):
            if name in namespace:
                namespace[name] = jax.tree.map(_abstract, namespace[name])
        return 0

    jax.make_jaxpr(body)()
    return namespace


@contextlib.contextmanager
def _state_kept(changed: list[str]) -> Iterator[None]:
    """Put back what the block changed of the process-wide state every fork inherits: the
    environment, the working directory, every ``jax.config`` value (an example may set
    ``XLA_FLAGS`` or ``jax_enable_x64`` for a plain run of its own) and, when it imported no
    module, JAX's rule tables (an example that defines a primitive registers its rules there,
    and the rules exhibit would count them in every fork; a module's import registers its
    own, which must stay with it); names it in ``changed``."""
    environ, cwd = dict(os.environ), os.getcwd()
    config = dict(jax.config.values)
    modules = len(sys.modules)
    tables = {name: set(table) for name, table in _rule_tables().items()}
    try:
        yield
    finally:
        if dict(os.environ) != environ:
            changed.append("the environment")
            os.environ.clear()
            os.environ.update(environ)
        if os.getcwd() != cwd:
            changed.append("the working directory")
            os.chdir(cwd)
        for name, value in config.items():
            if jax.config.values.get(name, value) is not value:
                changed.append(name)
                jax.config.update(name, value)
        for name, table in _rule_tables().items():
            added = [key for key in list(table) if key not in tables.get(name, ())]
            if added and len(sys.modules) == modules:
                changed.append(name)
                for key in added:
                    del table[key]


def _not_imported(code: str) -> str | None:
    """The first module ``code``'s import statements name that this process has not imported
    (an example's imports would otherwise run in the template: a module's import can register
    rules, start threads, or take seconds), else None. A relative import counts as not
    imported."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level or node.module is None:
                return "a relative import"
            module = sys.modules.get(node.module)
            if module is None:
                return node.module
            # ``from jax.experimental import pallas``: a submodule, or a name of the module
            names = [
                f"{node.module}.{alias.name}"
                for alias in node.names
                if alias.name != "*" and not hasattr(module, alias.name)
            ]
        else:
            continue
        for name in names:
            if name not in sys.modules:
                return name
    return None


def warm_example(code: str, filename: str) -> str:
    """Run the example ``code`` (a snippet file's text) and trace its ``f`` on its ``args`` (and
    ``kwargs``, ``static_argnums``) with :func:`jax.make_jaxpr`, creating no backend; what it
    prints is dropped, what it changes of the environment, the working directory, ``jax.config``
    and JAX's rule tables is put back (:func:`_state_kept`); an example that imports a module
    the template has not is not run. Returns ``"warm"``, or ``"skipped: <why>"`` when it
    imports such a module, the body or the trace raised (an example of an error, one that needs
    a backend) or it changed that state:
    never raises but for ``BaseException``s that are not ``Exception``s."""
    changed: list[str] = []
    try:
        if (module := _not_imported(code)) is not None:
            return f"skipped: it imports {module}"
        with _state_kept(changed):
            outcome = _warm(code, filename)
    except Exception as exc:
        return f"skipped: {type(exc).__name__}"
    return f"skipped: it changed {', '.join(changed)}" if changed else outcome


def _warm(code: str, filename: str) -> str:
    try:
        with (
            no_backend(),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            namespace = _run_body(code, filename)
            f, args = namespace.get("f"), namespace.get("args")
            if not callable(f) or not isinstance(args, tuple):
                return "skipped: no f and args"
            static = namespace.get("static_argnums", ())
            kwargs = namespace.get("kwargs") or {}
            # Recorded as the tracing exhibit records it: the param texts of the helpers'
            # inner jaxprs are kept while JAX keeps those jaxprs (recording._param_texts).
            with recording_eqns(lambda record: None):
                closed = jax.make_jaxpr(f, static_argnums=static)(*args, **kwargs)
            # The view the exhibits stream of it, and JAX's text: their first call in a
            # process is ~5 ms slower (the pretty-printer's first use).
            jaxpr_view(closed)
        return "warm"
    except Exception as exc:
        return f"skipped: {type(exc).__name__}"
