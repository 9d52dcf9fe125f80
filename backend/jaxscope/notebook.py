"""``jaxscope.show(f, *args, exhibit="tracing", **options)``: an exhibit of ``f`` inline in a
Jupyter notebook (design 0034; issue 18 item 2).

The notebook process never runs the exhibit: ``show`` writes ``f`` and its arguments as a
snippet (source text, as the page and ``jaxscope run`` take it), runs that snippet in the same
sandbox as ``jaxscope run`` (a bubblewrap worker; no server), and displays the run's standalone
HTML file (:mod:`jaxscope.standalone`) in an ``<iframe srcdoc>``. The output is HTML with a small
loader script that builds that file in the page from the output's recording and the app, which
the notebook's first output carries once (:meth:`Shown._repr_html_`); it needs no server or
kernel extension and stays in the saved notebook.

The snippet is built from what Python keeps of ``f``:

- ``f``'s source (``inspect.getsource``: a ``def`` in a cell or a file; IPython keeps each
  cell's source for it; for a lambda, its expression out of that source, ``f = lambda ...``,
  with the call around it when ``f`` wraps it, ``jax.jit(lambda ...)``), and the source of each
  function of the same module it calls by a global name, recursively;
- each module it names (``import jax.numpy as jnp``), each function or class of another module
  (``from optax import adam``), and each global constant (a number, string, bool, None, or an
  array) as code;
- ``args`` as code: Python scalars as literals, numpy and JAX arrays as their bytes (base64)
  with dtype and shape, ``jax.ShapeDtypeStruct`` by shape and dtype, tuples, lists and dicts of
  these. Anything else (an object, a closure's free variable, a lambda whose source Python
  cannot find) is refused with the name that cannot be written, before anything runs.

The page's editor shows the user's part of the snippet (:class:`Snippet`): the generated code
that rebuilds the arguments comes after it and is left out, one comment saying what they are.
"""

from __future__ import annotations

import ast
import asyncio
import base64
import builtins
import concurrent.futures
import dataclasses
import dis
import hashlib
import html
import inspect
import math
import textwrap
import types
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from jaxscope.protocol import MAX_CODE_CHARS, EventModel, RunFailed, RunOptions

# The helper a snippet with an array argument defines before ``args``: the array from its bytes.
ARRAY_HELPER = '''import base64 as _b64
import numpy as _np


def _jaxscope_array(data, dtype, shape, on_device):
    """An argument of the notebook's call, from its bytes (written by jaxscope.show)."""
    import jax.numpy as _jnp

    value = _np.frombuffer(_b64.b64decode(data), dtype=_jnp.dtype(dtype)).reshape(shape)
    return _jnp.asarray(value) if on_device else value.copy()
'''


class NotRepresentable(TypeError):
    """``f``, a global it uses or an argument cannot be written as snippet source."""


# The loader each output carries (design 0034, "One app per notebook"): it takes the app from
# this output (when it carries it) into ``window.__jaxscopeApps[KEY]``, then builds the
# standalone file in the page, template + this output's recording, as the srcdoc of a sandboxed
# iframe. An output rendered before the one that carries its app waits for the
# ``jaxscope-app`` event that output sends. Its element by ``document.currentScript`` (a
# front-end that re-inserts the script, as JupyterLab does, runs it once attached), else by id
# (classic Notebook's jQuery evaluates it apart). No "</" in it: it sits in a <script>.
_LOADER = """(function () {
  var me = document.currentScript, key = %(key)s, w = window;
  var root = (me && me.closest('.jaxscope-output')) || document.getElementById(%(id)s);
  var apps = (w.__jaxscopeApps = w.__jaxscopeApps || {});
  var own = root.querySelector('script.jaxscope-app');
  if (own && !apps[key]) apps[key] = JSON.parse(own.textContent);
  var data = root.querySelector('script.jaxscope-data').textContent;
  function mount() {
    var t = apps[key];
    if (!t || root.querySelector('iframe')) return !!t;
    var at = t.lastIndexOf('<' + '/body>');
    var f = document.createElement('iframe');
    f.className = 'jaxscope-show';
    f.title = root.getAttribute('data-title');
    f.setAttribute('sandbox', 'allow-scripts allow-downloads');
    f.style.cssText = 'width: 100%%; height: %(height)dpx; border: 1px solid #ccc';
    f.srcdoc = t.slice(0, at) + '<script type="application/json" id="jaxscope-recording">' +
      data + '<' + '/script>' + t.slice(at);
    var note = root.querySelector('.jaxscope-note');
    if (note) note.remove();
    root.appendChild(f);
    return true;
  }
  if (mount()) {
    if (own) w.dispatchEvent(new CustomEvent('jaxscope-app', {detail: key}));
  } else {
    root.querySelector('.jaxscope-note').textContent = %(waiting)s;
    w.addEventListener('jaxscope-app', function (e) { if (e.detail === key) mount(); });
  }
})();"""

_WAITING = (
    "jaxscope: this output needs the app that the notebook's first jaxscope output of the same "
    "jaxscope version carries, and it is not on the page (that output was cleared or deleted, or "
    "is not rendered yet). Rerun the notebook, or display jaxscope.notebook.app() in a cell above."
)
_UNTRUSTED = (
    "jaxscope: this output is an exhibit that its script shows; trust the notebook (or rerun the "
    "cell) to see it."
)

# Per kernel: the template keys whose app an output has carried, and the cell that carried it
# (the notebook front-end's cell id, None when it sends none). A rerun of that cell carries the
# app again (its old output, the carrier, is replaced).
_CARRIERS: dict[str, str | None] = {}


def _request_metadata() -> dict[str, Any]:
    """The metadata of the kernel request being run (JupyterLab and Notebook 7 send ``cellId``
    and ``deletedCells``, the ids of the cells deleted since the last request); empty outside a
    kernel, or from a client that sends none (nbclient)."""
    try:
        from IPython import get_ipython

        header = getattr(get_ipython(), "parent_header", None) or {}
        metadata = header.get("metadata", {})
    except Exception:  # no IPython, or a shell without a parent request
        return {}
    return metadata if isinstance(metadata, dict) else {}


def _cell_id() -> str | None:
    """The id of the notebook cell being run, as the front-end sends it; None when it sends
    none."""
    cell = _request_metadata().get("cellId")
    return cell if isinstance(cell, str) else None


def _deleted_cells() -> list[str]:
    """The cells the front-end says were deleted since its last request."""
    deleted = _request_metadata().get("deletedCells")
    return [c for c in deleted if isinstance(c, str)] if isinstance(deleted, list) else []


def _claim_carrier(key: str) -> bool:
    """Whether the output being made must carry the app of ``key`` (the first of this kernel,
    a rerun of the cell that carried it, or any cell once the front-end says that cell was
    deleted), and records it."""
    cell = _cell_id()
    if key in _CARRIERS:
        carrier = _CARRIERS[key]
        rerun = cell is not None and carrier == cell
        if not rerun and (carrier is None or carrier not in _deleted_cells()):
            return False
    _CARRIERS[key] = cell
    return True


def _json_script(text: str) -> str:
    """``text`` (JSON) for a script element's body: ``<`` written ``\\u003c``."""
    return text.replace("<", "\\u003c")


@dataclasses.dataclass(frozen=True)
class Shown:
    """One exhibit run shown in a notebook: ``html`` is the standalone file (what
    :meth:`save` writes), ``code`` the snippet that ran, ``events`` the run's events (the last is
    ``run_finished`` or ``run_failed``), ``shown_code`` what the page's editor shows (the user's
    code, without the generated code that rebuilds the arguments; :class:`Snippet`).
    ``template`` and ``recording``, when set, are the two parts of ``html``: the output then
    sends the recording and, once per notebook, the app (:meth:`_repr_html_`)."""

    exhibit: str
    code: str
    events: list[EventModel]
    html: str
    height_px: int = 760
    shown_code: str = ""
    template: str = ""
    recording: dict[str, Any] | None = None
    # whether this object's output carries the app: decided when it is first displayed
    _carries: list[bool] = dataclasses.field(default_factory=list, compare=False, repr=False)

    @property
    def failed(self) -> RunFailed | None:
        """The run's failure, or None when it finished."""
        last = self.events[-1]
        return last if isinstance(last, RunFailed) else None

    def __repr__(self) -> str:
        # The notebook keeps this as the output's text/plain beside its HTML: the dataclass's
        # repr held the whole file and the app again (3 MB of a 3.5 MB output).
        last = self.events[-1].type if self.events else "no events"
        return f"<jaxscope.show {self.exhibit}: {len(self.events)} events, {last}>"

    def save(self, path: str | Path) -> Path:
        """Write the standalone HTML file to ``path`` (it opens from disk in any browser)."""
        out = Path(path)
        out.write_text(self.html, encoding="utf-8")
        return out

    def _repr_html_(self) -> str:
        if self.recording is None or not self.template:
            return self._iframe()
        from jaxscope.standalone import script_text

        key = hashlib.sha256(self.template.encode()).hexdigest()[:16]
        if not self._carries:
            self._carries.append(_claim_carrier(key))
        return _output_html(
            key,
            script_text(self.recording),
            self.template if self._carries[0] else None,
            f"jaxscope {self.exhibit}",
            self.height_px,
        )

    def _iframe(self) -> str:
        # srcdoc: the file inline, escaped as an attribute value; no URL, so the output is the
        # same in JupyterLab, classic Notebook, VS Code and a saved notebook. sandbox without
        # allow-same-origin: the replay reads nothing of the notebook's page.
        return (
            f'<iframe class="jaxscope-show" title="jaxscope {self.exhibit}" '
            f'sandbox="allow-scripts allow-downloads" '
            f'style="width: 100%; height: {self.height_px}px; border: 1px solid #ccc" '
            f'srcdoc="{html.escape(self.html, quote=True)}"></iframe>'
        )


def _output_html(key: str, data: str, template: str | None, title: str, height: int) -> str:
    """One output: the recording (``data``, script-safe JSON), the app when ``template`` is
    given, and the loader that shows them in an iframe."""
    import json

    element = f"jaxscope-{uuid.uuid4().hex}"
    parts = [
        f'<div class="jaxscope-output" id="{element}" data-key="{key}" '
        f'data-title="{html.escape(title, quote=True)}">',
        f'<p class="jaxscope-note">{html.escape(_UNTRUSTED)}</p>',
        f'<script type="application/json" class="jaxscope-data">{data}</script>',
    ]
    if template is not None:
        app = _json_script(json.dumps(template, ensure_ascii=False))
        parts.append(f'<script type="application/json" class="jaxscope-app">{app}</script>')
    loader = _LOADER % {
        "id": json.dumps(element),
        "key": json.dumps(key),
        "height": height,
        "waiting": _json_script(json.dumps(_WAITING)),
    }
    parts += [f"<script>{loader}</script>", "</div>"]
    return "\n".join(parts)


class _App:
    """What :func:`app` returns: an output that carries only the app (no exhibit)."""

    def __init__(self, template: str) -> None:
        self.template = template

    def _repr_html_(self) -> str:
        import json

        key = hashlib.sha256(self.template.encode()).hexdigest()[:16]
        _CARRIERS[key] = _cell_id()
        app = _json_script(json.dumps(self.template, ensure_ascii=False))
        element = f"jaxscope-{uuid.uuid4().hex}"
        return (
            f'<div class="jaxscope-app-only" id="{element}">'
            f'<script type="application/json" class="jaxscope-app">{app}</script>'
            "<script>(function () { var w = window, key = "
            f"{json.dumps(key)}, el = document.getElementById({json.dumps(element)});"
            " var apps = (w.__jaxscopeApps = w.__jaxscopeApps || {});"
            " if (!apps[key]) apps[key] = JSON.parse("
            "el.querySelector('script.jaxscope-app').textContent);"
            " w.dispatchEvent(new CustomEvent('jaxscope-app', {detail: key})); })();</script>"
            "jaxscope: the app for the exhibits below.</div>"
        )


def app() -> _App:
    """An output that carries jaxscope's app for the exhibit outputs of this notebook (each
    carries only its run; the notebook's first carries the app): display it in a cell above
    them when that first output was cleared or deleted."""
    from jaxscope.standalone import read_template

    return _App(read_template())


def show(f: Callable[..., Any], *args: Any, exhibit: str = "tracing", **options: Any) -> Shown:
    """Run ``exhibit`` on ``f(*args)`` in the sandbox and return it for display (the notebook
    renders the returned object inline). ``options`` are the exhibit's run options
    (``RunOptions`` fields: ``in_axes="0"``, ``stack=["vmap", "grad"]``...). Raises
    :class:`NotRepresentable` when ``f`` or ``args`` cannot be written as a snippet,
    ``ValueError`` for an unknown exhibit or a bad option, ``RuntimeError`` when the sandbox
    cannot start here; a run that fails (``f`` raised) is shown, with its error."""
    from exhibits.registry import EXHIBITS

    if exhibit not in EXHIBITS:
        raise ValueError(f"unknown exhibit {exhibit!r}; known: {', '.join(EXHIBITS)}")
    run_options = RunOptions(**options)
    snippet = snippet_parts(f, args)
    events = _run(exhibit, snippet.code, run_options)
    from jaxscope import standalone

    # The recording's code is what the editor shows (it runs nothing): the user's code.
    template = standalone.read_template()
    payload = standalone.recording(exhibit, snippet.shown, run_options, events)
    page = standalone.embed(template, payload)
    return Shown(
        exhibit,
        snippet.code,
        events,
        page,
        shown_code=snippet.shown,
        template=template,
        recording=payload,
    )


def _run(exhibit: str, code: str, options: RunOptions) -> list[EventModel]:
    """The run, as ``jaxscope run`` makes it. In a thread with its own event loop: a notebook's
    kernel already runs one in this thread."""
    from jaxscope.cli import run_headless, sandbox_refusal
    from jaxscope.settings import settings_from_env

    settings = settings_from_env(workers=0)
    if refusal := sandbox_refusal(settings.limits):
        raise RuntimeError(refusal)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(
            asyncio.run, run_headless(exhibit, code, settings, options=options)
        ).result()


def snippet_for(f: Callable[..., Any], args: tuple[Any, ...]) -> str:
    """The snippet that defines ``f`` and ``args`` as this process has them (see the module's
    docstring for what can be written); raises :class:`NotRepresentable`."""
    return snippet_parts(f, args).code


@dataclasses.dataclass(frozen=True)
class Snippet:
    """``code``: what the sandbox runs; ``shown``: what the page's editor shows, the user's code
    (imports, constants, functions, ``f = ...``) and one comment saying what ``args`` are, without
    the generated code that rebuilds the arguments. ``shown`` minus its last line is a prefix of
    ``code``, so a line number of the run is the same line in both."""

    code: str
    shown: str


def snippet_parts(f: Callable[..., Any], args: tuple[Any, ...]) -> Snippet:
    """:func:`snippet_for`'s snippet, and what of it the editor shows."""
    writer = _Writer()
    name = writer.function(f, "f")
    args_code = writer.value(args, "args")
    # Array constants (base64) go with the generated tail, after the helper that rebuilds them;
    # the functions read them when called, not when defined. A decorator or default value that
    # reads one needs it before the def: then the helper and every constant come first.
    early = any(n in writer.def_time for n in writer.array_constants)
    constants = [*writer.constants, *(writer.array_constants.values() if early else ())]
    late = [] if early else list(writer.array_constants.values())
    helper = [ARRAY_HELPER] if writer.needs_array else []
    user = [*constants, "", *writer.definitions] if constants else list(writer.definitions)
    if early:
        user, helper = [*helper, *user], []
    head = [*dict.fromkeys(writer.imports), "", *user]
    if name != "f":
        head.append(f"f = {name}\n")
    prefix = "\n".join(head).strip() + "\n"
    tail = "\n".join([*helper, *late, f"args = {args_code}"]).strip() + "\n"
    code = prefix + "\n" + tail
    if len(code) > MAX_CODE_CHARS:
        raise NotRepresentable(
            f"the snippet of f and its arguments is {len(code):,} characters, more than the "
            f"{MAX_CODE_CHARS:,} jaxscope runs: pass smaller example arrays, or "
            "jax.ShapeDtypeStruct for an exhibit that needs only shapes"
        )
    described = _describe(args)
    if len(described) > 300:
        described = described[:297] + "..."
    shown = prefix + f"\n# args = {described}: the notebook's arguments (jaxscope.show)\n"
    return Snippet(code, shown)


def _describe(value: Any) -> str:
    """``value`` in a few characters for the shown code: arrays by dtype and shape."""
    import jax
    import numpy as np

    if isinstance(value, tuple):
        items = [_describe(v) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_describe(v)}" for k, v in value.items()) + "}"
    if isinstance(value, jax.ShapeDtypeStruct):
        return f"ShapeDtypeStruct({value.dtype}[{','.join(map(str, value.shape))}])"
    if isinstance(value, np.ndarray | jax.Array | np.generic):
        shape = ",".join(map(str, np.shape(value)))
        return f"{value.dtype}[{shape}]"
    return repr(value)


class _Writer:
    """Collects the imports, definitions and constants a function needs, in order."""

    def __init__(self) -> None:
        self.imports: list[str] = []
        self.definitions: list[str] = []
        self.constants: list[str] = []
        self.done: set[str] = set()
        self.needs_array = False
        # global array constants (their code rebuilds them from base64), by name
        self.array_constants: dict[str, str] = {}
        # the names decorators and default values read: needed when the def runs
        self.def_time: set[str] = set()

    def function(self, fn: Callable[..., Any], target: str | None = None) -> str:
        """Write ``fn``'s source (after what it uses); its name. A lambda is written as
        ``target = lambda ...`` (its expression, out of the line that holds it)."""
        plain = inspect.unwrap(fn)
        if not isinstance(plain, types.FunctionType):
            raise NotRepresentable(f"{fn!r} is not a Python function defined with def or lambda")
        if plain.__code__.co_freevars:
            raise NotRepresentable(
                f"{plain.__name__} uses variables of an enclosing function "
                f"({', '.join(plain.__code__.co_freevars)}): define it at the top level of a cell"
            )
        if plain.__name__ == "<lambda>":
            name = target or "f"
            lam = _lambda_source(plain, wrapped=fn is not plain)
            source = f"{name} = {lam}\n"
            def_time = _names_read_at_definition(lam)
        else:
            name = plain.__name__
            try:
                source = textwrap.dedent(inspect.getsource(fn))
            except (OSError, TypeError) as exc:
                raise NotRepresentable(f"the source of {name} is not available: {exc}") from None
            def_time = _decorator_names(source)
        self.done.add(name)
        self.def_time |= def_time
        for global_name in sorted({*_global_names(plain.__code__), *def_time}):
            self.global_name(global_name, plain)
        self.definitions.append(source.rstrip() + "\n\n")
        self.rules(fn, name)
        return name

    def rules(self, fn: Callable[..., Any], name: str) -> None:
        """For a ``jax.custom_vjp``/``jax.custom_jvp`` ``fn``: its rule functions and the
        ``defvjp``/``defjvp`` call, a statement apart from its ``def`` (without them the
        snippet's ``fn`` has no rule: 'No VJP defined for custom_vjp function')."""
        import jax

        if isinstance(fn, jax.custom_vjp) and fn.fwd is not None:
            fwd, bwd = self.rule(fn.fwd), self.rule(fn.bwd)
            extra = "".join(
                f", {k}=True" for k in ("symbolic_zeros", "optimize_remat") if getattr(fn, k, 0)
            )
            self.definitions.append(f"{name}.defvjp({fwd}, {bwd}{extra})\n\n")
        elif isinstance(fn, jax.custom_jvp) and getattr(fn, "jvp", None) is not None:
            extra = ", symbolic_zeros=True" if getattr(fn, "symbolic_zeros", False) else ""
            self.definitions.append(f"{name}.defjvp({self.rule(fn.jvp)}{extra})\n\n")

    def rule(self, fn: Any) -> str:
        """A custom rule function, written once (the function it is, by name)."""
        name = getattr(inspect.unwrap(fn), "__name__", "")
        if name == "<lambda>":
            return self.function(fn, f"_rule_{len(self.definitions)}")
        return name if name in self.done else self.function(fn)

    def global_name(self, name: str, fn: types.FunctionType) -> None:
        if name in self.done:
            return
        scope = fn.__globals__
        if name not in scope:
            if hasattr(builtins, name):
                return
            # An attribute name (x.shape) or a name the function never reaches: nothing to write.
            return
        self.done.add(name)
        value = scope[name]
        if isinstance(value, types.ModuleType):
            path = value.__name__
            self.imports.append(f"import {path}" if path == name else f"import {path} as {name}")
            return
        module = getattr(value, "__module__", None)
        if callable(value) and module == fn.__module__ and not isinstance(value, type):
            written = self.function(value, name)
            if written != name:
                self.definitions.append(f"{name} = {written}\n")
            return
        qualname = getattr(value, "__qualname__", None)
        if callable(value) and module and qualname and "<" not in qualname and module != "__main__":
            if "." not in qualname:
                self.imports.append(f"from {module} import {qualname} as {name}")
                return
        code = self.value(value, name)
        if "_jaxscope_array(" in code:
            self.array_constants[name] = f"{name} = {code}"
        else:
            self.constants.append(f"{name} = {code}")

    def value(self, value: Any, where: str) -> str:
        """``value`` as a Python expression; raises :class:`NotRepresentable` naming ``where``."""
        import jax
        import numpy as np

        if isinstance(value, float) and not math.isfinite(value):
            # repr gives ``nan``/``inf``, names the snippet does not define
            return f"float({repr(value)!r})"
        if isinstance(value, complex):
            return f"complex({self.value(value.real, where)}, {self.value(value.imag, where)})"
        if value is None or isinstance(value, bool | int | float | str):
            return repr(value)
        if isinstance(value, tuple):
            items = [self.value(v, f"{where}[{i}]") for i, v in enumerate(value)]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if isinstance(value, list):
            return (
                "[" + ", ".join(self.value(v, f"{where}[{i}]") for i, v in enumerate(value)) + "]"
            )
        if isinstance(value, dict):
            pairs = [
                f"{self.value(k, where)}: {self.value(v, f'{where}[{k!r}]')}"
                for k, v in value.items()
            ]
            return "{" + ", ".join(pairs) + "}"
        if isinstance(value, jax.ShapeDtypeStruct):
            self.imports.append("import jax")
            return f"jax.ShapeDtypeStruct({tuple(value.shape)!r}, {str(value.dtype)!r})"
        if isinstance(value, jax.Array) and jax.numpy.issubdtype(value.dtype, jax.dtypes.prng_key):
            # A typed key (jax.random.key) has no numpy form: its key data and impl instead.
            self.imports.append("import jax")
            data = self.value(jax.random.key_data(value), where)
            impl = str(jax.random.key_impl(value))
            return f"jax.random.wrap_key_data({data}, impl={impl!r})"
        if isinstance(value, np.ndarray | jax.Array | np.generic):
            self.needs_array = True
            on_device = isinstance(value, jax.Array)
            host = np.asarray(value)
            data = base64.b64encode(np.ascontiguousarray(host).tobytes()).decode("ascii")
            # A numpy scalar (np.float32(2.0)) stays one: as a Python float it would be a
            # weak-typed f32 in JAX, not f16 or strongly typed f32 (another jaxpr).
            scalar = "[()]" if isinstance(value, np.generic) else ""
            return (
                f"_jaxscope_array({data!r}, {str(host.dtype)!r}, {tuple(host.shape)!r}, "
                f"{on_device}){scalar}"
            )
        raise NotRepresentable(
            f"{where} is of type {type(value).__name__}, which jaxscope.show cannot write as code: "
            "pass arrays, Python scalars, jax.ShapeDtypeStruct, or tuples, lists and dicts of them"
        )


def _lambda_source(fn: types.FunctionType, wrapped: bool = False) -> str:
    """The source of the lambda expression ``fn`` (``lambda x: ...``), out of the line, cell or
    file that holds it: of the lambdas on ``fn``'s first line, the one with ``fn``'s names whose
    span holds ``fn``'s code. ``wrapped`` (the object shown wraps ``fn``, as
    ``jax.jit(lambda ...)`` does): the call whose first argument the lambda is, if any. Raises
    :class:`NotRepresentable` when Python has no source for it (a lambda typed at a plain
    ``python`` prompt, or made by ``eval``) or cannot tell it apart."""
    refusal = "f is a lambda whose source Python cannot find"
    try:
        lines, start = inspect.findsource(fn)
    except (OSError, TypeError) as exc:
        raise NotRepresentable(f"{refusal} ({exc}): define it with def in a cell or file") from None
    # The whole cell or file first; else the lines getsource gives (a file that does not parse
    # as a whole still has this line).
    candidates: list[tuple[str, int, int]] = [("".join(lines), 0, 0)]
    try:
        block = "".join(inspect.getblock(lines[start:]))
        dedented = textwrap.dedent(block)
        shift = len(block.split("\n", 1)[0]) - len(dedented.split("\n", 1)[0])
        candidates.append((dedented, start, shift))
    except Exception:  # getblock's tokenizer errors: the whole source remains
        pass
    want = fn.__code__
    for text, offset, shift in candidates:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        calls = {
            id(node.args[0]): node
            for node in ast.walk(tree)
            if wrapped and isinstance(node, ast.Call) and node.args
        }
        found = [
            (segment, calls.get(id(node)))
            for node in ast.walk(tree)
            if isinstance(node, ast.Lambda) and node.lineno + offset == want.co_firstlineno
            for segment in [ast.get_source_segment(text, node)]
            if segment is not None and _is_lambda_of(node, segment, want, (offset, shift))
        ]
        if len(found) == 1:
            segment, call = found[0]
            if call is not None:
                segment = ast.get_source_segment(text, call) or segment
            return segment if "\n" not in segment else f"({segment})"
        if found:
            raise NotRepresentable(
                f"f is one of {len(found)} lambdas alike on line {want.co_firstlineno}: "
                "define it with def"
            )
    raise NotRepresentable(f"{refusal} in the source of its line: define it with def")


def _is_lambda_of(
    node: ast.Lambda, segment: str, want: types.CodeType, offset: tuple[int, int]
) -> bool:
    """Whether the lambda ``node`` (its text ``segment``; its lines and columns ``offset``
    less than the code's) is the one ``want`` was compiled from: the same arguments and names,
    and every instruction of ``want`` within the node's span. (Not its bytecode: the same
    lambda compiled apart differs, LOAD_METHOD for LOAD_ATTR.)"""
    try:
        outer = compile(f"({segment})" if "\n" in segment else segment, "<lambda>", "eval")
    except SyntaxError:
        return False
    codes = [c for c in outer.co_consts if isinstance(c, types.CodeType)]
    if not codes or (codes[0].co_names, codes[0].co_varnames, codes[0].co_argcount) != (
        want.co_names,
        want.co_varnames,
        want.co_argcount,
    ):
        return False
    lines, cols = offset
    start = (node.lineno + lines, node.col_offset + cols)
    end_col = node.end_col_offset
    end = ((node.end_lineno or node.lineno) + lines, 1 << 30 if end_col is None else end_col + cols)
    for line, end_line, col, end_col in want.co_positions():
        if line is None or col is None or end_line is None or end_col is None:
            continue
        if col == end_col == 0:
            continue  # RESUME and the like: the line, no column
        if (line, col) < start or (end_line, end_col) > end:
            return False
    return True


def _names_read_at_definition(lam: str) -> set[str]:
    """The names a lambda expression's default values read, and the call around it reads
    (``jax.jit(lambda ...)``)."""
    try:
        node = ast.parse(lam if "\n" not in lam else f"({lam})", mode="eval").body
    except SyntaxError:
        return set()
    outside: list[ast.expr | None] = []
    if isinstance(node, ast.Call):
        outside = [node.func, *node.args[1:], *(k.value for k in node.keywords)]
        node = node.args[0] if node.args else node
    if not isinstance(node, ast.Lambda):
        return set()
    names: set[str] = set()
    for part in [*outside, *node.args.defaults, *node.args.kw_defaults]:
        if part is not None:
            names |= {n.id for n in ast.walk(part) if isinstance(n, ast.Name)}
    return names


def _decorator_names(source: str) -> set[str]:
    """The names the decorators and default values of the ``def`` in ``source`` read (they
    run where the function is defined, so its code object does not load them)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in tree.body[:1]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            outside = [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]
            for part in outside:
                if part is not None:
                    names |= {n.id for n in ast.walk(part) if isinstance(n, ast.Name)}
    return names


def _global_names(code: types.CodeType) -> Iterator[str]:
    """The global names ``code`` and the code nested in it (comprehensions, inner functions)
    load (``LOAD_GLOBAL``/``LOAD_NAME``: not the attribute names of ``co_names``)."""
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME") and isinstance(
            instruction.argval, str
        ):
            yield instruction.argval
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_names(const)
