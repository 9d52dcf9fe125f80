"""The lazy_tensor exhibit's probe (PyTorch/XLA track; runs in a torch worker, design 0025).

The snippet's ``args`` are CPU tensors (and Python numbers); the probe moves the tensors to the
XLA device and calls ``f``:
1. line by line (``sys.settrace`` on the snippet's frames, torch_xla's IR debug on so that each
   IR node names the line that made it): after each line, the pending IR of the frame's XLA
   tensors and the counters that moved (a cut runs a program), read after
   ``xm.wait_device_ops()``; the host-reading ``torch.Tensor`` methods (``item``, ``cpu``,
   ``tolist``, ``__bool__``, ``__repr__``...) are wrapped for this run only, so that a cut names
   the call that made it. With the ``eager_mode`` option, this run is in torch_xla's eager mode
   (``torch_xla.experimental.eager_mode``: every op runs at once);
2. plainly, as a user's script would (IR debug off): the outputs' IR text, HLO and graph hash
   before any sync, then ``torch_xla.sync()`` and the values;
3. the graph hash again on new values of the same shapes, with ``args[0]`` one row longer, and
   with each Python number among ``args`` changed; beside it, what torch_xla's source folds into
   the hash (``hash_source.py``);
4. with the ``torchax`` option, the same ``f`` through torchax (PyPI, from its own folder of the
   torch venv, design 0042): ``jax.make_jaxpr`` of ``f`` through ``torchax.interop.jax_view``,
   the snippet's module-level ``nn.Module`` state an input as ``torchax.extract_jax`` makes it
   (``JittableModule.functional_call`` around ``f``), its module-level tensors constants; its
   StableHLO and values.

torch and torch_xla are public API here; torch_xla's private text, HLO, hash, tensor-debug-info
and IR-debug functions (torch_xla's own way to read its pending graph) come through
:mod:`jaxscope.torch_internals`, the one module that calls ``_XLAC``.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from jaxscope.exhibit_api import (
    SNIPPET_FILENAME,
    ProbeContext,
    move_state,
    options_as,
    source_lines,
)
from jaxscope.exhibit_api import torch_internals as ti

from . import hash_source
from .events import (
    CutCall,
    GraphHashCompared,
    HashIngredientView,
    HashSourceView,
    HashTrial,
    IrNodeView,
    LazyGraphBuilt,
    LazyGraphSynced,
    LazyLineStepped,
    TorchaxStaged,
    TorchaxVar,
)
from .options import LazyTensorOptions

# torchax and its JAX (requirements-torchax.txt): a folder of the torch venv, not its
# site-packages, where torch_xla 2.9.0 ships a torchax of its own (design 0042).
TORCHAX_SITE = "torchax-site"

# ``location=f@<snippet>:7`` in a node of the IR text (torch_xla's IR debug metadata).
_LOCATION = re.compile(r"location=[^,@]*@" + re.escape(SNIPPET_FILENAME) + r":(\d+)")


def _counter(name: str) -> int:
    import torch_xla.debug.metrics as met

    return int(met.counter_value(name) or 0)


def _samples(name: str) -> int:
    import torch_xla.debug.metrics as met

    data = met.metric_data(name)
    return int(data[0]) if data else 0


def _counts() -> tuple[int, int, int]:
    """(executions, compiles, transfers from device) once the device is idle: execution is
    asynchronous, an op's run would land in a later line's counters (eager mode)."""
    import torch_xla.core.xla_model as xm

    xm.wait_device_ops()
    return (
        _counter("ExecuteComputation"),
        _counter("UncachedCompile"),
        _samples("TransferFromDeviceTime"),
    )


def _map_tensors(tree: Any, fn: Callable[[Any], Any]) -> Any:
    """``tree`` with ``fn`` applied to each torch tensor leaf (torch's own pytree)."""
    import torch
    from torch.utils import _pytree as pytree

    return pytree.tree_map(lambda x: fn(x) if isinstance(x, torch.Tensor) else x, tree)


def _xla_leaves(tree: Any) -> list[Any]:
    import torch
    from torch.utils import _pytree as pytree

    return [
        x
        for x in pytree.tree_leaves(tree)
        if isinstance(x, torch.Tensor) and x.device.type == "xla"
    ]


def _nodes(text: str) -> list[IrNodeView]:
    """The node lines of an IR text (between ``IR {`` and ``}``), each with the snippet line its
    ``location=`` names."""
    nodes = []
    for raw in text.splitlines():
        stripped = raw.strip()
        if not stripped.startswith("%"):
            continue
        found = _LOCATION.search(stripped)
        nodes.append(IrNodeView(text=stripped, line=int(found.group(1)) if found else None))
    return nodes


def _has_ir(t: Any) -> bool:
    """Whether the XLA tensor ``t`` has an IR node yet (torch_xla's debug info: ``IR: None`` for
    a tensor that is only device data, an argument no line has used yet). Reading the IR text
    of such a tensor would make its ``device_data`` node there, in the probe's frame (it would
    name the probe as its location, for good), instead of at the user's line that first uses
    it, as in a plain script."""
    return ti.has_ir(t)


# torch.Tensor's methods that read a value on the host (a cut when the tensor is pending):
# wrapped while f runs line by line, to name the call that cut at each line. Not ``to``: a
# wrapper's frame is innermost while the method runs, and ``t.to(torch.float16)`` makes an IR
# node there, whose IR debug location would name the wrapper instead of the snippet's line.
# ``to`` (a C method of torch's) is watched by a profile hook instead (``c_call`` /
# ``c_return`` events add no Python frame): a ``.to("cpu")`` cut is named ``to``.
HOST_READS = (
    "item",
    "cpu",
    "tolist",
    "__bool__",
    "__float__",
    "__int__",
    "__index__",
    "__repr__",
    "__format__",
)


def _snippet_frame(frame: FrameType | None) -> FrameType | None:
    """The innermost snippet frame at or above ``frame``."""
    while frame is not None and frame.f_code.co_filename != SNIPPET_FILENAME:
        frame = frame.f_back
    return frame


@contextmanager
def _host_reads(calls: dict[int, list[CutCall]]) -> Iterator[None]:
    """While active, each outermost call of a :data:`HOST_READS` method that runs a program is
    added to ``calls[id(frame)]`` of the innermost snippet frame that made it (the wrapper's
    own frame is on the stack only during such a call, which makes no IR node of the
    snippet's). So is each outermost ``Tensor.to`` of an XLA tensor that runs one (a
    ``.to("cpu")``), seen by a profile hook. The methods and the previous profile hook are put
    back after, even when ``f`` raises."""
    import torch

    depth = [0]
    saved: dict[str, tuple[bool, Any]] = {}

    def wrap(name: str, method: Any) -> Any:
        @functools.wraps(method)
        def host_read(*args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            before = _counts() if depth[0] == 1 else (0, 0, 0)
            try:
                return method(*args, **kwargs)
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    after = _counts()
                    frame = _snippet_frame(sys._getframe(1))
                    if frame is not None and after[0] > before[0]:
                        calls.setdefault(id(frame), []).append(
                            CutCall(
                                method=name,
                                executions=after[0] - before[0],
                                transfers_from_device=after[2] - before[2],
                            )
                        )

        return host_read

    started: list[tuple[int, int, int]] = []

    def watch_to(frame: FrameType, event: str, arg: Any) -> None:
        """``sys.setprofile``'s hook: an outermost ``Tensor.to`` on an XLA tensor that ran a
        program (``.to("cpu")`` of a pending tensor) is a cut, named ``to``."""
        if event not in ("c_call", "c_return", "c_exception") or depth[0] > 0:
            return
        if getattr(arg, "__name__", "") != "to":
            return
        owner = getattr(arg, "__self__", None)
        if not isinstance(owner, torch.Tensor) or owner.device.type != "xla":
            return
        if event == "c_call":
            started.append(_counts())
            return
        if not started:
            return
        before, after = started.pop(), _counts()
        snippet = _snippet_frame(frame)
        if snippet is not None and after[0] > before[0]:
            calls.setdefault(id(snippet), []).append(
                CutCall(
                    method="to",
                    executions=after[0] - before[0],
                    transfers_from_device=after[2] - before[2],
                )
            )

    for name in HOST_READS:
        saved[name] = (name in vars(torch.Tensor), getattr(torch.Tensor, name))
        setattr(torch.Tensor, name, wrap(name, saved[name][1]))
    profile = sys.getprofile()
    sys.setprofile(watch_to)
    try:
        yield
    finally:
        sys.setprofile(profile)
        for name, (own, method) in saved.items():
            if own:
                setattr(torch.Tensor, name, method)
            else:
                delattr(torch.Tensor, name)


@contextmanager
def _line_steps(ctx: ProbeContext, eager: bool) -> Iterator[None]:
    """While active, emit a :class:`LazyLineStepped` after each line of a snippet frame."""
    import torch

    lines = source_lines(ctx.snippet.source)
    started: dict[int, tuple[int, tuple[int, int, int]]] = {}
    calls: dict[int, list[CutCall]] = {}

    def finish(frame: FrameType, result: Any = None) -> None:
        line, before = started[id(frame)]
        after = _counts()
        live = [v for v in frame.f_locals.values() if isinstance(v, torch.Tensor)]
        live += _xla_leaves(result)
        tensors = [t for t in live if t.device.type == "xla" and _has_ir(t)]
        text = ti.ir_text(tensors) if tensors else ""
        nodes = _nodes(text)
        ctx.emit(
            LazyLineStepped(
                line=line,
                function=frame.f_code.co_name,
                source=lines[line - 1].strip() if 0 < line <= len(lines) else "",
                pending=nodes,
                new_nodes=sum(n.line == line for n in nodes),
                executions=after[0] - before[0],
                compiles=after[1] - before[1],
                transfers_from_device=after[2] - before[2],
                cut_by=calls.pop(id(frame), []),
                eager_mode=eager,
            )
        )

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event in ("line", "return") and id(frame) in started:
            finish(frame, arg if event == "return" else None)
        if event == "line":
            started[id(frame)] = (frame.f_lineno, _counts())
        return local

    def outer(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != SNIPPET_FILENAME or event != "call":
            return None
        return local

    previous = sys.gettrace()
    with _host_reads(calls):
        sys.settrace(outer)
        try:
            yield
        finally:
            sys.settrace(previous)


def _graph_hash(outputs: list[Any]) -> str:
    return ti.graph_hash_hex(outputs)


def _new_values(t: Any) -> Any:
    """``t`` with other values of the same shape and dtype: a float tensor scaled and shifted, an
    integer or bool tensor reversed along its first axis (``t * 0.5`` would make int64 labels
    float: a new dtype, so a new graph, which is not what the trial claims to vary), a 0-d
    integer tensor as is."""
    import torch

    if not isinstance(t, torch.Tensor):
        return t
    if t.is_floating_point() or t.is_complex():
        return t * 0.5 + 0.25
    return t.flip(0) if t.dim() > 0 else t


def _one_row_longer(t: Any) -> Any:
    """``t`` with its first row repeated at the end (a new leading size; a scalar as is)."""
    import torch

    if not isinstance(t, torch.Tensor) or t.dim() == 0:
        return t
    return torch.cat([t, t[:1]])


def _hash_source() -> HashSourceView:
    return HashSourceView(
        path=hash_source.TREE_PATH,
        tag=hash_source.TAG,
        commit=hash_source.COMMIT,
        entry=hash_source.ENTRY,
        entry_lines=list(hash_source.function_lines(hash_source.ENTRY)),
        collect=hash_source.COLLECT,
        collect_lines=list(hash_source.function_lines(hash_source.COLLECT)),
        call_line=hash_source.call_line(),
        ingredients=[
            HashIngredientView(
                function=i.function, lines=list(i.lines), text=i.text, key=i.key, meaning=i.meaning
            )
            for i in hash_source.ingredients()
        ],
    )


def _changes(args: tuple[Any, ...]) -> list[tuple[str, Any]]:
    """The hash experiments: (what changed, the new ``args``)."""
    import torch

    changes: list[tuple[str, Any]] = [
        ("new values, same shapes", _map_tensors(args, _new_values)),
    ]
    if args and isinstance(args[0], torch.Tensor) and args[0].dim() > 0:
        changes.append(("args[0] one row longer", (_one_row_longer(args[0]), *args[1:])))
    for i, value in enumerate(args):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            new = value + 1
            changed = (*args[:i], new, *args[i + 1 :])
            changes.append((f"args[{i}] = {new!r} (was {value!r}), a Python number", changed))
    return changes


def _cpu_state(ns: dict[str, Any], args: tuple[Any, ...]) -> dict[int, Any]:
    """CPU copies of the snippet's module-level state, by the tensor object's id: each
    ``nn.Module``'s parameters and buffers and each module-level tensor among ``ns``'s values,
    as the snippet built them. Taken before :func:`move_state` moves them to the XLA device in
    place (the objects stay, so the ids hold) and before the runs of f that may change them
    (a training step): torchax's panel traces f on these values."""
    import torch

    skip = {id(a) for a in args}
    copies: dict[int, Any] = {}
    for value in ns.values():
        if isinstance(value, torch.nn.Module):
            tensors = [*value.parameters(), *value.buffers()]
        elif isinstance(value, torch.Tensor) and id(value) not in skip:
            tensors = [value]
        else:
            continue
        for t in tensors:
            copies.setdefault(id(t), t.detach().to("cpu", copy=True))
    return copies


def _module_globals(ns: dict[str, Any]) -> list[tuple[str, Any]]:
    """The snippet's module-level ``nn.Module`` globals that hold state, by their first global
    name, in the snippet's order; one that is a submodule of another is left out (the other's
    state covers it: torchax reparametrizes a module and its children together)."""
    import torch

    found: list[tuple[str, Any]] = []
    for name, value in ns.items():
        if not isinstance(value, torch.nn.Module) or any(value is m for _, m in found):
            continue
        if next(iter([*value.parameters(), *value.buffers()]), None) is None:
            continue
        found.append((name, value))
    return [
        (name, m)
        for name, m in found
        if not any(m is not other and any(m is c for c in other.modules()) for _, other in found)
    ]


def _header_vars(jaxpr: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The (name, type) of each constvar and invar in a jaxpr's text, from its header
    ``{ lambda CONSTVARS; INVARS. let`` (JAX's own names: ``b:f32[8,4]``)."""
    # The program's own jaxpr starts a line; jaxprs it shares (``let _var = { lambda ...`` ...
    # ``in``) come before it.
    found = re.search(r"^\{ lambda(.*?);(.*?)\.\s*let\b", jaxpr, re.S | re.M)
    if found is None:
        return [], []

    def parse(part: str) -> list[tuple[str, str]]:
        return [(tok.split(":", 1)[0], tok.split(":", 1)[1]) for tok in part.split() if ":" in tok]

    return parse(found.group(1)), parse(found.group(2))


def _snippet_line(exc: BaseException) -> int | None:
    """The innermost snippet line in ``exc``'s traceback (JAX filters its own frames out)."""
    import traceback

    lines = [
        fr.lineno
        for fr in traceback.extract_tb(exc.__traceback__)
        if fr.filename == SNIPPET_FILENAME
    ]
    return lines[-1] if lines else None


def _problem(staged: TorchaxStaged, exc: BaseException, source: str) -> TorchaxStaged:
    """``staged`` with what torchax raised: its type and first line, and the snippet line it
    came from with that line's text (no traceback)."""
    text = str(exc).strip().splitlines()
    line = _snippet_line(exc)
    lines = source_lines(source)
    return staged.model_copy(
        update={
            "problem": f"{type(exc).__name__}: {text[0] if text else ''}",
            "problem_line": line,
            "problem_source": lines[line - 1].strip()
            if line is not None and 0 < line <= len(lines)
            else "",
        }
    )


def _torchax(
    f: Callable[..., Any], args: tuple[Any, ...], state: dict[int, Any], source: str
) -> TorchaxStaged:
    """``f`` through torchax: its jaxpr, StableHLO and values (module docstring, design 0042).

    The snippet's module-level ``nn.Module`` state is the traced function's first input, as
    ``torchax.extract_jax`` makes it: per module global, torchax's ``JittableModule`` split of
    it into params and buffers (by torchax's names), as JAX arrays of ``state``'s CPU copies;
    inside, ``JittableModule.functional_call`` puts them in the module while f runs (f calls
    the module itself). Module-level tensors f reads are torchax tensors of their copies while
    f runs (the global rebound, then put back): captured, so constants of the jaxpr."""
    import os

    import torch

    site = os.path.join(sys.prefix, TORCHAX_SITE)
    static = [i for i, a in enumerate(args) if not isinstance(a, torch.Tensor)]
    empty = TorchaxStaged(
        torchax_version="",
        jax_version="",
        static_args=static,
        jaxpr="",
        stablehlo="",
        values=[],
        problem="",
    )
    if not os.path.isdir(os.path.join(site, "torchax")):
        return empty.model_copy(
            update={"problem": f"torchax is not installed ({site}: `make torch` installs it)"}
        )
    if site not in sys.path:
        sys.path.insert(0, site)
    torch.manual_seed(0)  # torchax's environment takes its PRNG key from torch's seed
    import jax
    import numpy as np
    import torchax
    import torchax.interop

    env = torchax.default_env()
    ns = f.__globals__

    def cpu(t: Any) -> Any:
        return state[id(t)] if id(t) in state else t.detach().to("cpu")

    def as_jax(t: Any) -> Any:  # torchax's own conversion (bfloat16 included)
        return env.t2j_copy(cpu(t))

    staged = empty.model_copy(
        update={"torchax_version": torchax.__version__, "jax_version": jax.__version__}
    )
    try:
        modules = [(name, torchax.interop.JittableModule(m)) for name, m in _module_globals(ns)]
        states = {
            name: {k: as_jax(v) for k, v in {**jm.params, **jm.buffers}.items()}
            for name, jm in modules
        }
        skip = {id(a) for a in args}
        tensors = {
            name: as_jax(v)
            for name, v in ns.items()
            if isinstance(v, torch.Tensor) and id(v) not in skip and not name.startswith("__")
        }
    except Exception as exc:  # a state torchax cannot take: its own error
        return _problem(staged, exc, source)

    updated: list[str] = []

    def body(states: Any, *targs: Any) -> Any:  # torch land: torchax tensors
        call: Callable[..., Any] = f
        for name, jm in modules:
            mine = states[name]
            call = functools.partial(
                jm.functional_call,
                lambda _module, *a, _inner=call: _inner(*a),
                {k: mine[k] for k in jm.params},
                {k: mine[k] for k in jm.buffers},
            )
        saved = {name: ns[name] for name in tensors}
        captured = env.j2t_iso(tensors)
        held = {f"{name}.{k}": t for name in states for k, t in states[name].items()}
        held.update(captured)
        before = {name: torchax.interop.jax_view(t) for name, t in held.items()}
        ns.update(captured)
        try:
            return call(*targs)
        finally:
            ns.update(saved)
            # An in-place update of the state (a BatchNorm's running stats, ``t.add_``) gives
            # the torchax tensor a new JAX value, which is no output of the traced function.
            updated[:] = [
                name for name, t in held.items() if torchax.interop.jax_view(t) is not before[name]
            ]

    staged_f = torchax.interop.jax_view(body)  # JAX land: call_torch(body, ...)
    jargs = [jax.numpy.asarray(a.numpy()) if isinstance(a, torch.Tensor) else a for a in args]
    shifted = [i + 1 for i in static]
    try:
        closed = jax.make_jaxpr(staged_f, static_argnums=shifted)(states, *jargs)
        dropped = list(updated)
        jitted = jax.jit(staged_f, static_argnums=shifted)
        stablehlo = jitted.lower(states, *jargs).as_text()
        out = jax.tree_util.tree_leaves(jitted(states, *jargs))
    except Exception as exc:  # f does what a trace cannot (a host read): torchax's own error
        return _problem(staged, exc, source)
    jaxpr = str(closed)
    constvars, invars = _header_vars(jaxpr)
    kinds = {name: {k: "parameter" for k in jm.params} for name, jm in modules}
    for name, jm in modules:
        kinds[name].update({k: "buffer" for k in jm.buffers})
    names: list[tuple[str, str]] = []
    for path, _ in jax.tree_util.tree_flatten_with_path(states)[0]:
        module, key = (str(getattr(p, "key", p)) for p in path)
        names.append((f"{module}.{key}", kinds[module][key]))
    names += [(f"args[{i}]", "argument") for i, a in enumerate(args) if i not in static]
    inputs = (
        [
            TorchaxVar(var=var, aval=aval, name=name, kind=kind)  # type: ignore[arg-type]
            for (var, aval), (name, kind) in zip(invars, names, strict=True)
        ]
        if len(invars) == len(names)
        else []
    )
    by_id = {id(v): name for name, v in tensors.items()}
    constants = [
        TorchaxVar(
            var=var,
            aval=aval,
            name=by_id.get(id(value), ""),
            kind="tensor" if id(value) in by_id else "constant",
        )
        for (var, aval), value in zip(constvars, closed.consts, strict=False)
    ]
    return staged.model_copy(
        update={
            "jaxpr": jaxpr,
            "stablehlo": stablehlo,
            "values": [str(np.asarray(v).tolist()) for v in out],
            "inputs": inputs,
            "constants": constants if len(constvars) == len(closed.consts) else [],
            "updated": dropped,
        }
    )


def _call_on_device(f: Callable[..., Any], args: Any, device: Any) -> Any:
    return f(*_map_tensors(args, lambda t: t.to(device)))


def run(ctx: ProbeContext) -> None:
    """Run ``f`` on the XLA device line by line, then plainly; emit the steps, the graph before
    and after the sync, and the hash experiments."""
    import torch_xla
    from torch_xla.experimental import eager_mode

    f, args = ctx.snippet.f, tuple(ctx.snippet.args)
    options = options_as(ctx.options, LazyTensorOptions)
    eager = bool(options.eager_mode)
    # The torchax panel: the option, else the snippet's own ``use_torchax = True`` (an example
    # that is about torchax turns it on; the option, set either way, wins).
    with_torchax = (
        options.torchax if options.torchax is not None else f.__globals__.get("use_torchax") is True
    )
    with ctx.stage("client"):
        device = torch_xla.device()  # creates the PJRT client (PJRT_DEVICE, in this run)
        # The snippet's module-level models and tensors too, in place: an optimizer built
        # beside them keeps its parameters (a training step at module level runs on the device).
        # torchax's panel traces f on the state as the snippet built it (design 0042).
        state = _cpu_state(f.__globals__, args) if with_torchax else {}
        move_state(f.__globals__, args, device)
        moved = _map_tensors(args, lambda t: t.to(device))
        torch_xla.sync()  # the arguments are device data, not pending uploads
    with ctx.stage("lazy_trace"):
        eager_mode(eager)
        try:
            with ti.ir_debug(), _line_steps(ctx, eager):
                traced = f(*moved)
        finally:
            eager_mode(False)
        del traced, moved
        torch_xla.sync()

        # Fresh device copies: those the cuts above materialised carry IR debug locations.
        out = _call_on_device(f, args, device)
        outputs = _xla_leaves(out)
        built = LazyGraphBuilt(
            ir=ti.ir_text(outputs),
            hlo=ti.hlo_text(outputs),
            graph_hash=_graph_hash(outputs),
            outputs=[f"{tuple(t.shape)} {t.dtype}" for t in outputs],
        )
    ctx.emit(built)
    with ctx.stage("sync"):
        before = (_counter("ExecuteComputation"), _counter("UncachedCompile"))
        cached = _counter("CachedCompile")
        torch_xla.sync()
        values = [str(t.cpu()) for t in outputs]
        ctx.emit(
            LazyGraphSynced(
                values=values,
                executions=_counter("ExecuteComputation") - before[0],
                compiles=_counter("UncachedCompile") - before[1],
                cached_compiles=_counter("CachedCompile") - cached,
            )
        )
    del out, outputs
    with ctx.stage("lazy_trace"):
        trials = []
        for change, new_args in _changes(args):
            moved_new = _map_tensors(new_args, lambda t: t.to(device))
            torch_xla.sync()
            try:
                result = f(*moved_new)
            except Exception as exc:  # a new shape f does not accept: say so, not fail the run
                trials.append(
                    HashTrial(change=f"{change} ({type(exc).__name__})", graph_hash="", same=False)
                )
                continue
            found = _graph_hash(_xla_leaves(result))
            trials.append(
                HashTrial(change=change, graph_hash=found, same=found == built.graph_hash)
            )
            del result
            torch_xla.sync()
    ctx.emit(GraphHashCompared(graph_hash=built.graph_hash, trials=trials, source=_hash_source()))
    if with_torchax:
        with ctx.stage("trace"):
            staged = _torchax(f, args, state, ctx.snippet.source)
        ctx.emit(staged)
