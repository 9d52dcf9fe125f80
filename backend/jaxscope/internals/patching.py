"""Replace attributes of JAX's classes and modules for a ``with`` block, the originals put back on
exit (also when the block raises).

``internals/`` watches JAX by wrapping its own functions and methods while a snippet is traced
(``JaxprStackFrame.add_eqn``, ``BatchTrace.process_primitive``, ``pjit._infer_params_cached``,
...). The wrappers take JAX's arguments as ``Any`` and some replace a ``weakref_lru_cache``d
function or a class, so an assignment ``pe.JaxprStackFrame.add_eqn = add_eqn`` is rejected by
mypy (``method-assign``, ``assignment``, "cannot assign to a type") although it is what is meant.
:func:`patched` sets them with ``setattr`` instead, in one place. The lock that serialises the
patches of one owner stays with the caller (``recording.PATCH_LOCK`` and the others), which
enters :func:`patched` once it holds the lock: the originals are read then, so two threads
never restore each other's wrappers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def patched(owner: object, **replacements: object) -> Iterator[None]:
    """Within the block, ``owner.<name>`` is ``replacements[name]`` for each name; on exit each
    is set back to the value it had on entry."""
    originals = {name: getattr(owner, name) for name in replacements}
    try:
        for name, value in replacements.items():
            setattr(owner, name, value)
        yield
    finally:
        for name, value in originals.items():
            setattr(owner, name, value)
