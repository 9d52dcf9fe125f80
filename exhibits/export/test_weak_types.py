"""A Python scalar argument's weak type does not survive ``serialize``/``deserialize`` (JAX
writes an aval's shape and dtype only): the round trip says so in its note instead of calling
the deserialized fields different (before: ``same_fields`` false, 'deserialized fields
differ', for every export with a Python scalar argument)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import export

from exhibits.conftest import Runner

from .events import ExportRoundTripped

SOURCE = """import jax.numpy as jnp
import numpy as np


def f(x, s):
    return jnp.tanh(x) * s, s * 2


args = (np.linspace(-1, 1, 24, dtype=np.float32).reshape(3, 8), 3.0)
shapes = ["(b, 8)", None]
"""


def _f(x: Any, s: Any) -> Any:
    return jnp.tanh(x) * s, s * 2


def test_lost_weak_types_are_a_note_not_a_difference(probe_runner: Runner) -> None:
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(3, 8)
    (spec,) = export.symbolic_args_specs((x,), ("(b, 8)",))
    exp = export.export(jax.jit(_f))(spec, 3.0)
    back = export.deserialize(exp.serialize())
    # the truth, from JAX: weak before, strong after, and nothing else differs
    assert [a.weak_type for a in exp.in_avals] == [False, True]
    assert [a.weak_type for a in exp.out_avals] == [False, True]
    assert not any(a.weak_type for a in (*back.in_avals, *back.out_avals))
    assert [str(a.update(weak_type=False)) for a in exp.in_avals] == [str(a) for a in back.in_avals]  # type: ignore[no-untyped-call]
    (rt,) = [e for e in probe_runner("export", SOURCE).events if isinstance(e, ExportRoundTripped)]
    assert rt.same_fields is True
    assert rt.note == (
        "the deserialized export's avals are strongly typed where the original's were weak: "
        "args[1] (~float32[]), out[1] (~float32[]) (a serialized aval keeps its shape and dtype "
        "only)"
    )
    assert all(c.equal for c in rt.calls if not c.constraint_check)
