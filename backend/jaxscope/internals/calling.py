"""The calling convention every exhibit shares: split a snippet's arguments into static and
dynamic ones and build what JAX is called with.

A snippet gives ``f``, ``args``, ``kwargs``, ``static_argnums`` and ``static_argnames``. Static
arguments stay concrete Python values and are never traced:

* positional static arguments are passed to ``jax.make_jaxpr``/``jax.jit`` as ``static_argnums``
  (JAX closes over them itself: they vanish from the jaxpr's invars);
* keyword static arguments (those named in ``static_argnames``) are closed over with
  :func:`functools.partial` for ``make_jaxpr`` (which has no ``static_argnames``), and passed as
  ``static_argnames`` to ``jax.jit``;
* the remaining (dynamic) keyword arguments are passed as keyword arguments, so JAX traces them
  as invars exactly as ``jax.jit(f)(*args, **kwargs)`` does.

So ``str(jax.make_jaxpr(plan.fun, static_argnums=plan.static_argnums)(*plan.args,
**plan.kwargs))`` is the jaxpr that ``jax.jit(f, static_argnums, static_argnames)`` traces.

``jax.ShapeDtypeStruct`` arguments can be traced, lowered and compiled, but not executed: to run a
program, :func:`concrete_args` replaces them with zeros of that shape and dtype (``jnp.zeros``).

This module uses public JAX, plus ``source_info_util.register_exclusion`` (it is on the stack
while JAX traces, and must not be taken for the user's code).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import source_info_util
from jax._src import util as jax_util

from jaxscope.snippet_model import Snippet

source_info_util.register_exclusion(__file__)

# The file name a "call again" expression (``CallPlan.vary``, ``change="expr"``) is compiled under.
TYPED_FILENAME = "<typed arguments>"


@dataclass(frozen=True)
class CallPlan:
    """How to call JAX on a snippet.

    ``fun`` is ``f`` with the static keyword arguments closed over (``f`` itself when there are
    none); ``args`` all positional arguments (the static ones included, at ``static_argnums``);
    ``kwargs`` the dynamic keyword arguments; ``static_kwargs`` the closed-over ones.
    """

    f: Callable[..., Any]
    fun: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    static_kwargs: dict[str, Any] = field(default_factory=dict)
    static_argnums: tuple[int, ...] = ()
    static_argnames: tuple[str, ...] = ()

    @property
    def fun_name(self) -> str:
        """The traced function's name as JAX names it (``jax._src.util.fun_name``: ``__name__``,
        that of the wrapped function for a ``functools.partial``); it is the ``fun_name`` of
        JAX's monitoring events and of the ``jit(...)`` name stack."""
        return str(jax_util.fun_name(self.f))

    def normalized_argnums(self) -> tuple[int, ...]:
        """``static_argnums`` with negative indices resolved against ``len(args)``."""
        n = len(self.args)
        return tuple(sorted({i + n if i < 0 else i for i in self.static_argnums}))

    def dynamic_args(self, args: tuple[Any, ...] | None = None) -> tuple[Any, ...]:
        """The positional arguments that are traced (static positions removed)."""
        argv = self.args if args is None else args
        static = set(self.normalized_argnums())
        return tuple(a for i, a in enumerate(argv) if i not in static)

    def make_jaxpr(self, args: tuple[Any, ...] | None = None) -> Any:
        """``jax.make_jaxpr(fun, static_argnums)(*args, **kwargs)``: a ``ClosedJaxpr``."""
        argv = self.args if args is None else args
        return jax.make_jaxpr(self.fun, static_argnums=self.static_argnums)(*argv, **self.kwargs)

    def jit(self) -> Any:
        """``jax.jit(f, static_argnums=..., static_argnames=...)`` (called with
        ``*args, **kwargs, **static_kwargs``, see :meth:`call`)."""
        return jax.jit(
            self.f, static_argnums=self.static_argnums, static_argnames=self.static_argnames
        )

    def call(
        self,
        jitted: Callable[..., Any],
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        """Call a jitted ``f`` the way the snippet asks: all arguments, static ones included
        (``args``/``kwargs`` default to the snippet's; ``kwargs`` are the dynamic ones)."""
        argv = self.args if args is None else args
        kw = self.kwargs if kwargs is None else kwargs
        return jitted(*argv, **kw, **self.static_kwargs)

    def dynamic_avals(
        self, args: tuple[Any, ...] | None = None, kwargs: dict[str, Any] | None = None
    ) -> list[Any]:
        """``jax.typeof`` of each leaf of the traced arguments (dynamic positional arguments,
        then dynamic keyword arguments), in ``jax.tree.leaves`` order."""
        kw = self.kwargs if kwargs is None else kwargs
        leaves = jax.tree.leaves((self.dynamic_args(args), kw))
        return [jax.typeof(leaf) for leaf in leaves]

    def vary(
        self, change: str, expr: str | None, namespace: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The ``(args, kwargs)`` of one "call again" (see :class:`jaxscope.protocol.CallSpec`).

        ``same``: the snippet's arguments. ``shape``: the traced (dynamic) arguments that are
        arrays themselves (the data: a batch, a sequence) grow by one along axis 0 (their last
        row repeated; zeros when empty), while pytree arguments (parameters, optimizer state)
        keep their shapes, so that ``x @ params["w"]`` still type-checks; when no argument is a
        bare array, every array leaf grows instead. 0-d arrays and Python ``int``/``float``
        scalars become shape ``(1,)``; PRNG key arrays are kept (a key is not data to grow).
        ``dtype``: floating leaves
        (Python floats included) become ``float16``, signed and unsigned integer leaves (Python
        ints included) ``int16``; bool and complex leaves are kept. ``expr``: ``eval(expr,
        namespace)``, which must give the full positional ``args`` tuple (static positions
        included); keyword arguments stay the snippet's. Static arguments never change.
        ``jax.ShapeDtypeStruct`` leaves are made concrete first (:func:`concrete_args`).
        Raises ``TypeError`` when ``expr`` does not give a tuple or list.
        """
        if change == "expr":
            if not expr:
                raise TypeError("a call with change='expr' needs an expression giving args")
            # The user's own expression, in the sandbox; compiled under a name that says where
            # it comes from (a SyntaxError's text reads "(<typed arguments>, line 1)").
            value = eval(compile(expr, TYPED_FILENAME, "eval", dont_inherit=True), namespace)
            if isinstance(value, list):
                value = tuple(value)
            if not isinstance(value, tuple):
                raise TypeError(
                    f"the call expression {expr!r} must give a tuple of arguments, "
                    f"got {type(value).__name__}"
                )
            return concrete_args(value), dict(self.kwargs)
        args = concrete_args(self.args)
        kwargs = dict(self.kwargs)
        if change == "same":
            return args, kwargs
        leaf_fn = {"shape": _grow_leaf, "dtype": _narrow_leaf}.get(change)
        if leaf_fn is None:
            raise ValueError(f"unknown call change {change!r}")
        static = set(self.normalized_argnums())
        if change == "shape":
            bare = [i for i, a in enumerate(args) if i not in static and _is_bare_array(a)] + [
                k for k, v in kwargs.items() if _is_bare_array(v)
            ]
            if bare:
                new_args = tuple(leaf_fn(a) if i in bare else a for i, a in enumerate(args))
                return new_args, {k: leaf_fn(v) if k in bare else v for k, v in kwargs.items()}
        new_args = tuple(a if i in static else jax.tree.map(leaf_fn, a) for i, a in enumerate(args))
        return new_args, jax.tree.map(leaf_fn, kwargs)


def block_until_ready(value: Any) -> Any:
    """``jax.block_until_ready(value)``: wait until every array in ``value`` is computed."""
    return jax.block_until_ready(value)


def plan_call(snippet: Snippet) -> CallPlan:
    """Split ``snippet``'s keyword arguments into static ones (named in ``static_argnames``) and
    dynamic ones, and close ``f`` over the static ones."""
    static_kwargs = {k: v for k, v in snippet.kwargs.items() if k in snippet.static_argnames}
    kwargs = {k: v for k, v in snippet.kwargs.items() if k not in snippet.static_argnames}
    fun = functools.partial(snippet.f, **static_kwargs) if static_kwargs else snippet.f
    return CallPlan(
        f=snippet.f,
        fun=fun,
        args=tuple(snippet.args),
        kwargs=kwargs,
        static_kwargs=static_kwargs,
        static_argnums=tuple(snippet.static_argnums),
        static_argnames=tuple(snippet.static_argnames),
    )


def _is_py_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_key(x: Any) -> bool:
    dtype = getattr(x, "dtype", None)
    return dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key)


def _is_bare_array(x: Any) -> bool:
    """An argument that is one array (not a pytree of them, not a PRNG key)."""
    return hasattr(x, "shape") and hasattr(x, "dtype") and not _is_key(x)


def _grow_leaf(x: Any) -> Any:
    """Axis 0 one longer (last row repeated); 0-d arrays and Python numbers become (1,)."""
    if _is_py_number(x):
        return np.asarray([x])
    if not hasattr(x, "shape") or not hasattr(x, "dtype") or _is_key(x):
        return x
    xp: Any = jnp if isinstance(x, jax.Array) else np
    if x.ndim == 0:
        return xp.reshape(x, (1,))
    if x.shape[0] == 0:
        return xp.zeros((1, *x.shape[1:]), x.dtype)
    return xp.concatenate([x, x[-1:]], axis=0)


def _narrow_leaf(x: Any) -> Any:
    """Floating -> float16, integer -> int16 (other dtypes kept)."""
    if isinstance(x, bool):
        return x
    if isinstance(x, float):
        return np.float16(x)
    if isinstance(x, int):
        return np.int16(x)
    dtype = getattr(x, "dtype", None)
    if dtype is None or not hasattr(x, "astype"):
        return x
    if jnp.issubdtype(dtype, jnp.floating):
        return x.astype(np.float16)
    if jnp.issubdtype(dtype, jnp.integer):
        return x.astype(np.int16)
    return x


def _concrete_leaf(x: Any) -> Any:
    if isinstance(x, jax.ShapeDtypeStruct):
        return jnp.zeros(x.shape, x.dtype)
    return x


def placeholder_paths(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
    """Key paths (``args[0]``, ``kwargs['w']``) of the ``jax.ShapeDtypeStruct`` leaves, which
    :func:`concrete_args` replaces with zeros."""

    def is_sds(x: Any) -> bool:
        return isinstance(x, jax.ShapeDtypeStruct)

    paths: list[str] = []
    for name, tree in (("args", args), ("kwargs", kwargs)):
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_sds)[0]:
            if is_sds(leaf):
                paths.append(name + jax.tree_util.keystr(path))
    return paths


def concrete_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` with every ``jax.ShapeDtypeStruct`` leaf replaced by ``jnp.zeros`` of its shape
    and dtype (a program can only run on concrete values)."""
    out = jax.tree.map(_concrete_leaf, args)
    return tuple(out)
