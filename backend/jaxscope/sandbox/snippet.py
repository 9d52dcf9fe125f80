"""Load a user snippet: compile it under :data:`SNIPPET_FILENAME`, execute it, read its names.

Runs only inside a sandboxed worker (or in tests): executing a snippet executes untrusted code.
Errors are raised as they are (``SyntaxError`` from ``compile``, any exception from the module
body), except a snippet that lacks ``f``/``args`` or gives them the wrong type, which raises
:class:`InvalidSnippet`. The source is registered in :mod:`linecache` so that tracebacks and JAX's
own messages can quote the user's lines.
"""

from __future__ import annotations

import linecache
import sys
import types
from collections.abc import Mapping
from typing import Any

from jaxscope.sandbox.probe_api import (
    SNIPPET_FILENAME,
    Snippet,
    blame_line,
    mark_during,
    setting_line,
    source_lines,
)


class InvalidSnippet(Exception):
    """The snippet ran but does not define what every exhibit needs (``f`` and ``args``)."""


# The module name a snippet runs under (its ``__name__``).
SNIPPET_MODULE = "snippet"


def _int_tuple(value: object, name: str) -> tuple[int, ...]:
    if isinstance(value, int):
        return (value,)
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) for v in value):
        return tuple(value)
    raise InvalidSnippet(f"`{name}` must be an int or a tuple of ints, got {value!r}")


def _str_tuple(value: object, name: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise InvalidSnippet(f"`{name}` must be a str or a tuple of strs, got {value!r}")


def _check_static(
    f: Any, static_argnums: tuple[int, ...], static_argnames: tuple[str, ...], source: str
) -> None:
    """JAX's own check of ``static_argnums``/``static_argnames`` against ``f``'s signature
    (``jax.jit`` runs it when it wraps ``f``, before any tracing): a position ``f`` does not
    have or a name it does not take raises JAX's ``ValueError``, marked with the line that sets
    the setting (the message names it). Any other failure to wrap ``f`` is left to the
    exhibit, which meets it where it calls JAX."""
    if not static_argnums and not static_argnames:
        return
    import jax

    try:
        jax.jit(f, static_argnums=static_argnums, static_argnames=static_argnames)
    except ValueError as exc:
        for name in ("static_argnames", "static_argnums"):
            if name in str(exc):
                raise blame_line(exc, setting_line(source, name)) from None
    except Exception:  # not about the settings: the exhibit's own call meets it
        pass


def _stand_in(*args: Any, **kwargs: Any) -> Any:
    del args, kwargs
    return 0


def _kind(value: Any) -> str:
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if isinstance(shape, tuple) and dtype is not None:
        return f"an array ({dtype}{list(shape)})"
    return f"a {type(value).__name__}"


def _check_not_deleted(
    f: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], source: str
) -> None:
    """Plain ``f(*args, **kwargs)`` fails when an array among ``args`` or ``kwargs`` was
    donated (or deleted) while the snippet loaded: ``y = step(x)`` under ``donate_argnums``,
    then ``args = (x,)`` (jax-ml/jax#9675, flatironinstitute/jaxmg#29). An exhibit that only
    traces or lowers ``f`` (shapes and dtypes are still there) would finish, and one that copies
    ``args`` would run on what it made. So when a leaf is deleted, ``f`` is called here as plain
    JAX calls it, and what it raises fails the run, as in a fresh process (a jitted ``f``
    refuses the buffer before it runs anything): at ``f``'s line when ``f`` raised in the
    snippet, else at the line that sets ``args`` (or ``kwargs``), naming the argument. A call
    that does not raise (the deleted array is never read) is left to the exhibit."""
    if "jax" not in sys.modules:
        return
    import jax

    try:
        flat = [
            (name, jax.tree_util.tree_flatten_with_path(tree)[0])
            for name, tree in (("args", args), ("kwargs", kwargs))
        ]
    except Exception:
        # A tree the user's own flatten cannot flatten (or a cyclic one): the exhibit meets the
        # error where it flattens args, at the user's line, as before this check.
        return
    deleted = [
        (name, path)
        for name, leaves in flat
        for path, leaf in leaves
        # a tracer (a snippet loaded while tracing: tests do) holds no buffer to delete
        if isinstance(leaf, jax.Array)
        and not isinstance(leaf, jax.core.Tracer)
        and leaf.is_deleted()
    ]
    if not deleted:
        return
    name, path = deleted[0]
    try:
        jax.block_until_ready(f(*args, **kwargs))  # type: ignore[no-untyped-call]
    except Exception as exc:
        where = name + jax.tree_util.keystr(path)
        call = "f(*args, **kwargs)" if kwargs else "f(*args)"
        mark_during(exc, f"calling {call} with {where}, donated or deleted while loading")
        if not _raised_in_snippet(exc):
            blame_line(exc, setting_line(source, name))
        raise


def donates_inside(snippet: Snippet) -> bool:
    """Whether plain ``f(*args)`` may fail where a trace of ``f`` does not: ``f`` is not itself
    jitted and the snippet jits something with ``donate_argnums``/``donate_argnames`` (read in
    its source). Called eagerly, a donating call inside ``f`` deletes its input, and passing
    that array again raises; traced (``jax.jit(f)``, ``make_jaxpr``), donation does nothing and
    the exhibit would finish. Cheap: no call of ``f``."""
    f = snippet.f
    jitted = callable(getattr(f, "lower", None)) and callable(getattr(f, "trace", None))
    return not jitted and "donate_arg" in snippet.source


def check_plain_call(snippet: Snippet) -> None:
    """Call ``f(*args, **kwargs)`` as plain JAX does, on copies of ``args``' arrays (an inner
    donation takes the copy, not the exhibit's), its prints discarded (the exhibit's own call
    prints them), and let what it raises fail the run, at ``f``'s line (issue 33, class 10:
    ``step(params)`` twice inside ``f`` with ``donate_argnums``). For an exhibit that traces
    ``f`` rather than calling it, when :func:`donates_inside`; the runner skips it for an
    exhibit whose probe calls ``f`` as it is (``CALLS_F_AS_IS``: recompile_hunt's and caches'
    drivers), which fails as plain JAX does already."""
    import contextlib
    import io

    import jax

    def copy(x: Any) -> Any:
        return x.copy() if isinstance(x, jax.Array) else x

    args = jax.tree.map(copy, snippet.args)
    kwargs = jax.tree.map(copy, snippet.kwargs)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            jax.block_until_ready(snippet.f(*args, **kwargs))  # type: ignore[no-untyped-call]
    except Exception as exc:
        call = "f(*args, **kwargs)" if kwargs else "f(*args)"
        mark_during(exc, f"calling {call} as plain JAX does (f donates inside), before the exhibit")
        raise


def _raised_in_snippet(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SNIPPET_FILENAME:
            return True
        tb = tb.tb_next
    return False


def _check_hashable(
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    static_argnums: tuple[int, ...],
    static_argnames: tuple[str, ...],
    source: str,
) -> None:
    """JAX's check that static arguments are hashable (``jax.jit`` hashes them at the call, to
    key its cache): a static value ``hash`` refuses gets JAX's own ``ValueError`` ("Non-hashable
    static arguments are not supported"), raised by ``jax.jit`` of a stand-in on the same
    arguments (never the user's ``f``) and marked with the line of the setting that made it
    static (left to the exhibit, it would point at ``f``'s ``def``)."""
    n = len(args)
    suspects: list[tuple[str, str, Any]] = []
    for i in static_argnums:
        j = i + n if i < 0 else i
        if 0 <= j < n:
            suspects.append(("static_argnums", f"args[{j}]", args[j]))
    suspects += [
        ("static_argnames", f"kwargs[{k!r}]", kwargs[k]) for k in static_argnames if k in kwargs
    ]
    for setting, where, value in suspects:
        try:
            hash(value)
            continue
        except Exception:
            pass
        import jax

        try:
            jax.jit(_stand_in, static_argnums=static_argnums, static_argnames=static_argnames)(
                *args, **kwargs
            )
        except ValueError as exc:
            if "Non-hashable static arguments" in str(exc):
                raise blame_line(
                    exc,
                    setting_line(source, setting),
                    explanation=(
                        f"`{setting}` makes {where} static, and a static argument must be"
                        f" hashable (JAX keys its compile cache on its value), but {where} is"
                        f" {_kind(value)}. Leave it out of `{setting}` so that it is"
                        " traced, or pass a hashable value (a Python int, str, tuple)."
                    ),
                ) from None
        return


def register_source(source: str, filename: str = SNIPPET_FILENAME) -> None:
    """Make ``linecache`` (and so ``traceback``) able to show lines of ``source``, numbered as
    Python numbers them (:func:`~jaxscope.sandbox.probe_api.source_lines`)."""
    lines = source_lines(source)
    linecache.cache[filename] = (len(source), None, lines, filename)


def _no_function(*args: Any, **kwargs: Any) -> Any:
    raise InvalidSnippet("this run has no snippet function `f`")


def load_snippet(
    source: str, filename: str = SNIPPET_FILENAME, *, require_f: bool = True
) -> Snippet:
    """Compile and execute ``source``; return its ``f``, ``args`` and optional names.

    Raises ``SyntaxError`` (with ``lineno``/``offset``; also for a null byte in ``source``, and
    without a line when the code nests too deeply to compile), whatever the module body raises,
    or :class:`InvalidSnippet` when ``f`` is missing or not callable, or ``args`` is missing or
    not a tuple/list, or an optional name has the wrong type. With ``require_f=False`` (an
    exhibit that needs no snippet), code without ``f`` or ``args`` (empty code included) gives a
    snippet with ``defines_f=False``.
    """
    register_source(source, filename)
    if "\0" in source:
        # compile() raises a ValueError without a location for this; report it as the syntax
        # error it is, at the null byte.
        for number, line in enumerate(source_lines(source), start=1):
            if "\0" in line:
                text = line.rstrip("\r\n")
                raise SyntaxError(
                    "source code cannot contain null bytes",
                    (filename, number, text.index("\0") + 1, text.replace("\0", " ")),
                )
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except (RecursionError, MemoryError) as exc:
        # The parser (MemoryError: its stack overflowed) or the compiler (RecursionError) gave
        # up on deeply nested code: a syntax problem of the snippet, not a lack of memory.
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise SyntaxError(
            f"the code is nested too deeply for Python's compiler ({detail}); split long"
            " expressions into several statements",
            (filename, None, None, None),
        ) from exc
    # The snippet runs as a real module registered under its name: the standard library looks
    # classes' modules up in sys.modules (dataclasses resolving string annotations under
    # ``from __future__ import annotations``, pickle, typing.get_type_hints).
    module = types.ModuleType(SNIPPET_MODULE)
    module.__file__ = filename
    sys.modules[SNIPPET_MODULE] = module
    namespace: dict[str, Any] = module.__dict__
    exec(code, namespace)
    if not require_f and ("f" not in namespace or "args" not in namespace):
        return Snippet(
            source=source,
            filename=filename,
            namespace=dict(namespace),
            f=_no_function,
            args=(),
            defines_f=False,
        )
    return snippet_from_namespace(source, filename, namespace)


def snippet_from_namespace(source: str, filename: str, namespace: Mapping[str, Any]) -> Snippet:
    """Read ``f``, ``args`` and the optional names out of an executed snippet's namespace."""

    def at(name: str, exc: InvalidSnippet) -> BaseException:
        return blame_line(exc, setting_line(source, name))

    missing = [n for n in ("f", "args") if n not in namespace]
    if missing:
        raise InvalidSnippet(
            "the snippet must define "
            + " and ".join(f"`{n}`" for n in missing)
            + ": `f` is the function to trace and `args` a tuple of example arguments, "
            "e.g.\n\n    def f(x):\n        return jnp.sin(x) * 2\n\n    args = (jnp.ones(3),)"
        )
    f = namespace["f"]
    if not callable(f):
        raise at("f", InvalidSnippet(f"`f` must be callable, got {type(f).__name__}"))
    args = namespace["args"]
    if isinstance(args, list):
        args = tuple(args)
    if not isinstance(args, tuple):
        raise at(
            "args",
            InvalidSnippet(
                f"`args` must be a tuple of arguments, got {type(args).__name__}; "
                "for one argument write `args = (x,)`"
            ),
        )
    kwargs = namespace.get("kwargs", {})
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
        raise at("kwargs", InvalidSnippet("`kwargs` must be a dict with str keys"))
    settings: dict[str, Any] = {}
    for name, read in (("static_argnums", _int_tuple), ("static_argnames", _str_tuple)):
        try:
            settings[name] = read(namespace.get(name, ()), name)
        except InvalidSnippet as exc:
            raise at(name, exc) from None
    _check_static(f, settings["static_argnums"], settings["static_argnames"], source)
    _check_hashable(args, kwargs, settings["static_argnums"], settings["static_argnames"], source)
    _check_not_deleted(f, args, kwargs, source)
    return Snippet(
        source=source,
        filename=filename,
        namespace=dict(namespace),
        f=f,
        args=args,
        kwargs=dict(kwargs),
        static_argnums=settings["static_argnums"],
        static_argnames=settings["static_argnames"],
    )
