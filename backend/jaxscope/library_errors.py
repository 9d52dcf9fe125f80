"""Error explainers for errors raised inside Flax, optax and ``jax.tree`` utilities (issue 15):
links of ``jaxscope.explainers``' chain, asked after JAX's tracer errors and before the
exhibits' own handlers.

* :func:`tree_structures`: two pytrees that ``jax.tree.map`` pairs leaf by leaf (``optax``'s
  ``tx.update``/``apply_updates``, a user's ``jax.tree.map``) do not have the same structure.
  The trees are read off the ``tree_map`` frame of the traceback (its ``tree`` and ``rest``),
  compared node by node with the pytree exhibit's treedef diff
  (``jaxscope.internals.api.first_difference``), and named as the user's own
  variables where the snippet's frame holds them (``grads``, ``opt_state[0].mu``). The fix
  depends on how they differ: ``dict`` vs ``FrozenDict``, an array where a tree was expected (a
  gradient taken with respect to the wrong argument), a tuple of gradients (``argnums``
  tuple), missing keys.
* :func:`flax_errors`: Flax NNX's trace-level errors (an NNX object closed over by a JAX
  transform and changed inside it) and a Flax linen ``Module`` passed as an argument of a JAX
  transform.

Each fix is one that applies: ``static_argnums`` is suggested only where it makes the program
run (a linen module is a hashable frozen dataclass; an NNX object changed inside the trace is
not helped by it). The handlers read exceptions, their tracebacks and JAX's/Flax's own
messages (jax 0.10.2, flax 0.12.8, optax 0.2.8); they import neither Flax nor optax, and reach
``jaxscope.internals`` only when a tree error is being explained.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from types import FrameType, TracebackType
from typing import Any, NamedTuple

from jaxscope.explainers import ErrorContext, Explanation
from jaxscope.snippet_model import SNIPPET_FILENAME

# JAX's messages for two trees whose structures differ (jax 0.10.2): ``tree_map``'s own
# (``_prefix_error``) and the C++ ``flatten_up_to``'s.
_STRUCTURE_MARKERS = (
    "pytree structure error",
    "Custom node type mismatch",
    "Mismatch custom node data",
    "Tuple arity mismatch",
    "List arity mismatch",
    "Dict key mismatch",
    "Expected dict, got",
    "Expected tuple, got",
    "Expected list, got",
    "Expected None, got",
)


def _frames(tb: TracebackType | None) -> Iterator[FrameType]:
    while tb is not None:
        yield tb.tb_frame
        tb = tb.tb_next


def _all_frames(exc: BaseException) -> Iterator[FrameType]:
    """The frames of ``exc``'s traceback, then those of the unfiltered traceback JAX keeps as
    its ``__cause__`` (``UnfilteredStackTrace``) when it filtered its own frames out of
    ``exc``'s (``JAX_TRACEBACK_FILTERING=remove_frames``)."""
    yield from _frames(exc.__traceback__)
    cause = exc.__cause__
    for _ in range(4):
        if cause is None:
            return
        if type(cause).__name__ == "UnfilteredStackTrace":
            yield from _frames(cause.__traceback__)
        cause = cause.__cause__


# ``jax.tree.map`` (``jax/_src/tree.py``'s ``map``) and ``jax.tree_util.tree_map``: both keep
# the trees in the locals ``tree`` and ``rest``.
_TREE_MAPS = {
    "tree_util.py": ("tree_map", "tree_map_with_path"),
    "tree.py": ("map", "map_with_path"),
}


class TreeMapCall(NamedTuple):
    """The innermost ``jax.tree.map`` call on a traceback: its trees, and the frame that called
    it (the first frame outside JAX before it: a snippet's, optax's, Flax's), None when none
    is on the traceback."""

    tree: Any
    rest: tuple[Any, ...]
    caller: FrameType | None


def _tree_map_trees(exc: BaseException) -> TreeMapCall | None:
    """The innermost ``jax.tree.map``/``tree_map`` call on ``exc``'s traceback (JAX's
    ``jax/_src/tree_util.py`` and ``jax/_src/tree.py``), else on the unfiltered traceback JAX
    keeps as its cause (:func:`_all_frames`), else None."""
    found = _innermost_tree_map(list(_frames(exc.__traceback__)))
    if found is None and exc.__cause__ is not None:
        found = _innermost_tree_map(list(_all_frames(exc)))
    return found


def _is_jax_frame(frame: FrameType) -> bool:
    return "/jax/" in frame.f_code.co_filename.replace("\\", "/")


def _innermost_tree_map(frames: list[FrameType]) -> TreeMapCall | None:
    found = None
    for i, frame in enumerate(frames):
        code = frame.f_code
        file = code.co_filename.replace("\\", "/")
        if "/jax/" not in file or code.co_name not in _TREE_MAPS.get(file.rsplit("/", 1)[-1], ()):
            continue
        local = frame.f_locals
        if "tree" in local and isinstance(local.get("rest"), tuple):
            callers = [f for f in frames[:i] if not _is_jax_frame(f)]
            found = TreeMapCall(local["tree"], local["rest"], callers[-1] if callers else None)
    return found


def _snippet_frame(exc: BaseException) -> FrameType | None:
    """The deepest frame of the user's snippet on ``exc``'s traceback."""
    deepest = None
    for frame in _frames(exc.__traceback__):
        if frame.f_code.co_filename == SNIPPET_FILENAME:
            deepest = frame
    return deepest


def _is_array_like(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def user_name(target: Any, frame: FrameType | None) -> str | None:
    """The user's words for ``target``: a local name of ``frame`` that is ``target`` itself,
    or such a name and the key path (``keystr``) to ``target`` inside it (``opt_state[0].mu``);
    None when no local holds it."""
    if frame is None:
        return None
    import jax

    # f's locals first, then the snippet's globals (a module-level ``opt_state``)
    local = {
        **{k: v for k, v in frame.f_globals.items() if k not in frame.f_locals},
        **frame.f_locals,
    }
    for name, value in local.items():
        if value is target and not name.startswith("_"):
            return name
    for name, value in local.items():
        if name.startswith("_") or callable(value) or _is_array_like(value):
            continue
        if not isinstance(value, (tuple, list, dict)) and not hasattr(value, "_fields"):
            # only containers (optax's states are tuples and namedtuples)
            if type(value).__module__.split(".")[0] not in ("flax", "optax"):
                continue
        try:
            paths, _ = jax.tree_util.tree_flatten_with_path(value, is_leaf=lambda x: x is target)
        except Exception:  # not a pytree JAX can flatten: not where target is
            continue
        for path, leaf in paths:
            if leaf is target:
                return name + jax.tree_util.keystr(path)
    return None


def _kind_of(node: Any) -> str:
    if _is_array_like(node):
        return "an array"
    return f"a {type(node).__qualname__}"


_LEAF_TYPES = re.compile(r"a leaf \((\w*(?:Tracer|ArrayImpl|ndarray|Array)\w*)\)")


def _in_words(text: str, left: str, right: str) -> str:
    """The treedef diff's sentence with "left"/"right" replaced by the trees' names."""
    text = _LEAF_TYPES.sub("an array", text)
    text = re.sub(
        r"^keys only on the left: \[\]; only on the right:", "keys only on the right:", text
    )
    text = re.sub(
        r"^keys only on the left: (.*); only on the right: \[\]$",
        r"keys only on the left: \1",
        text,
    )
    text = re.sub(r"\bon the left\b", f"in {left}", text)
    text = re.sub(r"\bon the right\b", f"in {right}", text)
    text = re.sub(r"\bleft is\b", f"{left} is", text)
    text = re.sub(r"\bright is\b", f"{right} is", text)
    return text


_FROZEN_FIX = (
    "Use one kind of dict throughout: Flax linen's `init` returns plain `dict`s (since Flax"
    " 0.7.1), while `flax.core.freeze`, older Flax and some checkpoints give a `FrozenDict`."
    " Convert once with `flax.core.unfreeze(params)` (or `freeze`) before `tx.init(params)`,"
    " so that the params, their gradients and the optimizer state share one structure."
)
_WRONG_ARGUMENT_FIX = (
    "Differentiate with respect to the parameters: `jax.grad(loss)` differentiates the first"
    " argument only, so put the params first or say which one (`jax.grad(loss,"
    " argnums=i)`, `i` the params' position); the gradient then has the params' structure."
)
_TUPLE_FIX = (
    "`jax.grad(..., argnums=(0, 1))` (a tuple of argnums) returns a tuple with one gradient per"
    " argument: unpack it (`g_params, g_x = grads`) and pass the params' part, or use"
    " `argnums=0`."
)
_KEYS_FIX = (
    "Give both the same entries: build the optimizer state from the tree you update"
    " (`tx.init(tree)` and then `tx.update(grads_of_tree, state, tree)`). To leave some"
    " parameters untouched, keep them in the tree and use `optax.multi_transform` with"
    " `optax.set_to_zero()` for them (or `optax.masked`) instead of dropping them from the"
    " gradient."
)
_OTHER_FIX = (
    "Build both trees the same way (the same containers, keys and lengths), e.g. from the same"
    " params with `jax.tree.map`; `jaxscope run pytree` with the two trees shows the whole"
    " treedef diff."
)


_NONE_FIX = (
    "`None` is an empty pytree node to JAX, not a leaf, so it cannot stand for a value (a"
    " frozen parameter's missing gradient) where the other tree has one. Pass"
    " `is_leaf=lambda t: t is None` to `jax.tree.map` and handle `None` in the function"
    " (`lambda p, g: p if g is None else p - lr * g`), or put a value there"
    " (`jnp.zeros_like(p)`)."
)
_NNX_VARIABLE_FIX = (
    "The tree with the `{cls}` nodes was made by mapping over an NNX state without stopping"
    " at its Variables: `jax.tree.map(fn, nnx.state(model, nnx.Param))` applies `fn` to the"
    " value inside each `{cls}` and wraps the result back in a `{cls}`, so labels or a mask"
    " made that way keep the wrappers, while the tree optax pairs them with (the gradients or"
    " updates `nnx.Optimizer` hands it) holds plain arrays. Stop at each Variable:"
    " `jax.tree.map(fn, nnx.state(model, nnx.Param), is_leaf=lambda v: isinstance(v,"
    " nnx.Variable))` gives one plain label per parameter."
)
_NNX_STATE_FIX = (
    "`nnx.Optimizer` hands optax the parameters as an `nnx.State`, a pytree node type of its"
    " own, and a label or mask tree must have the same node types (or be a prefix made of"
    " them): a `dict` with the same keys is not. Wrap it, `nnx.State({{...}})`, or build it"
    " from the parameters' own structure: `jax.tree.map(fn, nnx.state(model, nnx.Param),"
    " is_leaf=lambda v: isinstance(v, nnx.Variable))`."
)


def _is_nnx(node: Any, name: str) -> bool:
    """``node`` is a Flax NNX ``name`` (``Variable``, ``State``) or of a subclass of it."""
    return any(
        c.__name__ == name and c.__module__.startswith("flax.nnx") for c in type(node).__mro__
    )


def _caller_name(target: Any, caller: FrameType | None) -> str | None:
    """``target`` named as the library code that gave it to ``jax.tree.map`` holds it: the
    caller's local variable (``mask_tree``); None when the caller is the snippet or holds it
    under no name."""
    if caller is None or caller.f_code.co_filename == SNIPPET_FILENAME:
        return None
    for name, value in caller.f_locals.items():
        if value is target:
            return name
    return None


def _library_of(caller: FrameType | None) -> str | None:
    """The package of the code that called ``jax.tree.map`` (``optax``, ``flax``); None when it
    is the snippet."""
    if caller is None or caller.f_code.co_filename == SNIPPET_FILENAME:
        return None
    return str(caller.f_globals.get("__name__", "?")).split(".")[0]


def tree_structures(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
    """Why two trees ``jax.tree.map`` paired have different structures, with the first node
    where they differ and the fix that applies to how they differ; None when ``exc`` was not
    raised in a ``tree_map`` over differently structured trees.

    The fix follows from where the trees came from as well as how they differ: a gradient
    taken with respect to the wrong argument (``argnums``) is offered only when the array side
    is one of the user's own variables standing where a whole tree of parameters is expected
    (the root of the other tree); two trees that a library paired (optax's mask and updates)
    are named by that library's own variables, and an NNX wrapper (``nnx.Param``, ``nnx.State``)
    on one side gets the NNX fix. Otherwise the fix says only what applies to any two trees."""
    del ctx
    message = str(exc)
    structural = any(m in message for m in _STRUCTURE_MARKERS)
    if not structural and not isinstance(exc, TypeError):
        return None
    call = _tree_map_trees(exc)
    if call is None:
        return None
    from jaxscope.internals.api import first_difference

    tree, rest = call.tree, call.rest
    found = None
    for i, other in enumerate(rest):
        diff = first_difference(tree, other)
        if diff is not None:
            found = (i, other, diff)
            break
    if found is None:
        return None
    i, other, diff = found
    left_node, right_node = diff.left, diff.right
    leaf_vs_node = diff.kind == "leaf/node"
    if not structural and not leaf_vs_node:
        return None  # a TypeError in the mapped function that the structures do not explain
    frame = _snippet_frame(exc)
    left_name = user_name(tree, frame)
    right_name = user_name(other, frame)
    left_lib = None if left_name else _caller_name(tree, call.caller)
    right_lib = None if right_name else _caller_name(other, call.caller)
    left = (
        f"`{left_name or left_lib}`"
        if left_name or left_lib
        else "the first tree given to `jax.tree.map`"
    )
    right = (
        f"`{right_name or right_lib}`"
        if right_name or right_lib
        else f"tree {i + 2} given to `jax.tree.map`"
    )
    where = f"`{diff.keypath}`" if diff.keypath else "the root"
    optax_state = any(n and re.search(r"\.(mu|nu|trace)\b", n) for n in (left_name, right_name))
    pairing = (
        " (an optax optimizer state holds one tree per statistic, `mu`/`nu`/`trace`, built by"
        " `tx.init(params)` with the params' structure, and `tx.update` pairs each with the"
        " gradient)"
        if optax_state
        else ""
    )
    explanation = (
        f"{left} and {right} must have the same pytree structure: `jax.tree.map` pairs their"
        f" leaves one to one{pairing}. They first differ at {where}:"
        f" {_in_words(diff.text, left, right)}."
    )
    library = _library_of(call.caller)
    if call.caller is not None and library is not None and not (left_name or right_name):
        module = str(call.caller.f_globals.get("__name__", library))
        made = (
            f"{left} and {right} are locals of `{module}.{call.caller.f_code.co_name}`"
            if left_lib and right_lib
            else f"`{module}.{call.caller.f_code.co_name}` paired them"
        )
        explanation += (
            f" Neither is one of your variables: {made}, which {library} made from trees you"
            " gave it (parameters, labels, a mask), so the cause is in one of those, not in"
            " how you took the gradient."
        )
    types = {type(left_node).__qualname__, type(right_node).__qualname__}
    wrapped = next((n for n in (left_node, right_node) if _is_nnx(n, "Variable")), None)
    root_array = (
        leaf_vs_node
        and not diff.keypath
        and any(
            _is_array_like(node) and name
            for node, name in ((left_node, left_name), (right_node, right_name))
        )
    )
    root_tuple = (
        diff.kind == "type"
        and not diff.keypath
        and any(
            isinstance(node, tuple) and name
            for node, name in ((left_node, left_name), (right_node, right_name))
        )
    )
    if left_node is None or right_node is None:
        fix = _NONE_FIX
    elif diff.kind == "type" and "FrozenDict" in types and types & {"dict", "FrozenDict"} == types:
        fix = _FROZEN_FIX
    elif wrapped is not None and leaf_vs_node:
        fix = _NNX_VARIABLE_FIX.format(cls=f"nnx.{type(wrapped).__name__}")
    elif (
        diff.kind == "type"
        and any(_is_nnx(n, "State") for n in (left_node, right_node))
        and (isinstance(left_node, dict) or isinstance(right_node, dict))
    ):
        fix = _NNX_STATE_FIX.format()
    elif root_array:
        array_side = left if _is_array_like(left_node) else right
        tree_side = right if array_side == left else left
        node = right_node if array_side == left else left_node
        explanation += (
            f" Where {tree_side} has {_kind_of(node)} of parameters, {array_side} has one"
            " array, so the function mapped over the leaves got a whole container as one"
            " operand."
        )
        fix = _WRONG_ARGUMENT_FIX
    elif root_tuple and isinstance(left_node, tuple) != isinstance(right_node, tuple):
        fix = _TUPLE_FIX
    elif diff.kind == "keys":
        fix = _KEYS_FIX
    else:
        fix = _OTHER_FIX
    return Explanation(explanation, fix)


# ---- Flax -----------------------------------------------------------------------------------

_NNX_TRACE_EXPLANATION = (
    "Flax NNX refused to change an NNX object ({what}) from inside a JAX transform: the object"
    " was created outside the transform (`f` closes over it, or reached it through"
    " `jax.jit`/`jax.grad`/`jax.vmap`), and writing a traced value into it would leak the"
    " tracer out of the trace. JAX's own transforms do not know about NNX state; Flax's do."
)
_NNX_TRACE_FIX = (
    "Pass the module (and optimizer) as arguments of the NNX transform, which carries their"
    " updates out: `nnx.jit(step)(model, optimizer, x)` (likewise `nnx.grad`,"
    " `nnx.value_and_grad`, `nnx.vmap`). To keep JAX's transform, pass the state instead:"
    " `graphdef, state = nnx.split(model)` outside, `model = nnx.merge(graphdef, state)` inside,"
    " and return `nnx.state(model)` with the result. `static_argnums` does not help: the object"
    " would still be changed from inside the trace."
)
_NNX_MERGE_FIX = (
    " If the object is made inside the transform by `nnx.merge(graphdef, state)`, merge a copy"
    " (`nnx.merge(..., copy=True)`; `copy=False` is the default since Flax 0.11.2 and reuses the"
    " Variables of the state, which live outside the trace)."
)
_LINEN_EXPLANATION = (
    "A Flax linen Module (`{name}`) was passed as an argument of a JAX transform. Linen modules"
    " are not pytrees, so JAX took the module for one array: it refused it, or traced it as a"
    " tracer that has none of the module's methods. A linen module holds no arrays: its"
    " parameters are the `params` you pass to `apply`."
)
_LINEN_FIX = (
    "Close over the module instead of passing it (`def f(params, x): return"
    " model.apply(params, x)`, or `jax.jit(model.apply)`), or mark that argument static"
    " (`static_argnums=(i,)`): a linen module is a frozen dataclass, hashable, so JAX keeps it"
    " as a Python constant (a module with other field values compiles again)."
)


def _is_flax_error(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] == "flax"


def _flax_frames(exc: BaseException) -> bool:
    return any("/flax/" in f.f_code.co_filename for f in _frames(exc.__traceback__))


def _is_linen(x: Any) -> bool:
    return any(
        c.__name__ == "Module" and c.__module__ == "flax.linen.module" for c in type(x).__mro__
    )


def _linen_module_in(exc: BaseException, f: object) -> Any:
    """The Flax linen ``Module`` instance JAX was handed as an argument: one among the locals
    (or one level inside a local tuple, list or dict) of the library frames of ``exc``'s
    traceback, else a global of the snippet (``f``'s module) whose class JAX's message names
    (JAX rejects an argument before ``f`` runs, and its frames are filtered out)."""
    for frame in _all_frames(exc):
        if frame.f_code.co_filename == SNIPPET_FILENAME:
            continue  # the snippet's own locals hold its modules whether passed or not
        for value in frame.f_locals.values():
            items = value.values() if isinstance(value, dict) else value
            candidates = items if isinstance(value, (tuple, list, dict)) else (value,)
            for x in candidates:
                if _is_linen(x):
                    return x
    for _ in range(8):  # through jax.jit and functools.wraps wrappers
        if hasattr(f, "__globals__") or not hasattr(f, "__wrapped__"):
            break
        f = getattr(f, "__wrapped__", None)
    message = str(exc)
    for value in dict(getattr(f, "__globals__", None) or {}).values():
        if _is_linen(value) and f"{type(value).__qualname__}'>" in message:
            return value
    return None


def flax_errors(exc: BaseException, ctx: ErrorContext) -> Explanation | None:
    """The explanation and fix of Flax NNX's trace-level errors and of a linen Module passed
    to a JAX transform as an argument; None for other errors."""
    message = str(exc)
    trace_level = re.search(r"Cannot mutate (\w+) from a different trace level", message)
    if trace_level is None and "Cannot extract graph node from different trace level" in message:
        trace_level = re.search(r"got (\w+)", message)
    if trace_level is not None and (_is_flax_error(exc) or _flax_frames(exc)):
        what = f"a `{trace_level.group(1)}`"
        fix = _NNX_TRACE_FIX
        if any(f.f_code.co_name == "merge" for f in _frames(exc.__traceback__)) or (
            trace_level.group(1).startswith("Rng")
        ):
            fix += _NNX_MERGE_FIX
        return Explanation(_NNX_TRACE_EXPLANATION.format(what=what), fix)
    if isinstance(exc, (TypeError, AttributeError)) and (
        "is not a valid JAX type" in message
        or "as an abstract array" in message
        or re.search(r"Tracer has no attribute", message)
    ):
        module = _linen_module_in(exc, ctx.f)
        if module is not None:
            explanation = _LINEN_EXPLANATION.format(name=type(module).__name__)
            if ctx.location_note:  # JAX refused the argument before f ran: say where we point
                explanation = f"{explanation} {ctx.location_note}"
            return Explanation(explanation, _LINEN_FIX)
    return None
