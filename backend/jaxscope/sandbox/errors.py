"""Turn an exception that escaped a run into exactly one ``RunFailed`` event (inside the worker).

The classification (``kind``) follows ``protocol.ErrorKind``: a ``SyntaxError`` in the snippet is
``syntax``; :class:`~jaxscope.sandbox.snippet.InvalidSnippet` is ``invalid_snippet``; JAX's tracer
errors (``jaxscope.explainers.TRACER_ERRORS``: ``ConcretizationTypeError`` and its subclasses, the
tracer integer and array conversion errors, ``UnexpectedTracerError``,
``NonConcreteBooleanIndexError``) are ``tracer_error`` with a plain explanation and the fix that
applies; ``MemoryError``, ``OSError(ENOMEM)`` and XLA's RESOURCE_EXHAUSTED are ``memory``; anything
else is ``user_exception`` (located at ``f``'s ``def`` line when JAX raised it with no snippet
frame in the traceback). The explanation and fix of a tracer error or a user exception come from
the chain of error explainers (``jaxscope.explainers``: the generic tracer and shape handlers, and
those the exhibits own in ``exhibits/<id>/explain.py``); this module imports no exhibit and nothing
of ``jaxscope.internals``. Only frames of the user's snippet (``SNIPPET_FILENAME``) are reported;
for an exception raised in a host callback (``jax.pure_callback`` and friends), which JAX re-raises
as a ``JaxRuntimeError``, they include the callback's frames. The server's own file paths
(site-packages, the standard library, the jaxscope checkout) are shortened in what the user reads
(``jax/_src/pjit.py``, not ``/srv/.../site-packages/jax/_src/pjit.py``).
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

try:
    from jax.errors import JaxRuntimeError as _JaxRuntimeError
except ImportError:  # a torch worker has no JAX (design 0025): no JAX error can reach it
    _JaxRuntimeError = None

from jaxscope.explainers import ErrorContext, explain, explainer_chain, is_tracer_error
from jaxscope.protocol import RunFailed, SourceLoc, Stage, TracebackFrame
from jaxscope.sandbox.probe_api import BLAME_ATTR, DURING_ATTR, EXPLAIN_ATTR, SNIPPET_FILENAME
from jaxscope.sandbox.snippet import InvalidSnippet
from jaxscope.user_text import cut_message, exception_class, undescribed

_MEMORY_MARKERS = ("RESOURCE_EXHAUSTED", "Out of memory", "out of memory")
# XLA's out-of-memory text, whatever exception carries it (a failed device allocation reaches
# the snippet as a ValueError from ``jnp.ones``: "RESOURCE_EXHAUSTED: Out of memory allocating
# 200000000 bytes.").
XLA_OUT_OF_MEMORY = "RESOURCE_EXHAUSTED: Out of memory"


def is_memory_error(exc: BaseException) -> bool:
    """``MemoryError``, ``OSError`` with errno ``ENOMEM`` (``mmap.mmap`` beyond ``RLIMIT_AS``),
    JAX's ``JaxRuntimeError`` saying RESOURCE_EXHAUSTED / out of memory, or any exception whose
    message holds XLA's :data:`XLA_OUT_OF_MEMORY`. Never raises (an exception whose ``__str__``
    raises is not one)."""
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
        return True
    try:
        message = str(exc)
    except Exception:  # the user's __str__ raised: described elsewhere, not a memory error
        return False
    if is_runtime_error(exc):
        return any(m in message for m in _MEMORY_MARKERS)
    return XLA_OUT_OF_MEMORY in message


# The TPU runtime's words when a program halted the chip's core (design 0073: a Pallas block
# read past its array fails the DMA's bounds check, "RuntimeUnexpectedCoreHalt: Core halted
# unexpectedly ... BoundsCheck"), and for every later program in the same process ("The program
# continuator has halted unexpectedly."): recordings/tpu-v5e/pallas_chip/.
CORE_HALT_MARKERS = ("RuntimeUnexpectedCoreHalt", "halted unexpectedly")
CORE_HALT_EXPLANATION = (
    "The TPU core halted while the program ran: a kernel read or wrote out of bounds (a Pallas"
    " block whose index map points past the array's end fails the DMA's bounds check, and the"
    " core stops). After a halt the chip runs nothing more in this process: every later program"
    ' fails with "The program continuator has halted unexpectedly". This worker is retired'
    " after the run; the next run gets a fresh one."
)
CORE_HALT_FIX = (
    "Make every index map return a block inside its array (grid × block shape within the"
    " array's shape), or run the kernel with interpret=True on the CPU to find the block."
)
# Whether a core halt was described (classify) since the runner last asked (the run's start):
# an exhibit that catches the error and shows it in its own event still retires the worker.
_core_halt_seen = False


def core_halted(message: str) -> bool:
    """``message`` (a runtime error's text) says the TPU core halted (:data:`CORE_HALT_MARKERS`)."""
    return any(marker in message for marker in CORE_HALT_MARKERS)


def take_core_halt_seen() -> bool:
    """Whether :func:`classify` described a core halt since the last call; resets it."""
    global _core_halt_seen
    seen, _core_halt_seen = _core_halt_seen, False
    return seen


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
    if _JaxRuntimeError is not None and isinstance(exc, _JaxRuntimeError):
        return True
    return type(exc).__name__ in ("JaxRuntimeError", "XlaRuntimeError")


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
# The same for a worker that has not imported JAX (the PyTorch/XLA track's torch workers): there
# the error comes from calling ``f`` (a missing argument) or from the probe's reading of its
# result, and the JAX options above do not exist.
_NO_FRAME_EXPLANATION_NO_JAX = (
    "This was raised while calling `f` as a whole (its arguments or what it returns), not at a"
    " line inside it, so the location shown is where `f` is defined."
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


MEMORY_EXPLANATION = (
    "The run needed more memory than the sandbox allows (its address-space limit, or"
    " the device's memory)."
)
MEMORY_FIX = (
    "Use smaller arrays or fewer of them (a smaller batch, model or input), or explore one part"
    " of the program at a time: arrays kept alive (in a list, a global) add up."
)


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
        explanation = (
            _NO_FRAME_EXPLANATION if "jax" in sys.modules else _NO_FRAME_EXPLANATION_NO_JAX
        )
    if isinstance(exc, InvalidSnippet):
        kind = "invalid_snippet"
    elif is_memory_error(exc):
        kind = "memory"
        explanation = MEMORY_EXPLANATION
        fix = MEMORY_FIX
    else:
        kind = "tracer_error" if is_tracer_error(exc) else "user_exception"
        ctx = ErrorContext(stage=stage, f=f, location_note=explanation)
        answer = explain(exc, ctx)
        if answer is not None:
            explanation, fix = answer[1].explanation, answer[1].fix
    message = str(exc) or type(exc).__name__
    if is_runtime_error(exc) and core_halted(message):
        global _core_halt_seen
        _core_halt_seen = True
        explanation, fix = CORE_HALT_EXPLANATION, CORE_HALT_FIX
    own = getattr(exc, EXPLAIN_ATTR, None)
    if explanation is None and isinstance(own, str):
        explanation = own  # the exhibit's words (probe_api.explain)
    if explanation is None and in_callback:
        explanation = _callback_explanation(in_callback[-1])
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


def describe_failure(
    exc: BaseException,
    stage: Stage | None,
    f: object = None,
    *,
    catch: type[BaseException] = Exception,
) -> RunFailed:
    """How the runner and the exhibits describe an exception: :func:`classify`, or, when that
    raises (``catch``: e.g. a user exception whose ``__str__`` raises), :func:`bare_failure`;
    the message and class name cut (``jaxscope.user_text.cut_message``). An exhibit that
    catches the user's exception and shows it in its own event takes ``error_class``,
    ``message`` and ``source`` from here, as ``run_failed`` does."""
    try:
        failed = classify(exc, stage, f=f)
    except catch as broken:
        failed = bare_failure(exc, stage, broken)
    failed.message = cut_message(failed.message)
    if failed.error_class is not None:
        failed.error_class = cut_message(failed.error_class)
    return failed


def bare_failure(exc: BaseException, stage: Stage | None, broken: BaseException) -> RunFailed:
    """The exception's class, and its snippet frames when they can be read (they read only the
    traceback's code objects and the snippet's lines, no ``str`` of the exception): an
    exception whose ``__str__`` raises still points at the line that raised it."""
    try:
        frames = user_frames(exc.__traceback__)
    except BaseException:  # nothing about the failure may fail
        frames = []
    deepest = frames[-1] if frames else None
    return RunFailed.model_construct(
        kind="user_exception",
        error_class=exception_class(exc),
        message=undescribed(broken),
        source=None if deepest is None else SourceLoc(line=deepest.line, function=deepest.function),
        traceback=frames,
        explanation=None,
        fix=None,
        stage=stage,
    )


# Assembled when this module loads, in the worker's warm-up (the probes import it), not at the
# first failure: by then the user's code has run, and it may have replaced ``importlib`` or
# entries of ``sys.modules`` that importing the exhibits' handlers would go through.
explainer_chain()
