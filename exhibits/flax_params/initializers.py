"""Name a parameter's initializer the way a user reaches it: ``jax.nn.initializers.lecun_normal()``
rather than ``variance_scaling.<locals>.init``.

Flax's initializers are JAX's (``flax.linen.initializers`` re-exports ``jax.nn.initializers``):
a plain one (``zeros``) is a public attribute of that module; a configured one is the closure a
public factory returned (``lecun_normal()`` returns ``variance_scaling``'s inner ``init`` with
``scale=1.0, mode='fan_in', distribution='truncated_normal'`` in its cells). This module finds
the factory whose call with no arguments gives a closure of the same code and the same cell
values; a closure no default call matches is written as its factory with its cells as keywords.
Only Python introspection of public functions.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np
from jaxscope.exhibit_api import SNIPPET_FILENAME

PUBLIC = "jax.nn.initializers"


def _cells(fn: Any) -> dict[str, Any]:
    code = getattr(fn, "__code__", None)
    closure = getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    return {name: cell.cell_contents for name, cell in zip(code.co_freevars, closure, strict=False)}


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b))) and type(a) is type(b)
    except Exception:
        return a is b


@functools.cache
def _factory_defaults() -> list[tuple[str, Any, dict[str, Any]]]:
    """``(name, code, cells)`` of each public factory callable with no arguments, under its
    canonical name (``he_normal``, not its alias ``kaiming_normal``)."""
    out = []
    module = jax.nn.initializers
    for name in sorted(dir(module)):
        factory = getattr(module, name)
        if name.startswith("_") or getattr(factory, "__name__", None) != name:
            continue
        try:
            made = factory()
        except Exception:  # needs arguments (constant), or is no factory (zeros needs a key)
            continue
        code = getattr(made, "__code__", None)
        if code is not None and callable(made):
            out.append((name, code, _cells(made)))
    return out


def _value_text(value: Any) -> str:
    return repr(value.item()) if isinstance(value, np.generic) else repr(value)


def describe(fn: Any) -> str:
    """The initializer ``fn`` as the user would write it."""
    if isinstance(fn, functools.partial):
        args = [describe(fn.func), *map(repr, fn.args)]
        args += [f"{k}={v!r}" for k, v in fn.keywords.items()]
        return f"functools.partial({', '.join(args)})"
    name = getattr(fn, "__name__", None)
    module = jax.nn.initializers
    if name is not None and getattr(module, name, None) is fn:
        return f"{PUBLIC}.{name}"
    code = getattr(fn, "__code__", None)
    if code is not None:
        if code.co_filename == SNIPPET_FILENAME:
            return f"{name} (line {code.co_firstlineno})"
        cells = _cells(fn)
        for factory, factory_code, default_cells in _factory_defaults():
            if factory_code is code and cells.keys() == default_cells.keys():
                if all(_same(cells[k], default_cells[k]) for k in cells):
                    return f"{PUBLIC}.{factory}()"
        qualname = getattr(fn, "__qualname__", "")
        outer = qualname.split(".<locals>.")[0]
        if ".<locals>." in qualname and callable(getattr(module, outer, None)):
            kw = ", ".join(f"{k}={_value_text(v)}" for k, v in sorted(cells.items()))
            return f"{PUBLIC}.{outer}({kw})"
    qualname = getattr(fn, "__qualname__", None) or type(fn).__name__
    return f"{getattr(fn, '__module__', '?')}.{qualname}"
