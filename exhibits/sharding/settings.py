"""Reading the sharding and shard_map exhibits' settings (the snippet's ``mesh``/``spec``/
``in_specs``/``check_vma``, ``args[0]``) and options (``options.mesh``/``spec``/``array_shape``).

A bad setting or option is the snippet's fault, not ``f``'s: each is raised as
:class:`InvalidSnippet` naming the option or snippet variable at fault, and, for a snippet
variable, marked (:func:`blame_line`) with the line that sets it, so the run fails as
``invalid_snippet`` at that line instead of "JAX raised this while handling f".
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, PartitionSpec
from jaxscope.exhibit_api import InvalidSnippet, Snippet, blame_line, setting_line
from jaxscope.exhibit_api import eval_option as eval_option


def invalid(snippet: Snippet, name: str, message: str) -> BaseException:
    """:class:`InvalidSnippet` ``message`` blamed on the line that sets ``name`` (a snippet
    variable); for an option (``options.x``) no line: the option is not in the snippet."""
    line = None if name.startswith("options.") else setting_line(snippet.source, name)
    return blame_line(InvalidSnippet(message), line)


def check_mesh(snippet: Snippet, value: Any, name: str) -> Mesh:
    """``value`` as a concrete ``jax.sharding.Mesh`` with distinct axis names, else
    :class:`InvalidSnippet` naming ``name`` (``mesh`` or ``options.mesh``)."""
    if value is None:  # no line to point at: the snippet has no mesh
        raise InvalidSnippet(
            "this exhibit needs a `mesh`: define one in the snippet, e.g. "
            "mesh = jax.make_mesh((2, 4), ('x', 'y'))"
        )
    if isinstance(value, jax.sharding.AbstractMesh):
        raise invalid(
            snippet,
            name,
            f"`{name}` is an AbstractMesh (axis sizes without devices): this exhibit places "
            "arrays on devices, so it needs a concrete jax.sharding.Mesh (jax.make_mesh(...))",
        )
    if not isinstance(value, Mesh):
        raise invalid(
            snippet,
            name,
            f"`{name}` must be a jax.sharding.Mesh (e.g. jax.make_mesh((2, 4), ('x', 'y'))), "
            f"got {type(value).__name__} {value!r:.80}",
        )
    names = [str(a) for a in value.axis_names]
    repeated = sorted({a for a in names if names.count(a) > 1})
    if repeated:
        raise invalid(
            snippet,
            name,
            f"`{name}` names mesh axis {', '.join(repr(a) for a in repeated)} more than once "
            f"(axis names {tuple(names)}): each axis of a mesh needs its own name",
        )
    return value


def check_spec(snippet: Snippet, value: Any, name: str) -> PartitionSpec:
    """``value`` as a ``PartitionSpec`` (``None``: ``P()``; a tuple/list or a str: its
    entries), else :class:`InvalidSnippet` naming ``name``."""
    if value is None:
        return PartitionSpec()  # type: ignore[no-untyped-call]
    if isinstance(value, PartitionSpec):
        return value
    entries = tuple(value) if isinstance(value, tuple | list) else (value,)
    for e in entries:
        parts = e if isinstance(e, tuple) else (e,)
        if not all(p is None or isinstance(p, str) for p in parts):
            raise invalid(
                snippet,
                name,
                f"`{name}` must be a jax.sharding.PartitionSpec such as P('x', None) "
                f"(entries: a mesh axis name, a tuple of names, or None), got {value!r:.80}",
            )
    return PartitionSpec(*entries)  # type: ignore[no-untyped-call]


def check_array_shape(value: Any) -> tuple[int, ...]:
    """``options.array_shape`` as a tuple of non-negative ints (an int: a 1-D shape), else
    :class:`InvalidSnippet` (no silent ``int()`` of a float, a negative size or a string)."""
    dims = (value,) if isinstance(value, int) else value
    if not isinstance(dims, tuple | list) or not all(
        isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= 0 for d in dims
    ):
        raise InvalidSnippet(
            f"options.array_shape must be a tuple of non-negative ints such as (8, 16), "
            f"got {value!r:.80}"
        )
    return tuple(int(d) for d in dims)


def check_first_arg(
    snippet: Snippet, args: tuple[Any, ...], static_argnums: tuple[int, ...]
) -> Any:
    """``args[0]``, the array the exhibit places: it must be one array (not a pytree of them,
    not a Python number: JAX asserts on ``3`` placed with ``P('x')`` on an explicit mesh, not a
    static argument), else :class:`InvalidSnippet` at the ``args`` line."""
    if not args:
        raise invalid(snippet, "args", "this exhibit places args[0]: `args` is empty")
    if 0 in static_argnums:
        raise invalid(
            snippet,
            "static_argnums",
            "this exhibit places args[0] on the mesh, so it cannot be static: take 0 out of "
            "static_argnums",
        )
    first = args[0]
    if isinstance(first, jax.Array | np.ndarray | np.generic):
        return first
    raise invalid(
        snippet,
        "args",
        "this exhibit places args[0] with jax.device_put(args[0], NamedSharding(mesh, spec)): "
        f"it must be one array, got {type(first).__name__} (a pytree of arrays, a Python "
        "number or object has no array shape to shard)",
    )


def check_flag(snippet: Snippet, value: Any, name: str) -> bool:
    """A bool setting (``check_vma``): only ``True``/``False`` (``'no'`` is not False)."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise invalid(snippet, name, f"`{name}` must be True or False, got {value!r:.80}")


def check_spec_tree(snippet: Snippet, value: Any, name: str) -> Any:
    """``in_specs``/``out_specs``: a ``PartitionSpec`` or a pytree (tuple, list, dict) of them
    (``None`` leaves allowed), else :class:`InvalidSnippet` naming ``name``."""
    leaves = jax.tree.leaves(value, is_leaf=lambda x: x is None or isinstance(x, PartitionSpec))
    bad = [leaf for leaf in leaves if leaf is not None and not isinstance(leaf, PartitionSpec)]
    if bad or (not leaves and value != () and value != []):
        shown = bad[0] if bad else value
        raise invalid(
            snippet,
            name,
            f"`{name}` must be a PartitionSpec or a tuple of them, one per argument "
            f"(e.g. (P('x', None),)), got {type(shown).__name__} {shown!r:.80}",
        )
    return value
