"""The only part of jaxscope that imports private JAX (``jax._src``, ``jax.interpreters``,
``jax.extend``); every module here returns protocol models or plain typed values.

Importing this package tells JAX that jaxscope's own code is not the user's: JAX attributes each
eqn, each StableHLO location and each compiled program's stack-frame table to the "user frames"
on the Python stack (``source_info_util.is_user_filename``: any file outside JAX and the
standard library). The sandbox runner, the probes and these modules sit on that stack while the
snippet is traced, so the ``jaxscope`` package folder and the ``exhibits`` folder are registered
with ``source_info_util.register_exclusion`` (a path prefix). Snippets run under the file name
``<snippet>`` and stay user code.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from jax._src import source_info_util


def _exclusion_roots() -> list[str]:
    roots = {Path(__file__).resolve().parent.parent}  # .../jaxscope
    spec = importlib.util.find_spec("exhibits")  # locates the folder without importing it
    if spec is not None and spec.submodule_search_locations:
        roots.update(Path(p).resolve() for p in spec.submodule_search_locations)
    out: list[str] = []
    for root in sorted(roots):
        for path in {str(root), os.path.realpath(root)}:
            out.append(path + os.sep)
    return out


EXCLUDED_ROOTS = _exclusion_roots()
for _root in EXCLUDED_ROOTS:
    source_info_util.register_exclusion(_root)
