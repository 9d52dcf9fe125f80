"""Turn an exception that escaped a run into exactly one ``RunFailed`` event (inside the worker).

The classification (``kind``) follows ``protocol.ErrorKind``: a ``SyntaxError`` in the snippet is
``syntax``; :class:`~jaxscope.sandbox.snippet.InvalidSnippet` is ``invalid_snippet``; JAX's tracer
errors (``jax.errors.ConcretizationTypeError`` and its subclasses, ``UnexpectedTracerError``,
``NonConcreteBooleanIndexError``) are ``tracer_error`` with a plain explanation and the fix that
applies; ``MemoryError``, ``OSError(ENOMEM)`` and XLA's RESOURCE_EXHAUSTED are ``memory``;
anything else is ``user_exception`` (located at ``f``'s ``def`` line when JAX raised it with no
snippet frame in the traceback). Only frames of the user's snippet (``SNIPPET_FILENAME``) are
reported; for an exception raised in a host callback (``jax.pure_callback`` and friends), which
JAX re-raises as a ``JaxRuntimeError``, they include the callback's frames. The server's own file
paths (site-packages, the standard library, the jaxscope checkout) are shortened in what the user
reads (``jax/_src/pjit.py``, not ``/srv/.../site-packages/jax/_src/pjit.py``).
"""

from __future__ import annotations

import errno
import functools
import linecache
import re
import site
import sys
import sysconfig
from pathlib import Path
from types import CodeType, TracebackType

import jax.errors

from jaxscope.protocol import RunFailed, SourceLoc, Stage, TracebackFrame
from jaxscope.sandbox.probe_api import BLAME_ATTR, DURING_ATTR, EXPLAIN_ATTR, SNIPPET_FILENAME
from jaxscope.sandbox.snippet import InvalidSnippet

_STATIC_FIX = (
    "If the value only depends on an argument that is a Python constant (a size, a count, a flag),"
    " mark that argument static (`static_argnums = (i,)` in the snippet, as for"
    " `jax.jit(f, static_argnums=...)`): it then stays a concrete Python value while tracing."
)

_BOOL_EXPLANATION = (
    "Python's `if`, `while`, `and`, `or` and `not` need a concrete True or False, but while JAX"
    " traces `f` this value is an abstract tracer: only its shape and dtype are known, not its"
    " value, because it depends on an argument."
)
_BOOL_FIX = (
    "Select values with `jnp.where(cond, x, y)`, or choose between two functions with"
    " `jax.lax.cond(pred, true_fun, false_fun, *operands)` (and loops with"
    " `jax.lax.while_loop`/`fori_loop`). " + _STATIC_FIX
)

_VMAP_BOOL_EXPLANATION = (
    "Under `jax.vmap` this value is a BatchTracer holding one value per example (here one bool"
    " per example), so Python's `if` cannot pick a single branch: different examples may need"
    " different branches."
)

_INT_EXPLANATION = (
    "`int()`, `range()`, `len()`-like uses and Python indexing need a concrete integer, but while"
    " JAX traces `f` this value is an abstract tracer (shape and dtype only)."
)

_ARANGE_EXPLANATION = (
    "Array shapes must be known while tracing: `jnp.arange(n)`, `jnp.zeros(n)` and friends cannot"
    " take a traced `n`, because the size of their result would depend on a runtime value."
)

_ARRAY_EXPLANATION = (
    "A tracer was passed to NumPy (`np.asarray`, `np.array`, a NumPy function): NumPy needs real"
    " values, but while JAX traces `f` only shapes and dtypes are known."
)
_ARRAY_FIX = "Use `jax.numpy` (`jnp`) instead of `numpy` on traced values. " + _STATIC_FIX

_LEAK_EXPLANATION = (
    "A tracer escaped the function being traced (stored in a global, a list or an object"
    " attribute) and was used after that trace ended, where it has no meaning."
)
_LEAK_FIX = (
    "Return values from `f` instead of storing them outside it; keep state explicit"
    " (pass it in as an argument, return the new state)."
)

_BOOL_INDEX_EXPLANATION = (
    "Boolean-mask indexing `x[mask]` gives an array whose size depends on how many entries are"
    " True, which is not known while tracing."
)
_BOOL_INDEX_FIX = (
    "Use `jnp.where(mask, x, 0)` to keep the shape, or give the size explicitly, e.g."
    " `jnp.nonzero(mask, size=k)` / `x.at[...]`."
)


def _tracer_help(exc: BaseException) -> tuple[str, str] | None:
    """(explanation, fix) for a JAX tracer error, or None when ``exc`` is not one."""
    if isinstance(exc, jax.errors.TracerBoolConversionError):
        if "BatchTracer" in str(exc):
            return _VMAP_BOOL_EXPLANATION, _BOOL_FIX
        return _BOOL_EXPLANATION, _BOOL_FIX
    if isinstance(exc, jax.errors.TracerIntegerConversionError):
        return _INT_EXPLANATION, _STATIC_FIX
    if isinstance(exc, jax.errors.TracerArrayConversionError):
        return _ARRAY_EXPLANATION, _ARRAY_FIX
    if isinstance(exc, jax.errors.ConcretizationTypeError):
        msg = str(exc)
        if "arange" in msg:
            return _ARANGE_EXPLANATION, _STATIC_FIX
        if "`int` function" in msg or "`float` function" in msg or "`range`" in msg:
            return _INT_EXPLANATION, _STATIC_FIX
        return (
            "A concrete value was needed while JAX traced `f`, but this value is an abstract"
            " tracer (shape and dtype only) because it depends on an argument.",
            _BOOL_FIX,
        )
    if isinstance(exc, jax.errors.UnexpectedTracerError):
        return _LEAK_EXPLANATION, _LEAK_FIX
    if isinstance(exc, jax.errors.NonConcreteBooleanIndexError):
        return _BOOL_INDEX_EXPLANATION, _BOOL_INDEX_FIX
    return None


# ---- autodiff errors (the transpose exhibit) ----------------------------------------------
# Each entry: a piece of JAX's own message (jax 0.10.2), the plain explanation, the fix.
# A marker may be a tuple of pieces that must all be in the message (the most specific first).
_AD_HELP: tuple[tuple[str | tuple[str, ...], str, str], ...] = (
    (
        "Transpose rule (for reverse-mode differentiation)",
        "Reverse mode runs the linear jaxpr backwards, calling each primitive's transpose rule"
        " (`ad.primitive_transposes` / `ad.fancy_transposes`). This primitive has a JVP rule, so"
        " forward mode (`jax.jvp`) works, but no transpose rule: the backward pass cannot get"
        " past it.",
        "Register a transpose for the primitive (`ad.deflinear2`/`ad.primitive_transposes[p] ="
        " rule`), or wrap the computation in `jax.custom_vjp` and write its backward rule; or use"
        " forward mode (`jax.jvp`, `jax.jacfwd`).",
    ),
    (
        "Reverse-mode differentiation does not work for lax.while_loop",
        "A `while_loop` (and a `fori_loop` whose bounds are traced values) runs an unknown number"
        " of iterations, so JAX cannot save the residuals of every iteration for the backward"
        " pass: the loop has a JVP (forward mode works) but no transpose. `lax.scan` and a"
        " `fori_loop` with Python-int bounds have a fixed trip count: JAX lowers them to `scan`,"
        " stores one residual per iteration, and transposes the scan.",
        "Use `lax.scan` (or `lax.fori_loop` with static Python-int bounds), or bound the loop"
        " with a maximum trip count; forward mode (`jax.jvp`, `jax.jacfwd`) works as is.",
    ),
    (
        "Gradient only defined for scalar-output functions",
        "`jax.grad` seeds the backward pass with a cotangent of 1.0, which only makes sense for"
        " a scalar output; for a vector output the derivative is a Jacobian, and reverse mode"
        " computes one vector-Jacobian product per seed.",
        "Reduce to a scalar loss (`jnp.sum`, `jnp.mean`), or use `jax.vjp(f, *args)` with a"
        " cotangent of the output's shape, or `jax.jacrev` for the full Jacobian.",
    ),
    (
        "requires real- or complex-valued inputs",
        "The gradient is only defined for floating (or complex) inputs: an integer or bool input"
        " cannot be nudged by an infinitesimal, so it has no tangent or cotangent.",
        "Differentiate only the float arguments (`argnums=...`), cast the input to float, or"
        " pass `allow_int=True` to get a `float0` (empty) cotangent for it.",
    ),
    (
        "Differentiation rule for",
        "This primitive has no JVP rule in `ad.primitive_jvps`, so JAX cannot differentiate"
        " through it at all (neither forward nor reverse mode).",
        "Define one with `jax.custom_jvp`/`jax.custom_vjp` around the call, or register a JVP"
        " rule for the primitive (`ad.primitive_jvps[p] = rule`).",
    ),
    (
        "Custom VJP bwd rule must produce an output with the same container",
        "A `custom_vjp` bwd rule must return one cotangent per positional argument of the"
        " primal function (a tuple of the same structure), including arguments such as sizes"
        " that are not differentiated.",
        "Return `None` for an argument that gets no cotangent, or, better for a Python int"
        " such as a size, declare it in `nondiff_argnums` (bwd then receives it first and"
        " returns cotangents for the other arguments only).",
    ),
    (
        "Custom VJP bwd rule must produce an output with the same type",
        "Each cotangent a `custom_vjp` bwd rule returns must have the shape and dtype of the"
        " primal argument it belongs to (a cotangent lives where its argument lives); JAX's"
        " message names the output position and both types.",
        "Give that cotangent the argument's shape: a broadcast the forward pass did (a scalar"
        " times a vector) is summed back in bwd, e.g. `jnp.sum(g * x)` for a scalar argument.",
    ),
    (
        "can't apply forward-mode autodiff (jvp) to a custom_vjp function",
        "`jax.custom_vjp` gives JAX a reverse-mode rule only (`fwd` saves residuals, `bwd` maps"
        " an output cotangent back to the inputs). Forward mode (`jax.jvp`, `jax.jacfwd`) needs"
        " a JVP rule that pushes input tangents forward, and JAX cannot derive one from `bwd`,"
        " so it refuses the `custom_vjp` call instead of differentiating what is inside it.",
        "Use reverse mode on this function (`jax.grad`, `jax.vjp`, `jax.jacrev`), or define the"
        " rule with `jax.custom_jvp` instead: JAX derives reverse mode from a JVP rule (it"
        " linearizes and transposes it), so both modes then work.",
    ),
    (
        ("Shapes must be 1D sequences of concrete values", "for custom_vjp fun"),
        "JAX traced the `custom_vjp` function here (as it does under `jax.jit`,"
        " `jax.make_jaxpr`, or any transformation that stages it out), and a `custom_vjp`"
        " function gets every positional argument as a tracer, Python ints included. So a size"
        " passed as an argument (`jnp.zeros((n,))`) is abstract (shape and dtype only), and an"
        " array shape must be concrete.",
        "Declare the size in `nondiff_argnums` (`@partial(jax.custom_vjp, nondiff_argnums=(i,))`:"
        " it then stays a Python int, and `fwd`/`bwd` receive it first), or take the size from"
        " an array's `.shape`.",
    ),
    (
        "Shapes must be 1D sequences of concrete values",
        "While JAX traces `f` (under `jax.jit`, `jax.make_jaxpr` or another staging"
        " transformation) every argument is an abstract tracer (shape and dtype only), so a"
        " value computed from an argument and used as an array shape (`jnp.zeros((n,))`) has no"
        " concrete value; an array shape must be concrete.",
        "Keep sizes static: `static_argnums` for `f`'s argument, `nondiff_argnums` for a"
        " `custom_vjp` argument, or take the size from an array's `.shape`.",
    ),
)


def ad_help(exc: BaseException) -> tuple[str, str] | None:
    """(explanation, fix) for one of JAX's autodiff errors (no transpose rule, reverse mode
    through ``while_loop``, non-scalar ``grad``, ``grad`` of an int input, no JVP rule, a
    ``custom_vjp`` bwd of the wrong structure, forward mode through a ``custom_vjp``, a traced
    value used as a shape), else None."""
    msg = str(exc)
    for marker, explanation, fix in _AD_HELP:
        pieces = (marker,) if isinstance(marker, str) else marker
        if all(p in msg for p in pieces):
            return explanation, fix
    return None


# ---- batching errors (the vmap exhibit) ---------------------------------------------------
# Each entry: a piece of JAX's own message (jax 0.10.2), the plain explanation, the fix.
_VMAP_HELP: tuple[tuple[str, str, str], ...] = (
    (
        "vmap got inconsistent sizes for array axes to be mapped",
        "`jax.vmap` maps every mapped argument along its `in_axes` axis in lockstep, so those"
        " axes must all have the same size (the batch size); the message lists each mapped"
        " argument, its axis and that axis's size.",
        "Give the arguments the same batch size, or mark an argument that is shared by every"
        " example as not mapped with `None` in `in_axes` (e.g. `in_axes=(None, 0)`).",
    ),
    (
        "vmap in_axes must be an int, None, or a tuple",
        "`in_axes` needs one entry per positional argument of the call (a tuple as long as"
        " `args`), or a single int/None for all of them.",
        "Give `in_axes` exactly one entry per argument (`None` for a static or shared one).",
    ),
    (
        "vmap was requested to map its argument along axis",
        "`in_axes` asks to map an argument along an axis it does not have (a scalar, or an"
        " axis beyond its rank).",
        "Use `None` in `in_axes` for that argument (it is then shared by every example), or an"
        " axis the argument has.",
    ),
    (
        "Batching rule for",
        "Inside `jax.vmap` every primitive applied to a mapped value needs a batching rule"
        " (`batching.fancy_primitive_batchers[p]`), which says how to run it on a whole batch;"
        " this primitive has none. (With no mapped input it would be bound unbatched.)",
        "Register a rule (`batching.primitive_batchers[p] = rule`), or wrap the call in"
        " `jax.custom_batching.custom_vmap`, or loop with `jax.lax.map` instead of `vmap`.",
    ),
)


def vmap_help(exc: BaseException) -> tuple[str, str] | None:
    """(explanation, fix) for one of JAX's ``vmap`` errors (inconsistent mapped sizes,
    ``in_axes`` not matching the arguments or their ranks, no batching rule), else None."""
    msg = str(exc)
    for marker, explanation, fix in _VMAP_HELP:
        if marker in msg:
            return explanation, fix
    return None


_MEMORY_MARKERS = ("RESOURCE_EXHAUSTED", "Out of memory", "out of memory")


def is_memory_error(exc: BaseException) -> bool:
    """``MemoryError``, ``OSError`` with errno ``ENOMEM`` (``mmap.mmap`` beyond ``RLIMIT_AS``), or
    JAX's ``JaxRuntimeError`` saying RESOURCE_EXHAUSTED / out of memory."""
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
        return True
    return isinstance(exc, jax.errors.JaxRuntimeError) and any(
        m in str(exc) for m in _MEMORY_MARKERS
    )


def user_frames(tb: TracebackType | None) -> list[TracebackFrame]:
    """The frames of ``tb`` that are lines of the user's snippet, outermost first, with the
    line's text from :mod:`linecache` (where ``load_snippet`` registered the source).

    Walks ``tb`` itself (``tb_next``, no recursion) and reads only the snippet's lines: not
    ``traceback.extract_tb``, which reads every frame's line through :mod:`linecache` and needs
    Python stack to spare (a RecursionError's traceback has a thousand frames, and JAX's C++
    pytree flatten can leave the recursion counter exhausted after one)."""
    frames = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == SNIPPET_FILENAME and tb.tb_lineno is not None:
            text = linecache.getline(SNIPPET_FILENAME, tb.tb_lineno).strip() or None
            frames.append(TracebackFrame(line=tb.tb_lineno, function=code.co_name, text=text))
        tb = tb.tb_next
    if len(frames) > MAX_FRAMES:  # a deep recursion in the snippet: its outermost and innermost
        frames = frames[: MAX_FRAMES // 2] + frames[-MAX_FRAMES // 2 :]
    return frames


MAX_FRAMES = 64


def transformation_frames(exc: BaseException) -> list[TracebackFrame]:
    """The snippet frames of the stack JAX saved where the op was first traced, when ``exc``
    was raised later while transforming it (JAX chains a ``JaxStackTraceBeforeTransformation``
    as ``__cause__``: e.g. a missing transpose rule, found in the backward pass, points at the
    user's line that bound the primitive)."""
    cause = exc.__cause__
    for _ in range(4):
        if cause is None:
            return []
        if type(cause).__name__ == "JaxStackTraceBeforeTransformation":
            return user_frames(cause.__traceback__)
        cause = cause.__cause__
    return []


# A frame of the snippet in a traceback printed into a message: ``File "<snippet>", line 6, in h``.
_PRINTED_FRAME = re.compile(r'File "' + re.escape(SNIPPET_FILENAME) + r'", line (\d+), in (\S+)')


def is_runtime_error(exc: BaseException) -> bool:
    """``exc`` is the error XLA's runtime raised (``JaxRuntimeError``; ``XlaRuntimeError`` in
    older jaxlibs)."""
    return isinstance(exc, jax.errors.JaxRuntimeError) or type(exc).__name__ in (
        "JaxRuntimeError",
        "XlaRuntimeError",
    )


def callback_frames(exc: BaseException) -> list[TracebackFrame]:
    """The snippet frames of the exception a host callback (``jax.pure_callback``,
    ``jax.debug.callback``, ``io_callback``) raised, when ``exc`` is the runtime error JAX
    re-raised it as (outermost first; [] otherwise). XLA calls the callback from C++ while the
    computation runs, so the snippet's frames are not in ``exc``'s traceback: they are in its
    ``__cause__``/``__context__`` chain when JAX chained the original, else only in the
    callback's traceback that JAX printed into the message."""
    if not is_runtime_error(exc):
        return []
    inner = exc.__cause__ or exc.__context__
    for _ in range(8):
        if inner is None:
            break
        frames = user_frames(inner.__traceback__)
        if frames:
            return frames
        inner = inner.__cause__ or inner.__context__
    frames = []
    for match in _PRINTED_FRAME.finditer(str(exc)):
        line = int(match.group(1))
        text = linecache.getline(SNIPPET_FILENAME, line).strip() or None
        frames.append(TracebackFrame(line=line, function=match.group(2), text=text))
    return frames[-MAX_FRAMES:]


def _callback_explanation(frame: TracebackFrame) -> str:
    return (
        f"`{frame.function}` raised this at line {frame.line}: a Python callback that JAX called"
        " on the host while the computation ran (`jax.pure_callback`, `jax.debug.callback` or"
        " `io_callback`). XLA hands the callback's exception back as a `JaxRuntimeError`, with"
        " the callback's traceback in its message."
    )


@functools.cache
def _server_roots() -> tuple[str, ...]:
    """The directories of the server's own files, longest first: site-packages, the standard
    library, the jaxscope checkout (or wherever the package is installed), Python's prefixes."""
    paths = sysconfig.get_paths()
    roots = {paths.get(k, "") for k in ("purelib", "platlib", "stdlib", "platstdlib")}
    roots.update(site.getsitepackages())
    roots.update((sys.prefix, sys.base_prefix, sys.exec_prefix))
    here = Path(__file__)
    roots.update((str(here.parents[3]), str(here.resolve().parents[3])))  # above backend/
    roots.update(str(Path(r).resolve()) for r in list(roots) if r)
    return tuple(sorted((r.rstrip("/") for r in roots if r.strip("/")), key=len, reverse=True))


# An absolute path in a message (not the path part of a URL: no ``:`` or ``/`` before it).
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~:/-])/[^\s\"'<>:;,()\[\]{}]+")
_PACKAGE_DIRS = ("/site-packages/", "/dist-packages/")


def _short_path(match: re.Match[str]) -> str:
    path = match.group(0)
    for marker in _PACKAGE_DIRS:
        if marker in path:
            return path.rsplit(marker, 1)[1]
    for root in _server_roots():
        if path == root:
            return "…"
        if path.startswith(root + "/"):
            return path[len(root) + 1 :]
    return path


def shorten_paths(text: str) -> str:
    """``text`` with the server's absolute file paths made relative to the directory they are
    in (site-packages, the standard library, the jaxscope checkout): ``jax/_src/pjit.py``,
    ``backend/jaxscope/sandbox/runner.py``. Other paths (and URLs) stay as they are."""
    return _ABSOLUTE_PATH.sub(_short_path, text) if "/" in text else text


def _syntax_failure(exc: SyntaxError, stage: Stage | None) -> RunFailed:
    source = None
    if exc.lineno is not None:
        source = SourceLoc(
            line=exc.lineno,
            # SyntaxError.offset is 1-based; the protocol's columns are 0-based.
            column=exc.offset - 1 if exc.offset else None,
            end_line=exc.end_lineno,
            end_column=exc.end_offset - 1 if exc.end_offset else None,
            function="<module>",
        )
    text = (exc.text or "").rstrip("\n") or None
    return RunFailed(
        kind="syntax",
        error_class=type(exc).__name__,
        message=str(exc),
        source=source,
        traceback=[TracebackFrame(line=exc.lineno, function="<module>", text=text)]
        if exc.lineno is not None
        else [],
        stage=stage,
    )


_NO_FRAME_EXPLANATION = (
    "JAX raised this while handling `f` as a whole (its arguments, `kwargs`, `static_argnums`"
    " or what it returns), not at a line inside it, so the location shown is where `f` is"
    " defined."
)


def snippet_code(f: object) -> CodeType | None:
    """The code object of the snippet's ``f`` (through ``functools.partial`` and
    ``__wrapped__``, e.g. a ``jax.jit``-wrapped function) when it was defined in the snippet."""
    for _ in range(8):
        if isinstance(f, functools.partial):
            f = f.func
            continue
        code = getattr(f, "__code__", None)
        if isinstance(code, CodeType):
            return code if code.co_filename == SNIPPET_FILENAME else None
        wrapped = getattr(f, "__wrapped__", None)
        if wrapped is None:
            return None
        f = wrapped
    return None


def _with_bwd(exc: BaseException, explanation: str | None, f: object) -> str | None:
    """``explanation`` plus, for JAX's error about a ``custom_vjp`` bwd's output, the rule at
    fault (name, where it returns): JAX checks the output after bwd returned, so its traceback
    ends at the call of the custom function and never names bwd."""
    from jaxscope.internals.custom_rules import rejected_bwd, snippet_globals

    try:
        bwd = rejected_bwd(exc, snippet_globals(f) if f is not None else None)
    except Exception:  # the explanation stays JAX's help alone
        bwd = None
    if bwd is None:
        return explanation
    at = f"line {bwd.returns.line}" if bwd.returns is not None else "an unknown line"
    defined = f", defined at line {bwd.def_line}" if bwd.def_line is not None else ""
    note = (
        f"The rule at fault is `{bwd.name}`{defined} (the bwd of `{bwd.custom}`): it returns"
        f" at {at}. JAX checks what bwd returned only after it returned, so its traceback ends"
        f" at the call of `{bwd.custom}` instead."
    )
    return note if explanation is None else f"{explanation} {note}"


def classify(exc: BaseException, stage: Stage | None, f: object = None) -> RunFailed:
    """The one ``RunFailed`` event for ``exc``, which escaped the run during ``stage``.

    ``error_class`` is ``type(exc).__name__`` (JAX's own class for JAX errors), ``message``
    ``str(exc)`` (the server's paths shortened: :func:`shorten_paths`), ``source`` the deepest
    snippet frame, ``traceback`` the snippet frames only, those of a host callback that raised
    included (:func:`callback_frames`). When no frame is the snippet's (JAX rejected ``f``'s
    arguments or result) and ``f`` (the snippet's function, once loaded) was defined in the
    snippet, ``source`` is the line of its ``def`` (``f.__code__.co_firstlineno``) and the
    explanation says so.
    """
    if isinstance(exc, SyntaxError) and exc.filename == SNIPPET_FILENAME:
        return _syntax_failure(exc, stage)
    in_callback = callback_frames(exc)
    frames = user_frames(exc.__traceback__) + in_callback or transformation_frames(exc)
    if len(frames) > MAX_FRAMES:
        frames = frames[: MAX_FRAMES // 2] + frames[-MAX_FRAMES // 2 :]
    source = None
    explanation: str | None = None
    fix: str | None = None
    blamed = getattr(exc, BLAME_ATTR, None)
    if frames:
        deepest = frames[-1]
        source = SourceLoc(line=deepest.line, function=deepest.function)
    elif isinstance(blamed, tuple) and len(blamed) == 3:
        if blamed[0] is not None:  # else: input typed in the UI, no snippet line at fault
            source = SourceLoc(line=int(blamed[0]), function=str(blamed[1]))
        explanation = None if blamed[2] is None else str(blamed[2])
    elif (
        (code := snippet_code(f)) is not None
        and stage != "load"
        and not isinstance(exc, InvalidSnippet)  # a setting or option, not f, is at fault
    ):
        source = SourceLoc(line=code.co_firstlineno, function=code.co_name)
        explanation = _NO_FRAME_EXPLANATION
    if isinstance(exc, InvalidSnippet):
        kind = "invalid_snippet"
    elif is_memory_error(exc):
        kind = "memory"
        explanation = (
            "The run needed more memory than the sandbox allows (its address-space limit, or"
            " the device's memory)."
        )
    else:
        help_ = _tracer_help(exc)
        if help_ is not None:
            kind = "tracer_error"
            explanation, fix = help_
        else:
            kind = "user_exception"
            ad = ad_help(exc) or vmap_help(exc)
            if ad is not None:
                explanation, fix = ad
            explanation = _with_bwd(exc, explanation, f)
    own = getattr(exc, EXPLAIN_ATTR, None)
    if explanation is None and isinstance(own, str):
        explanation = own  # the exhibit's words (probe_api.explain)
    if explanation is None and in_callback:
        explanation = _callback_explanation(in_callback[-1])
    message = str(exc) or type(exc).__name__
    during = getattr(exc, DURING_ATTR, None)
    return RunFailed(
        kind=kind,  # type: ignore[arg-type]
        error_class=type(exc).__name__,
        message=shorten_paths(message),
        source=source,
        traceback=frames,
        explanation=None if explanation is None else shorten_paths(explanation),
        fix=fix,
        stage=stage,
        during=during if isinstance(during, str) else None,
    )
