"""The truth of "a call that fails in plain JAX fails in the exhibit" (issue 33, classes 7 and
10): a snippet run as a plain script in a fresh Python, one expression evaluated on its names
(``f(*args, **kwargs)``, or the plain transform an exhibit stands on, such as
``jax.vmap(f, in_axes=in_axes)(*args)``), and what came of it: the value's leaves, or the class,
text and snippet line of what it raised. The tests compare an exhibit's run with it."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

# The script: the snippet executed as a user's file, the expression evaluated on its names
# (``jax`` and an empty ``kwargs`` when the snippet has none), waited for, the outcome as JSON.
_PLAIN = """
import json, runpy, sys, traceback
import jax
import numpy as np
path, exprs = sys.argv[1], json.loads(sys.argv[2])
ns = runpy.run_path(path, run_name="snippet")
for expr in exprs:
    try:
        out = eval(expr, {"jax": jax, "kwargs": {}, **ns})
        leaves = [np.asarray(x).tolist() for x in jax.tree.leaves(out)]
        print(json.dumps({"ok": True, "leaves": leaves}))
    except Exception as exc:
        tb = traceback.extract_tb(exc.__traceback__)
        lines = [fr.lineno for fr in tb if fr.filename == path]
        print(json.dumps({"ok": False, "error_class": type(exc).__name__, "message": str(exc),
                          "line": lines[-1] if lines else None}))
"""

PLAIN_CALL = "f(*args, **kwargs)"


@functools.cache
def plain_outcomes(path: Path, exprs: tuple[str, ...] = (PLAIN_CALL,)) -> list[dict[str, Any]]:
    """Each of ``exprs`` evaluated, in order, on the snippet at ``path`` in one fresh ``python``
    (this venv's; a later expression sees what an earlier one did, as a script would): ``{"ok":
    True, "leaves": [...]}`` or ``{"ok": False, "error_class", "message", "line"}`` (``line``:
    the snippet's deepest line on the traceback, ``None`` when JAX raised outside it). Cached:
    one process per file and expressions in a test session."""
    proc = subprocess.run(
        [sys.executable, "-c", _PLAIN, str(path), json.dumps(list(exprs))],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    found = [json.loads(line) for line in proc.stdout.strip().splitlines()[-len(exprs) :]]
    assert len(found) == len(exprs), proc.stdout
    return found


def plain_outcome(path: Path, expr: str = PLAIN_CALL) -> dict[str, Any]:
    """:func:`plain_outcomes` of one expression."""
    return plain_outcomes(path, (expr,))[0]
