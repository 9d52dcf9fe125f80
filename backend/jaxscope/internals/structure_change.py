"""What changed between two input pytree structures that made a ``jit`` cache miss, down to the
object: JAX's own explanation first (``tree_util.equality_errors_pytreedef``, what
``jax.explain_cache_misses`` prints: the input path and "the pytree node metadata does not
match"), then, inside the node metadata that differs, the first part that is not equal (a Flax NNX
``GraphDef``'s static attribute, a field of an optax ``GradientTransformation``, a function).

Why it matters: static parts of a pytree (a ``GraphDef``'s ``Static`` attributes, a custom
node's aux data) are compared by equality, and an object that does not define ``__eq__`` equals
only itself. Rebuilding it (``optax.adam(1e-3)`` each epoch, whose ``init``/``update`` are new
closures) gives a key that prints the same but never matches, so JAX traces and compiles again.
"""

from __future__ import annotations

import dataclasses
import re
import types
from dataclasses import dataclass
from typing import Any

from jax._src import tree_util

# How deep the search inside node metadata goes (GraphDef -> attributes -> Static -> namedtuple
# -> function is five).
MAX_DEPTH = 12
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


@dataclass(frozen=True)
class StructureChange:
    """One structural difference of an argument between two calls.

    ``path``: the argument's name plus JAX's key path of the node (``optimizer._graphdef``);
    ``jax_reason``: JAX's words (``the pytree node metadata does not match``); ``inside``: where
    in the node's metadata the first unequal part is (``attribute 'tx' .init``), empty when the
    node's type or children differ; ``owner``: the type name of the object that holds the
    unequal part closest to the user (``GradientTransformationExtraArgs``) or None;
    ``owner_module``: its top-level module (``optax``); ``prints_same``: the two parts print the
    same once addresses are left out (so only identity tells them apart); ``detail``: what the
    unequal part is (a new function object, and where it is defined)."""

    path: str
    jax_reason: str
    inside: str
    owner: str | None
    owner_module: str | None
    prints_same: bool
    detail: str

    def text(self) -> str:
        """The cause in one sentence."""
        head = f"at input path {self.path}, {self.jax_reason} (JAX's explanation)"
        if not self.inside:
            return head
        what = f", part of a {self.owner}" if self.owner else ""
        if self.owner_module and self.owner:
            what += f" (from {self.owner_module})"
        same = (
            " is not equal to the cached one although it prints the same"
            if self.prints_same
            else " differs from the cached one"
        )
        return f"{head}: its {self.inside}{what}{same}: {self.detail}"

    def fix(self) -> str:
        """What to change so that the next call finds the cached entry."""
        thing = f"the {self.owner}" if self.owner else "that object"
        if not self.prints_same:
            return (
                f"a static value changed ({self.inside}): each value compiles its own program. "
                "Keep it fixed across calls, or make it a traced value (an array argument, or "
                "an nnx.Variable in a module) so that one program serves every value"
            )
        if self.owner_module == "optax":
            return (
                "build the optax transformation once, outside the loop (tx = optax.adam(...)), "
                "and pass that same object each time (nnx.Optimizer(model, tx, wrt=...)), or keep "
                "the optimizer across epochs: JAX compares this static part by equality, and a "
                "rebuilt transformation equals only itself"
            )
        return (
            f"make {thing} once, outside the loop, and pass that same object each call (or give "
            "its class __eq__ and __hash__ by value): JAX compares static parts of the input "
            "structure by equality, and this one equals only itself"
        )


def _printed(x: Any) -> str:
    try:
        return _ADDRESS.sub("", repr(x))
    except Exception:
        return f"<{type(x).__name__}>"


def _unequal(a: Any, b: Any) -> bool:
    try:
        return bool(a != b)
    except Exception:  # an array inside metadata: ambiguous truth value
        return a is not b


def _parts(x: Any) -> list[tuple[str, Any]] | None:
    """Named parts of a container to search inside, or None for an opaque object."""
    if isinstance(x, type):
        return None
    if dataclasses.is_dataclass(x):
        return [(f".{f.name}", getattr(x, f.name, None)) for f in dataclasses.fields(x)]
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return [(f".{name}", getattr(x, name)) for name in x._fields]
    if isinstance(x, (list, tuple)):
        out: list[tuple[str, Any]] = []
        for i, v in enumerate(x):
            # A GraphDef's attributes are (name, value) pairs: name them by the attribute.
            if (
                isinstance(v, tuple)
                and len(v) == 2
                and isinstance(v[0], (str, int))
                and not hasattr(v, "_fields")
            ):
                out.append((f" attribute {v[0]!r}", v[1]))
            else:
                out.append((f"[{i}]", v))
        return out
    if isinstance(x, dict):
        return [(f"[{k!r}]", v) for k, v in x.items()]
    return None


def _module_of(x: Any) -> str | None:
    module = getattr(type(x), "__module__", None)
    return None if module is None else module.split(".")[0]


def _first_unequal(a: Any, b: Any, label: str, owner: Any, depth: int) -> tuple[str, Any, Any, Any]:
    """``(where, a_part, b_part, owner)``: the first unequal part of ``a`` against ``b``.
    ``owner`` is the innermost object along the way that is neither a container nor part of
    JAX/Flax's own bookkeeping (the user-level object that holds the part)."""
    if depth >= MAX_DEPTH or type(a) is not type(b):
        return label, a, b, owner
    pa, pb = _parts(a), _parts(b)
    if pa is None or pb is None or len(pa) != len(pb):
        return label, a, b, owner
    for (name_a, va), (name_b, vb) in zip(pa, pb, strict=True):
        if name_a != name_b:
            return label, a, b, owner
        if _unequal(va, vb):
            # The user-level holder: an object with parts of its own that neither Python's
            # containers nor JAX's or Flax's bookkeeping made.
            library_made = _module_of(va) in (None, "builtins", "flax", "jax", "jaxlib")
            inner_owner = va if _parts(va) is not None and not library_made else owner
            return _first_unequal(va, vb, label + name_a, inner_owner, depth + 1)
    return label, a, b, owner


def _detail(a: Any, b: Any) -> str:
    if isinstance(a, types.FunctionType) and isinstance(b, types.FunctionType):
        code = a.__code__
        same_code = code is b.__code__
        filename = code.co_filename.split("site-packages/")[-1]
        where = f"{filename}:{code.co_firstlineno}"
        return (
            f"a new function object {a.__qualname__} (defined at {where}"
            + (", the same code" if same_code else "")
            + "), and functions compare by identity: whatever made it ran again"
        )
    pa, pb = _printed(a), _printed(b)
    if pa == pb:
        return (
            f"a new {type(a).__name__} object ({pa[:160]}) that equals only itself "
            "(its class compares by identity)"
        )
    return f"now {pa[:200]}, before {pb[:200]}"


def _walk(now: Any, before: Any) -> tuple[Any, Any, Any] | None:
    """The metadata (now, before) and the type of the first node (depth first, as JAX's
    explanation) whose own metadata differs; None when the first difference is a type or a
    child count (JAX says which)."""
    nd, bd = now.node_data(), before.node_data()
    if nd is None or bd is None:
        return None
    if nd[0] is not bd[0]:
        return None
    nc, bc = now.children(), before.children()
    if len(nc) != len(bc):
        return None
    if _unequal(nd[1], bd[1]):
        return nd[1], bd[1], nd[0]
    for c1, c2 in zip(nc, bc, strict=True):
        if c1 != c2:
            return _walk(c1, c2)
    return None


def structure_change(name: str, now: Any, before: Any) -> StructureChange | None:
    """How argument ``name``'s pytree structure ``now`` differs from ``before`` (both
    ``PyTreeDef``), or None when they are equal."""
    if now == before:
        return None
    try:
        errors = list(tree_util.equality_errors_pytreedef(now, before))
    except Exception:
        errors = []
    if errors:
        path, _, _, reason = errors[0]
        where = name + tree_util.keystr(tuple(path))
    else:
        where, reason = name, "the structures differ"
    meta = _walk(now, before)
    # A built-in container's metadata is its keys (a dict with a key added or renamed): JAX's
    # words and the two structures say it; there is no object inside to name.
    plain = meta is not None and isinstance(meta[2], type) and issubclass(meta[2], (dict, tuple))
    if meta is None or plain:
        return StructureChange(
            path=where,
            jax_reason=str(reason),
            inside="",
            owner=None,
            owner_module=None,
            prints_same=False,
            detail="",
        )
    label, a, b, owner = _first_unequal(meta[0], meta[1], "", None, 0)
    kind = type(meta[0]).__name__
    # A GraphDef's static attribute reads as the attribute, not as its bookkeeping fields.
    label = label.replace(".attributes attribute ", " attribute ").replace(".value", "", 1)
    inside = f"{kind}{label}" if label else kind
    return StructureChange(
        path=where,
        jax_reason=str(reason),
        inside=inside,
        owner=type(owner).__name__ if owner is not None else None,
        owner_module=_module_of(owner) if owner is not None else None,
        prints_same=_printed(a) == _printed(b),
        detail=_detail(a, b),
    )
