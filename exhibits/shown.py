"""Errors JAX raised on the user's code that a *finished* run shows as its artefact.

Some exhibits teach with JAX's own error: control_flow shows the carry check JAX failed,
transform_order the stack JAX rejected, custom_vjp the gradient JAX refused, shard_map the
check that failed, transpose a ``jax.jit(jax.grad(f))`` that fails where eager ``jax.grad``
works, partial_eval a ``jax.grad`` that refuses reverse mode. The run then *finishes* (the error
is the lesson, on the page), but ``jaxscope run`` must still tell a script "JAX rejected your
code" from "all fine": an exhibit's ``artefacts.py`` defines ``SHOWN_ERRORS(events)``, the
errors of that kind in the run, and the CLI exits 3 with one stderr line per error
(``docs/design/0002-protocol-choices.md``). Imports only the protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from jaxscope.exhibit_api import EventBase


@dataclass(frozen=True)
class ShownError:
    """One error JAX raised on the user's code, as the finished run shows it.

    ``computation``: what JAX was asked to do (``jax.jit(jax.grad(f))``, ``the scan body carry
    check``); ``line``: the snippet line JAX's traceback (or the check) points at, ``None`` when
    none is known; ``artefact``: the ``--print`` artefact that shows the error; ``note``: plain
    words on what the exhibit shows instead (e.g. the walk is the eager one).

    ``kind`` ``finding``: no error JAX raised, but a problem the exhibit found (a wrong result,
    or a cost such as review's host-to-device copies) in what JAX computed without complaint
    (transpose: a gradient that disagrees with the finite differences): ``error_class`` names
    the finding (``GradientMismatch``) and ``message`` says what differs. It makes
    ``jaxscope run`` exit 3 all the same."""

    error_class: str
    message: str
    computation: str
    artefact: str
    line: int | None = None
    note: str | None = None
    kind: Literal["error", "finding"] = "error"


ShownErrors = Callable[[Sequence[EventBase]], list[ShownError]]


def unique(errors: Sequence[ShownError]) -> list[ShownError]:
    """``errors`` without repeats (the same computation failing the same way twice)."""
    seen: set[tuple[str, str, str, int | None]] = set()
    out: list[ShownError] = []
    for e in errors:
        key = (e.error_class, e.message, e.computation, e.line)
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out
