"""Every ``jax.config`` option, read from JAX's own config objects (``jax/_src/config.py``).

* ``jax.config._value_holders`` (name -> holder): a :class:`jax._src.config.State` can be scoped
  with a context manager (``with jax.enable_x64(True):``; the holder is callable and returns a
  ``StateContextManager``), a :class:`jax._src.config.Flag` is set once (``jax.config.update``,
  an environment variable or a command-line flag) and has no context manager.
* ``jax.config.meta[name] = (opt_type, args, kwargs)``: the option's Python type and, in
  ``kwargs['help']``, its help text (the holders keep no help attribute of their own).
* ``jax._src.config.trace_context_names()``: the entries of ``config.trace_context()`` (the
  options JAX puts in every tracing and jit cache key, plus context managers such as the mesh):
  changing one of these forces a retrace.
* Current value: ``holder.value`` (the thread-local value when a context manager is active).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jax
from jax._src import config as jax_config


@dataclass(frozen=True)
class OptionInfo:
    """One option: its name, current value, kind (``State``/``Flag``), Python type, help."""

    name: str
    value: Any
    kind: str
    option_type: str
    scoped: bool
    trace_context: bool
    help: str


def trace_context_names() -> tuple[str, ...]:
    """``config.trace_context_names()``: what the tracing context (``config.trace_context()``)
    is made of, in JAX's order."""
    return tuple(jax_config.trace_context_names())


def holders() -> dict[str, Any]:
    """``jax.config._value_holders``: option name -> State or Flag holder."""
    return dict(jax.config._value_holders)


def _type_name(name: str) -> str:
    meta = jax.config.meta.get(name)
    if not meta:
        return ""
    t = meta[0]
    return getattr(t, "__name__", str(t))


def _help(name: str) -> str:
    meta = jax.config.meta.get(name)
    if not meta:
        return ""
    kwargs = meta[2] if len(meta) > 2 else {}
    text = kwargs.get("help", "") if isinstance(kwargs, dict) else ""
    return " ".join(str(text).split())


def options() -> list[OptionInfo]:
    """Every option, sorted by name."""
    in_context = set(trace_context_names())
    out: list[OptionInfo] = []
    for name, holder in sorted(holders().items()):
        is_state = isinstance(holder, jax_config.State)
        out.append(
            OptionInfo(
                name=name,
                value=holder.value,
                kind=type(holder).__name__,
                option_type=_type_name(name),
                scoped=is_state,
                trace_context=name in in_context,
                help=_help(name),
            )
        )
    return out


def scoped(name: str, value: Any) -> contextlib.AbstractContextManager[None]:
    """``with <State holder>(value):`` for option ``name`` (a ``StateContextManager``)."""
    holder = jax.config._value_holders[name]
    if not isinstance(holder, jax_config.State):
        raise TypeError(f"{name} is a Flag: it has no context manager")
    cm: contextlib.AbstractContextManager[None] = holder(value)
    return cm


@contextlib.contextmanager
def flipped(name: str, value: Any) -> Iterator[None]:
    """Option ``name`` set to ``value`` for the block: the context manager for a State, else
    ``jax.config.update`` and back."""
    holder = jax.config._value_holders[name]
    if isinstance(holder, jax_config.State):
        with holder(value):
            yield
        return
    saved = holder.value
    jax.config.update(name, value)
    try:
        yield
    finally:
        jax.config.update(name, saved)
